"""v1 API authentication: bearer tokens (`Authorization: Bearer lf_...`) and the pixel's public tracking key."""

from typing import TYPE_CHECKING

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from workspaces.models import ApiToken, Workspace
from workspaces.tokens import api_token_authenticate

if TYPE_CHECKING:  # for hints only: rest_framework.views imports this module (DEFAULT_AUTHENTICATION_CLASSES)
    from rest_framework.views import APIView


class BearerTokenAuthentication(BaseAuthentication):
    """Returns `(AnonymousUser(), ApiToken)`; views read the workspace from `request.auth.workspace`."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, ApiToken] | None:
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

    def authenticate_header(self, request: Request) -> str:
        # Without a WWW-Authenticate value DRF turns every 401 into a 403.
        return "Bearer"


class HasWorkspaceToken(BasePermission):
    """A workspace's token, allowed the scope the view names for its action in `required_scopes`; 403 `forbidden`
    otherwise. A test token's requests are the views' business: each keeps test data apart (docs/api.md)."""

    def has_permission(self, request: Request, view: "APIView") -> bool:
        if not isinstance(request.auth, ApiToken):
            return False
        scope = getattr(view, "required_scopes", {}).get(getattr(view, "action", None))
        if scope is not None and not request.auth.allows(scope):
            raise PermissionDenied()
        return True


def tracking_key_authenticate(key: object) -> Workspace | None:
    """The workspace whose public tracking key this is, or None. The key is public: no secret to compare."""
    # tracking_key is a CharField: its max_length is set (the stubs type it int | None).
    if not isinstance(key, str) or not key or len(key) > Workspace._meta.get_field("tracking_key").max_length:  # type: ignore[operator]
        return None
    return Workspace.objects.filter(tracking_key=key).first()


class TrackingKeyAuthentication(BaseAuthentication):
    """The browser endpoint's key: header `X-Tracking-Key` or body field `key`; `request.auth` is the Workspace.

    The key is public (it sits in every page carrying the pixel), so it only ever records leads.
    """

    def authenticate(self, request: Request) -> tuple[AnonymousUser, Workspace] | None:
        if request.method == "OPTIONS":  # a CORS preflight carries no key
            return None
        key = request.META.get("HTTP_X_TRACKING_KEY")
        if key is None:
            key = request.data.get("key")  # parses the body: 400 or 415 come first
            if key is None:
                return None
        workspace = tracking_key_authenticate(key)
        if workspace is None:
            raise AuthenticationFailed()
        return AnonymousUser(), workspace

    def authenticate_header(self, request: Request) -> str:
        return "Tracking-Key"


class HasTrackingKey(BasePermission):
    def has_permission(self, request: Request, view: "APIView") -> bool:
        return request.method == "OPTIONS" or isinstance(request.auth, Workspace)
