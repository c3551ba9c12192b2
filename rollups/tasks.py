"""The roll-ups on the task engine: every minute, what `manage.py roll_up_numbers` did from cron; and retention's
purge of what they have added up (rollups/retention.py)."""

from django.db import connection
from procrastinate.contrib.django import app

from lftrack.db import lift_timeouts
from rollups.retention import retention_run
from rollups.services import numbers_roll_up


@app.periodic(cron="* * * * *")
@app.task(name="rollups.roll_up", queueing_lock="rollups.roll_up")
def roll_up(timestamp: int) -> dict:
    lift_timeouts()  # its statements may run long by design...
    try:
        return numbers_roll_up()
    finally:
        connection.close()  # ...so the next job of this worker thread gets a connection with the web's deadlines


@app.periodic(cron="*/5 * * * *")
@app.task(name="rollups.retention_purge", queueing_lock="rollups.retention_purge")
def retention_purge(timestamp: int) -> dict:
    """Passes of a batch per workspace, for at most 50 s: a backlog of millions goes over many runs, while
    every workspace gets its batch in each pass (docs/privacy.md, "Retention")."""
    lift_timeouts()
    try:
        return retention_run(seconds=50.0)
    finally:
        connection.close()
