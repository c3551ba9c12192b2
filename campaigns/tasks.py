"""Campaign housekeeping on the task engine: unconfirmed double opt-in enrollments expire even with no sender running."""

from django.utils import timezone
from procrastinate.contrib.django import app

from campaigns.confirmation import pending_enrollments_expire


@app.periodic(cron="*/10 * * * *")
@app.task(name="campaigns.expire_pending", queueing_lock="campaigns.expire_pending")
def expire_pending(timestamp: int) -> int:
    return pending_enrollments_expire(now=timezone.now())
