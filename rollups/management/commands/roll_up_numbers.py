"""`manage.py roll_up_numbers [--rebuild]`: add new clicks, events and campaign leads into the admin's totals."""

import json

from django.core.management.base import BaseCommand, CommandError

from lftrack.db import lift_timeouts
from rollups.services import WRITER_WAIT_SECONDS, numbers_rebuild, numbers_roll_up


class Command(BaseCommand):
    help = (
        "Add clicks, conversion events and campaign leads above each watermark into the per-link and "
        "per-campaign totals (run every minute; runs may overlap). Prints {table: watermark}, null for a "
        "table skipped because a writer stayed open. --rebuild recounts everything from zero."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--rebuild", action="store_true", help="drop the totals and recount every row")
        parser.add_argument(
            "--wait",
            type=float,
            default=WRITER_WAIT_SECONDS,
            help="seconds to wait for open inserts below the newest row before skipping a table",
        )

    def handle(self, *args, rebuild: bool, wait: float, **options) -> None:
        if not 0 <= wait <= 600:
            raise CommandError("--wait must be between 0 and 600 seconds")
        lift_timeouts()  # a rebuild counts every row; the web's statement deadline is not for it
        result = numbers_rebuild(wait_seconds=wait) if rebuild else numbers_roll_up(wait_seconds=wait)
        self.stdout.write(json.dumps(result))
