"""The webhooks' jobs on the task engine: deliveries, the outbox sweeper, stalled jobs, retention."""

import logging
import random
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from procrastinate import JobContext, RetryDecision
from procrastinate.contrib.django import app
from procrastinate.jobs import Job
from procrastinate.manager import JobManager
from procrastinate.retry import BaseRetryStrategy

from webhooks.delivery import SlotsTaken, deliveries_send, delivery_attempt
from webhooks.models import Event
from webhooks.outbox import (
    DELIVER_BATCH_TASK,
    DELIVER_TASK,
    DISPATCH_TASK,
    QUEUE,
    event_queue,
    events_dispatch,
    events_dispatch_pending,
)

logger = logging.getLogger("lftrack.webhooks")
STALLED_SECONDS = 30.0
# A dispatch job starts no batch past this many seconds: a new job of the workspace takes the rest, behind
# the jobs queued meanwhile, so a workspace's backlog holds one worker slot at a time, this long at most.
DISPATCH_BUDGET_SECONDS = 30.0
# A delivery job that finds its workspace's slots taken waits 1 s, then twice as long each time, up to this:
# a backlog waiting for its workspace's slots costs the worker a fetch per job every few seconds, not a slot.
SLOT_WAIT_MAX_SECONDS = 8


class RetryAt(Exception):
    """Raised by a delivery that must be tried again at `at` (webhooks/delivery.py decides when)."""

    def __init__(self, at: datetime):
        super().__init__(at.isoformat())
        self.at = at


class DeliveryRetry(BaseRetryStrategy):
    """The engine re-runs the same job at the time the delivery chose; the job keeps its place (and its
    lock) in the queue, so the customer's later events wait behind it. Any other error (the database
    gone, a bug) is retried a minute later, and the delivery itself is untouched by it, for the retry
    window at most: then the job fails, and the engine logs it with its traceback."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, RetryAt):
            return RetryDecision(retry_at=exception.at)
        if isinstance(exception, SlotsTaken):  # its workspace sends on all its slots: later, doubling, jittered
            wait = min(SLOT_WAIT_MAX_SECONDS, 2**job.attempts) * random.uniform(0.5, 1)
            return RetryDecision(retry_in={"seconds": wait})
        # One line per failure: the engine logs a retried job at INFO only, which production does not show.
        logger.warning(
            "webhook job failed",
            extra={
                "task": job.task_name,
                "job_id": job.id,
                "attempt": job.attempts + 1,
                "error": type(exception).__name__,
            },
        )
        if (job.attempts + 1) * 60 >= settings.WEBHOOK_RETRY_WINDOW_HOURS * 3600:
            return None
        return RetryDecision(retry_in={"seconds": 60})


@app.task(name=DELIVER_TASK, queue=QUEUE, retry=DeliveryRetry())
def deliver(delivery_id: int) -> None:
    retry_at = delivery_attempt(delivery_id=delivery_id)
    if retry_at is not None:
        raise RetryAt(retry_at)


@app.task(name=DELIVER_BATCH_TASK, queue=QUEUE, retry=DeliveryRetry())
def deliver_batch(endpoint_id: int, delivery_ids: list[int]) -> None:
    """One dispatch's deliveries to one endpoint, in order (webhooks/delivery.py, `deliveries_send`)."""
    deliveries_send(endpoint_id=endpoint_id, delivery_ids=delivery_ids)


@app.task(name=DISPATCH_TASK, queue=QUEUE, retry=DeliveryRetry())
def dispatch(event_id: int, workspace_id: int | None = None) -> None:
    """Dispatch every event of the workspace committed by now, this one among them, in batches: each
    event's object, one delivery per endpoint that wants it, one sending job per endpoint and batch.
    Past DISPATCH_BUDGET_SECONDS, a new job of the workspace takes over (behind others' jobs)."""
    if workspace_id is None:  # a job queued before dispatches went by workspace
        workspace_id = Event.objects.filter(pk=event_id).values_list("workspace_id", flat=True).first()
    deadline = time.monotonic() + DISPATCH_BUDGET_SECONDS
    poisoned: set[int] = set()  # logged once by this job, then skipped
    while workspace_id is not None and events_dispatch(workspace_id=workspace_id, poisoned=poisoned):
        if time.monotonic() >= deadline:
            event_queue(event_id=event_id, workspace_id=workspace_id, customer_id=None)
            return


@app.periodic(cron="* * * * *")
@app.task(name="webhooks.sweep", queue=QUEUE, queueing_lock="webhooks.sweep")
def sweep(timestamp: int) -> int:
    """Dispatch events left undispatched (a redirect's process died between its click and its dispatch job)."""
    return events_dispatch_pending()


async def stalled_jobs_retry(job_manager: JobManager, *, seconds: float) -> int:
    """Queue again the jobs of workers whose heartbeat stopped `seconds` ago (killed, the machine gone)."""
    stalled = list(await job_manager.get_stalled_jobs(seconds_since_heartbeat=seconds))
    for job in stalled:
        await job_manager.retry_job(job)
    if stalled:
        logger.warning("retried the jobs of a worker that died", extra={"count": len(stalled)})
    return len(stalled)


@app.periodic(cron="* * * * *")
@app.task(name="tasks.retry_stalled", queueing_lock="tasks.retry_stalled", pass_context=True)
async def retry_stalled(context: JobContext, timestamp: int) -> int:
    """A delivery cut short by its worker's death runs again (at least once: receivers de-duplicate by
    webhook-id). Workers beat every 10 s; 30 s of silence is a dead one."""
    return await stalled_jobs_retry(context.app.job_manager, seconds=STALLED_SECONDS)


@app.periodic(cron="17 3 * * *")
@app.task(name="webhooks.purge", queue=QUEUE, queueing_lock="webhooks.purge")
def purge(timestamp: int) -> int:
    """Events older than WEBHOOK_RETENTION_DAYS go, with their deliveries and log."""
    cutoff = timezone.now() - timedelta(days=settings.WEBHOOK_RETENTION_DAYS)
    deleted, _ = Event.objects.filter(created_at__lt=cutoff).delete()
    return deleted


@app.periodic(cron="41 * * * *")
@app.task(name="tasks.remove_old_jobs", queueing_lock="tasks.remove_old_jobs", pass_context=True)
async def remove_old_jobs(context: JobContext, timestamp: int) -> None:
    """The engine's finished jobs, after a day (failed ones after a week, for a look)."""
    await context.app.job_manager.delete_old_jobs(nb_hours=24)
    await context.app.job_manager.delete_old_jobs(
        nb_hours=24 * 7, include_failed=True, include_cancelled=True, include_aborted=True
    )
