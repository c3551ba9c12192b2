"""Connections: connect a provider, paste or rotate its signing secret (with an overlap), list, disconnect."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from lftrack.errors import NotFound, Unprocessable
from payments.models import Connection
from webhooks.secrets import secret_open, secret_seal
from workspaces.models import Workspace

NAME_MAX = 200
SECRET_MAX = 200
OVERLAP_MAX_HOURS = 72
# Stripe's roll keeps the old secret signing for up to 24 hours: ours accepts it as long by default.
DEFAULT_OVERLAP_HOURS = 24


@dataclass(frozen=True)
class Connected:
    connection: Connection
    url: str


def connection_url(connection: Connection) -> str:
    """The absolute address to paste into the provider's dashboard."""
    return settings.PUBLIC_BASE_URL + reverse("payment-hook", args=[connection.url_token])


def _secret_check(secret: str) -> str:
    secret = (secret or "").strip()
    if not secret:
        raise Unprocessable("signing secret is required")
    if len(secret) > SECRET_MAX or not all("!" <= char <= "~" for char in secret):
        raise Unprocessable("a signing secret is printable ASCII without spaces, as the provider shows it")
    return secret


@transaction.atomic
def connection_create(*, workspace: Workspace, provider: str, signing_secret: str = "", name: str = "") -> Connected:
    """A new connection with an address of its own. The signing secret may come later (Stripe shows it only once
    the address is registered); until then every delivery is refused."""
    if provider not in Connection.Provider.values:
        raise Unprocessable(f"unknown provider: {provider}"[:200])
    if len(name) > NAME_MAX:
        raise Unprocessable("name is too long")
    sealed = secret_seal(_secret_check(signing_secret)) if signing_secret else ""
    connection = Connection.objects.create(workspace=workspace, provider=provider, name=name, secret=sealed)
    return Connected(connection, connection_url(connection))


@transaction.atomic
def connection_secret_set(
    *, connection: Connection, signing_secret: str, overlap_hours: int | None = None
) -> Connection:
    """Take the provider's new signing secret; the previous one still verifies for `overlap_hours` (default 24,
    as long as Stripe's roll signs with both; 0 retires it at once, for a leaked secret)."""
    secret = _secret_check(signing_secret)
    if overlap_hours is None:
        overlap_hours = DEFAULT_OVERLAP_HOURS
    if not 0 <= overlap_hours <= OVERLAP_MAX_HOURS:
        raise Unprocessable(f"overlap_hours must be 0 to {OVERLAP_MAX_HOURS}")
    connection = Connection.objects.select_for_update().get(pk=connection.pk)
    keep = bool(connection.secret) and overlap_hours > 0
    connection.previous_secret = connection.secret if keep else ""
    connection.previous_secret_expires_at = timezone.now() + timedelta(hours=overlap_hours) if keep else None
    connection.secret = secret_seal(secret)
    connection.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
    return connection


def connection_secrets(connection: Connection) -> list[str]:
    """The secrets that verify a delivery now: the current one, and the previous one during its overlap."""
    found = [secret_open(connection.secret)] if connection.secret else []
    expires = connection.previous_secret_expires_at
    if connection.previous_secret and expires is not None and expires > timezone.now():
        found.append(secret_open(connection.previous_secret))
    return found


@transaction.atomic
def connection_disconnect(*, connection: Connection) -> Connection:
    """No delivery is taken from now on (404); its log and references are kept."""
    connection = Connection.objects.select_for_update().get(pk=connection.pk)
    if connection.disconnected_at is None:
        connection.disconnected_at = timezone.now()
        connection.save(update_fields=["disconnected_at"])
    return connection


def connection_get(*, workspace: Workspace, connection_id: object) -> Connection:
    """The workspace's connection by id; another workspace's is unknown."""
    try:
        pk = int(str(connection_id))
    except ValueError:
        raise NotFound("unknown connection") from None
    connection = Connection.objects.filter(workspace=workspace, pk=pk).first()
    if connection is None:
        raise NotFound("unknown connection")
    return connection


def connection_out(connection: Connection) -> dict:
    """What the CLI prints of a connection: never its secret."""
    return {
        "id": connection.pk,
        "provider": connection.provider,
        "name": connection.name,
        "url": connection_url(connection),
        "has_secret": bool(connection.secret),
        "connected": connection.disconnected_at is None,
        "created_at": connection.created_at.isoformat().replace("+00:00", "Z"),
    }
