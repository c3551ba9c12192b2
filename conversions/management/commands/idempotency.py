"""`manage.py idempotency purge`: delete Idempotency-Key records past their 24 hours (run it from cron)."""

from conversions.services import idempotency_keys_purge
from lftrack.cli import JsonCommand


class Command(JsonCommand):
    help = "Maintain the stored answers of requests sent with an Idempotency-Key."

    def add_actions(self, sub) -> None:
        sub.add_parser("purge", help="Delete keys older than 24 hours; they no longer replay anyway.")

    def do_purge(self, **_) -> dict:
        return {"purged": idempotency_keys_purge()}
