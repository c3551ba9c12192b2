"""`manage.py procrastinate ...`: the task engine's own command (the worker, `defer`, `shell`, ...), whose
few lines of its own ("Launching a worker on all queues", the reason it stops) are logged like every other
line of the process instead of printed as plain text (docs/deployment.md, "Logs")."""

import logging

from procrastinate import cli
from procrastinate.contrib.django.management.commands import procrastinate

logger = logging.getLogger("lftrack.procrastinate")


def _log(*parts) -> None:
    logger.info(" ".join(map(str, parts)))


class Command(procrastinate.Command):
    def handle(self, *args, **options) -> None:
        cli.print_stderr = _log  # the engine's CLI prints through this one function
        try:
            super().handle(*args, **options)
        except SystemExit as stop:
            if stop.code:  # the engine printed why just before; this line says it is an error
                logger.error("procrastinate command failed", extra={"exit_code": stop.code})
            raise
