"""`manage.py send_due_emails [--once]`: the sequence sender (campaigns/sending.py), as a worker or one pass."""

import json
import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from campaigns.checks import sending_problems
from campaigns.sending import BATCH_SIZE, run_pass, sender_run


class Command(BaseCommand):
    help = (
        "Mail due sequence emails. Runs until SIGTERM or SIGINT (the batch in hand is finished, exit 0), "
        'or one pass with --once. Prints {"sent", "deferred", "skipped"}: of the pass, or the totals at exit.'
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--once", action="store_true", help="run one pass and exit")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="enrollments claimed per transaction")
        parser.add_argument("--sleep", type=float, default=1.0, help="seconds to wait when nothing was due")

    def handle(self, *args, once: bool, batch_size: int, sleep: float, **options) -> None:
        if not 1 <= batch_size <= 10_000:
            raise CommandError("--batch-size must be between 1 and 10000")
        if not 0 < sleep <= 3600:
            raise CommandError("--sleep must be above 0 and at most 3600 seconds")
        problems = sending_problems()
        if problems:
            raise CommandError(problems[0][1])  # one line, naming the variable
        if once:
            result = run_pass(batch_size=batch_size)
        else:
            stop = threading.Event()
            previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
            try:
                result = sender_run(stop=stop, batch_size=batch_size, idle_seconds=sleep)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        self.stdout.write(json.dumps(result.counts()))
