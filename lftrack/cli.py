"""Shared pieces of the operator CLI: one JSON object on stdout, one-line errors on stderr."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from lftrack.errors import ServiceError


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
