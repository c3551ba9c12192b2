"""Shared pieces of the operator CLI: one JSON object on stdout, one-line errors on stderr."""
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.models import Campaign
from campaigns.services import campaign_get
from lftrack.errors import NotFound, ServiceError
from workspaces.models import Workspace


def workspace_from_arg(slug: str) -> Workspace:
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise CommandError(f"unknown workspace: {slug}")
    return workspace


def campaign_from_arg(workspace: Workspace, slug: str) -> Campaign:
    try:
        return campaign_get(workspace=workspace, slug=slug)
    except NotFound:
        raise CommandError(f"unknown campaign: {slug}") from None


class JsonCommand(BaseCommand):
    """A command with argparse subcommands whose handlers return the object to print."""

    def add_arguments(self, parser) -> None:
        self.add_actions(parser.add_subparsers(dest="action", required=True))

    def add_actions(self, sub) -> None:
        """Add one subparser per action; `do_<action>(**options)` runs it."""
        raise NotImplementedError

    def handle(self, *args, action: str | None = None, **options) -> None:
        handler = getattr(self, "do_" + (action or "").replace("-", "_"))
        try:
            result = handler(**options)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.emit(result)

    def emit(self, obj: Any) -> None:
        self.stdout.write(json.dumps(obj))
