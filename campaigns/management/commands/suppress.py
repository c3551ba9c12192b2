"""`manage.py suppress WORKSPACE EMAIL --reason unsubscribed|bounced|complained` (docs/cli.md, "Campaigns")."""

from django.core.management.base import CommandError

from campaigns.models import Suppression
from campaigns.services import suppression_add
from lftrack.cli import JsonCommand
from lftrack.errors import ServiceError
from workspaces.cli import workspace_from_arg


class Command(JsonCommand):
    help = "Put an address on the workspace's suppression list and stop its enrollments."

    def add_arguments(self, parser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("email")
        parser.add_argument("--reason", required=True, choices=Suppression.Reason.values)

    def handle(self, *args, workspace: str, email: str, reason: str, **options) -> None:
        try:
            suppression = suppression_add(
                workspace=workspace_from_arg(workspace), email=email, reason=reason, channel="manual"
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.emit({"email": suppression.email, "reason": suppression.reason})
