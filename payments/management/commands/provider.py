"""`manage.py provider connect|secret|list|disconnect`: payment provider connections (docs/payments.md)."""

import sys

from django.core.management.base import CommandError

from lftrack.cli import JsonCommand
from payments.connections import (
    connection_create,
    connection_disconnect,
    connection_get,
    connection_out,
    connection_secret_set,
)
from payments.models import Connection
from workspaces.cli import workspace_from_arg


def _secret(signing_secret: str | None, from_stdin: bool) -> str:
    """The secret from the option or, kept out of the process list and the shell's history, from stdin."""
    if from_stdin:
        return sys.stdin.readline().strip()
    return signing_secret or ""


class Command(JsonCommand):
    help = (
        "Connect a payment provider's webhooks to a workspace. The signing secret is stored encrypted, never printed."
    )

    def add_actions(self, sub) -> None:
        connect = sub.add_parser("connect", help="Connect a provider; prints the URL to paste into its dashboard.")
        connect.add_argument("workspace")
        connect.add_argument("provider", choices=Connection.Provider.values)
        connect.add_argument("--name", default="")
        self._secret_options(connect, required=False)
        secret = sub.add_parser("secret", help="Set or rotate a connection's signing secret.")
        secret.add_argument("workspace")
        secret.add_argument("connection_id")
        self._secret_options(secret, required=True)
        secret.add_argument(
            "--overlap-hours", type=int, default=None, help="hours the previous secret still verifies (default 24)"
        )
        listing = sub.add_parser("list", help="The workspace's connections.")
        listing.add_argument("workspace")
        disconnect = sub.add_parser("disconnect", help="Stop taking a connection's deliveries (its log is kept).")
        disconnect.add_argument("workspace")
        disconnect.add_argument("connection_id")

    @staticmethod
    def _secret_options(parser, *, required: bool) -> None:
        group = parser.add_mutually_exclusive_group(required=required)
        group.add_argument("--signing-secret", help="the provider's signing secret (Stripe's whsec_..., Shopify's)")
        group.add_argument("--signing-secret-stdin", action="store_true", help="read the signing secret from stdin")

    def do_connect(self, *, workspace, provider, name, signing_secret, signing_secret_stdin, **_) -> dict:
        connected = connection_create(
            workspace=workspace_from_arg(workspace),
            provider=provider,
            name=name,
            signing_secret=_secret(signing_secret, signing_secret_stdin),
        )
        return connection_out(connected.connection)

    def do_secret(self, *, workspace, connection_id, signing_secret, signing_secret_stdin, overlap_hours, **_) -> dict:
        connection = connection_get(workspace=workspace_from_arg(workspace), connection_id=connection_id)
        secret = _secret(signing_secret, signing_secret_stdin)
        if not secret:
            raise CommandError("signing secret is required")
        connection = connection_secret_set(connection=connection, signing_secret=secret, overlap_hours=overlap_hours)
        out = connection_out(connection)
        out["previous_secret_expires_at"] = (
            connection.previous_secret_expires_at.isoformat().replace("+00:00", "Z")
            if connection.previous_secret_expires_at
            else None
        )
        return out

    def do_list(self, *, workspace, **_) -> dict:
        rows = Connection.objects.filter(workspace=workspace_from_arg(workspace)).order_by("pk")
        return {"connections": [connection_out(c) for c in rows]}

    def do_disconnect(self, *, workspace, connection_id, **_) -> dict:
        connection = connection_get(workspace=workspace_from_arg(workspace), connection_id=connection_id)
        return connection_out(connection_disconnect(connection=connection))
