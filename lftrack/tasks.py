"""Django's own housekeeping on the task engine: expired back-office sessions (`clearsessions`), daily."""

from django.contrib.sessions.models import Session
from django.utils import timezone
from procrastinate.contrib.django import app


@app.periodic(cron="23 4 * * *")
@app.task(name="lftrack.clear_sessions", queueing_lock="lftrack.clear_sessions")
def clear_sessions(timestamp: int) -> int:
    deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
    return deleted
