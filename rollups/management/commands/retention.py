"""`manage.py retention purge [--batch-size N] [--seconds S]`: what the worker's `rollups.retention_purge` job does,
by hand (docs/privacy.md, "Retention")."""

from django.core.management.base import CommandError

from lftrack.cli import JsonCommand
from lftrack.db import lift_timeouts
from rollups.retention import BATCH_SIZE, retention_run


class Command(JsonCommand):
    help = "Purge clicks and conversions past each workspace's retention window; the roll-ups keep their numbers."

    def add_actions(self, sub) -> None:
        purge = sub.add_parser("purge", help="Passes of a batch per workspace until done or --seconds are up.")
        purge.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="clicks per workspace and pass")
        purge.add_argument("--seconds", type=float, default=3600.0, help="stop after this long (a pass is finished)")

    def do_purge(self, *, batch_size: int, seconds: float, **_) -> dict:
        if not 1 <= batch_size <= 100_000:
            raise CommandError("--batch-size must be 1 to 100000")
        lift_timeouts()  # a long purge by hand: the web's statement deadline is not for it
        return retention_run(seconds=seconds, limit=batch_size)
