"""`manage.py version`: the installed release, as `/healthz` reports it (CHANGELOG.md says what each brought)."""

import json

from django.core.management.base import BaseCommand

from lftrack.version import VERSION


class Command(BaseCommand):
    help = 'Print the installed release of lftrack: {"version": "X.Y.Z"} (CHANGELOG.md, its upgrade notes).'

    def handle(self, *args, **options) -> None:
        self.stdout.write(json.dumps({"version": VERSION}))
