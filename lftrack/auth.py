"""Bearer-token authentication for the v1 API: `Authorization: Bearer lf_...` resolves to one workspace."""
from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from workspaces.models import ApiToken
from workspaces.services import api_token_authenticate


class BearerTokenAuthentication(BaseAuthentication):
    """Returns `(AnonymousUser(), ApiToken)`; views read the workspace from `request.auth.workspace`."""

    def authenticate(self, request) -> tuple[AnonymousUser, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer":
            raise AuthenticationFailed()
        token = api_token_authenticate(raw.strip())
        if token is None:
            raise AuthenticationFailed()
        return AnonymousUser(), token

    def authenticate_header(self, request) -> str:
        # Without a WWW-Authenticate value DRF turns every 401 into a 403.
        return "Bearer"


class HasWorkspaceToken(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ApiToken)
