"""The roll-ups on the task engine: every minute, what `manage.py roll_up_numbers` did from cron."""

from django.db import connection
from procrastinate.contrib.django import app

from lftrack.db import lift_timeouts
from rollups.services import numbers_roll_up


@app.periodic(cron="* * * * *")
@app.task(name="rollups.roll_up", queueing_lock="rollups.roll_up")
def roll_up(timestamp: int) -> dict:
    lift_timeouts()  # its statements may run long by design...
    try:
        return numbers_roll_up()
    finally:
        connection.close()  # ...so the next job of this worker thread gets a connection with the web's deadlines
