"""Unsubscribe links (RFC 8058): a signed token names the workspace and the address, verified without a lookup."""

from django.conf import settings
from django.core import signing
from django.urls import reverse

from campaigns.models import Suppression
from campaigns.services import suppression_add
from lftrack.errors import BadRequest
from workspaces.models import Workspace

# A dedicated salt: no other signed value of the project (sessions, password resets) is a valid token.
_SALT = "lftrack.campaigns.unsubscribe"
_MAX_TOKEN_LENGTH = 1024  # an address is at most 254 characters; anything far longer is not ours
INVALID_LINK = "invalid unsubscribe link"


def _signer() -> signing.Signer:
    return signing.Signer(salt=_SALT)


def unsubscribe_token(*, workspace_id: int, email: str) -> str:
    """HMAC-signed with SECRET_KEY, so unguessable and unforgeable; it never expires (old emails keep working)."""
    return _signer().sign_object([workspace_id, email])


def unsubscribe_url(*, workspace_id: int, email: str) -> str:
    """The absolute link for List-Unsubscribe and the email's footer, on PUBLIC_BASE_URL."""
    return settings.PUBLIC_BASE_URL + reverse(
        "unsubscribe", args=[unsubscribe_token(workspace_id=workspace_id, email=email)]
    )


def unsubscribe_token_read(*, token: str) -> tuple[int, str]:
    """(workspace id, address) from a token; tampered, truncated or foreign tokens raise BadRequest."""
    if not token or len(token) > _MAX_TOKEN_LENGTH:
        raise BadRequest(INVALID_LINK)
    try:
        payload = _signer().unsign_object(token)
    except (signing.BadSignature, ValueError):
        raise BadRequest(INVALID_LINK) from None
    match payload:
        case [int() as workspace_id, str() as email] if (
            not isinstance(workspace_id, bool) and workspace_id > 0 and email
        ):
            return workspace_id, email
    raise BadRequest(INVALID_LINK)


def unsubscribe_target(*, token: str) -> tuple[Workspace, str]:
    """The workspace and address a token is for; a workspace deleted since is as invalid as a bad signature."""
    workspace_id, email = unsubscribe_token_read(token=token)
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        raise BadRequest(INVALID_LINK)
    return workspace, email


def unsubscribe(*, workspace: Workspace, email: str) -> Suppression:
    """Suppress the address in the workspace and stop its active enrollments; repeating it changes nothing."""
    return suppression_add(workspace=workspace, email=email, reason=Suppression.Reason.UNSUBSCRIBED, channel="email")
