"""The payment connections' delivery log past its retention, deleted daily on the task engine."""

from procrastinate.contrib.django import app

from payments.services import deliveries_purge


@app.periodic(cron="29 3 * * *")
@app.task(name="payments.purge", queueing_lock="payments.purge")
def purge(timestamp: int) -> int:
    return deliveries_purge()
