"""The outbox: `event_emit` writes an event in the caller's transaction; `events_dispatch` queues its deliveries.

An event is written only when an enabled endpoint of the workspace (of the same mode, live or test)
wants its type, in the same transaction as the change it reports, together with a `webhooks.dispatch`
job on the task engine (procrastinate queues through the same connection): a change that rolls back
leaves neither, a change that commits leaves both. The worker then dispatches the workspace's events
in batches, each in one transaction: their objects built as the read API shows them (and kept: every
attempt and replay sends the same body), one Delivery row per endpoint that wants an event, one
sending job per endpoint and batch. The request pays
two statements per event, and nothing but the building of those rows happens on its thread: building
the object and the deliveries right after the commit cost 8 ms of CPU per conversion in the request
(docs/benchmarks.md, "What the outbox costs a conversion").

The redirect, a conversion and a new customer write their event (`click.created`, `lead.created`,
`sale.created`, `customer.created`) in the statement that writes the click, the conversion or the customer
(`emitted_sql`), then queue the dispatch. The redirect
writes in autocommit: a process that dies between the two leaves the event undispatched, and the
periodic sweeper (`events_dispatch_pending`) dispatches it.
"""

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone
from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector
from procrastinate.manager import JobManager

from lftrack.db import prepared_cursor, sql_cursor
from lftrack.fairshare import waiting_workspaces_sql
from webhooks.events import EVENT_TYPES
from webhooks.models import Delivery, Endpoint, Event
from webhooks.payloads import payload_build

logger = logging.getLogger("lftrack.webhooks")

DELIVER_TASK = "webhooks.deliver"
DELIVER_BATCH_TASK = "webhooks.deliver_batch"
DISPATCH_TASK = "webhooks.dispatch"
QUEUE = "webhooks"
# The sweeper leaves younger events to their dispatch job (queued with them; a backlog may delay it).
SWEEP_GRACE = timedelta(minutes=10)
# Jobs are always queued through Django's connection, so inside the caller's transaction: the worker
# process swaps the app's connector for one of its own, whose inserts would commit on their own and
# could run a job before the delivery it names is committed.
_jobs = JobManager(DjangoConnector())

EVENT_TABLE = Event._meta.db_table
_ENDPOINT = Endpoint._meta.db_table
_DELIVERY = Delivery._meta.db_table


# The columns an event is written with, in the order emitted_sql writes them; the others are the dispatch's.
EVENT_COLUMNS = ("workspace_id", "type", "test", "subject_id", "customer_id", "detail", "created_at")


def emitted_sql(
    *,
    rows: str | None,
    workspace_id: str,
    type: str,
    test: str,
    subject_id: str,
    customer_id: str = "NULL",
    detail: str = "'{}'",
    created_at: str = "now()",
) -> str:
    """An INSERT of an event for each row of `rows` (a CTE of the caller's statement; None: one event, from
    parameters) that some enabled endpoint of the workspace, of the mode, wants, RETURNING the event's id and
    workspace id. A statement that writes its events itself spends no round trip of their own (the redirect's
    clicks, a conversion, a new customer).

    Each keyword argument is named after a column of EVENT_COLUMNS and is the SQL expression (over `rows`, or a
    parameter) that fills it: `type="'click.created'"`, `subject_id="click.id"`. The one place that writes an event's
    SQL."""
    values = {
        "workspace_id": workspace_id,
        "type": type,
        "test": test,
        "subject_id": subject_id,
        "customer_id": customer_id,
        "detail": detail,
        "created_at": created_at,
    }
    source = "" if rows is None else f" FROM {rows}"
    wanted = (
        f"EXISTS (SELECT 1 FROM {_ENDPOINT} e WHERE e.workspace_id = {workspace_id} AND e.enabled"
        f" AND e.test = {test} AND {type} = ANY(e.event_types))"
    )
    return (
        f"INSERT INTO {EVENT_TABLE} ({', '.join(EVENT_COLUMNS)})"
        f" SELECT {', '.join(values[column] for column in EVENT_COLUMNS)}{source}"
        f" WHERE {wanted} RETURNING id, workspace_id"
    )


# event_emit's statement: one named parameter per column, cast as the column is.
_EMIT_CASTS = {
    "workspace_id": "bigint",
    "type": "text",
    "test": "boolean",
    "subject_id": "bigint",
    "customer_id": "bigint",
    "detail": "jsonb",
    "created_at": "timestamptz",
}
_EMIT_SQL = emitted_sql(rows=None, **{column: f"%({column})s::{_EMIT_CASTS[column]}" for column in EVENT_COLUMNS})


def event_emit(
    *,
    workspace_id: int,
    type: str,
    subject_id: int,
    customer_id: int | None = None,
    detail: dict[str, Any] | None = None,
    test: bool = False,
) -> int | None:
    """Record that `type` happened to the object `subject_id`, in the caller's transaction: the event id,
    or None when no endpoint of the workspace wants it (then nothing is written).

    `customer_id` orders the deliveries of one customer's events; `detail` carries what the object
    alone cannot say (who an external id moved from). A test-mode change passes `test=True`: it reaches
    test endpoints only, never live ones. One statement, prepared once per connection.
    """
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type: {type}")
    with prepared_cursor() as cursor:
        cursor.execute(
            _EMIT_SQL,
            {
                "workspace_id": workspace_id,
                "type": type,
                "test": test,
                "subject_id": subject_id,
                "customer_id": customer_id,
                "detail": json.dumps(detail or {}),
                "created_at": timezone.now(),
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    event_queue(event_id=row.id, workspace_id=workspace_id, customer_id=customer_id)
    return row.id


def event_queue(*, event_id: int, workspace_id: int, customer_id: int | None) -> None:
    """Queue the event's dispatch, in the caller's transaction (`customer_id`: kept for the callers; the
    order is the workspace's, which keeps each customer's)."""
    events_queue([(event_id, workspace_id, customer_id)])


def events_queue(events: list[tuple[int, int, int | None]]) -> None:
    """A dispatch job for each (event id, workspace id, customer id), in one statement (the redirect's batches).

    A workspace's dispatch jobs run one at a time (their lock), and the first to run dispatches every
    event of the workspace committed by then, in event order, and drops the waiting jobs of the events it
    dispatched (`events_dispatch`): one job's start and finish for a burst of events, not one per event.
    An event still uncommitted when a job looks keeps its own job, so none is left behind."""
    _jobs.batch_defer_jobs(
        [
            app.configure_task(DISPATCH_TASK, queue=QUEUE, lock=dispatch_lock(workspace_id)).make_new_job(
                event_id=event_id, workspace_id=workspace_id
            )
            for event_id, workspace_id, _ in events
        ]
    )


def dispatch_lock(workspace_id: int) -> str:
    return f"webhooks:dispatch:{workspace_id}"


# The waiting (todo) dispatch jobs of events just dispatched: deleted, through the engine's own function.
_DISPATCH_JOBS_DROP_SQL = """SELECT procrastinate_cancel_job_v1(id, false, true) FROM procrastinate_jobs
    WHERE status = 'todo' AND task_name = %(task)s AND (args->>'event_id')::bigint = ANY(%(ids)s)"""
# One delivery per endpoint that wants each event, in event order; the events marked dispatched.
_DELIVERIES_SQL = f"""INSERT INTO {_DELIVERY} (workspace_id, event_id, endpoint_id, state, attempts, queued_at)
    SELECT ev.workspace_id, ev.id, e.id, 'pending', 0, %(now)s FROM {EVENT_TABLE} ev
    JOIN {_ENDPOINT} e ON e.workspace_id = ev.workspace_id AND e.enabled AND e.test = ev.test
        AND ev.type = ANY(e.event_types)
    WHERE ev.id = ANY(%(ids)s) ORDER BY ev.id, e.id
    ON CONFLICT (event_id, endpoint_id) DO NOTHING RETURNING id, endpoint_id"""
_DISPATCHED_SQL = f"""UPDATE {EVENT_TABLE} SET dispatched_at = %(now)s WHERE id = ANY(%(ids)s)"""


_UNDISPATCHED = "e.dispatched_at IS NULL"
# The workspaces with an event left undispatched past the grace: a skip scan of webhooks_event_undispatched
# (workspace_id, id) gives each one's oldest undispatched event, one probe per workspace.
_STALE_WORKSPACES_SQL = f"""
    WITH RECURSIVE waiting (workspace_id, id) AS (
        {waiting_workspaces_sql(table=EVENT_TABLE, condition=_UNDISPATCHED, first="id")}
    )
    SELECT w.workspace_id FROM waiting w JOIN {EVENT_TABLE} ev ON ev.id = w.id WHERE ev.created_at < %(before)s
"""


def events_dispatch(
    *,
    workspace_id: int | None = None,
    event_ids: list[int] | None = None,
    before: datetime | None = None,
    limit: int = 500,
    poisoned: set[int] | None = None,
) -> int:
    """Create the deliveries of undispatched events (these, the workspace's, those created before `before`),
    queue their sending, and drop the dispatch jobs still waiting for them; returns how many events were
    dispatched (at most `limit`). Concurrent callers take disjoint events (SKIP LOCKED); an event is
    dispatched once.

    An event whose object cannot be built (a type this version no longer knows, a builder that raises) is
    poisoned: logged (one line: ids, type, the error's class) and left undispatched, and the others of
    the batch go on. Its id is added to `poisoned`, whose events are not taken again: a caller going
    through a backlog in batches passes the same set to each, and logs each poisoned event once.

    Each endpoint gets one `webhooks.deliver_batch` job for its deliveries of the batch, locked per
    endpoint: they are sent in event order (webhooks/delivery.py, `deliveries_send`)."""
    poisoned = set() if poisoned is None else poisoned
    with transaction.atomic():
        events = Event.objects.select_for_update(skip_locked=True).filter(dispatched_at__isnull=True)
        if event_ids is not None:
            events = events.filter(pk__in=event_ids)
        if workspace_id is not None:
            events = events.filter(workspace_id=workspace_id)
        if before is not None:
            events = events.filter(created_at__lt=before)
        if poisoned:
            events = events.exclude(pk__in=poisoned)
        events = list(events.order_by("pk")[:limit])
        built = []
        for event in events:  # the object as the read API shows it right after the change committed
            try:
                event.data = payload_build(event)
            except DatabaseError:  # the transaction is lost: the job is tried again
                raise
            except Exception as exc:
                poisoned.add(event.pk)
                logger.warning(
                    "webhook event not dispatched",
                    extra={
                        "event_id": event.pk,
                        "workspace_id": event.workspace_id,
                        "event_type": event.type,
                        "error": type(exc).__name__,
                    },
                )
                continue
            built.append(event)
        if not built:
            return 0
        Event.objects.bulk_update(built, ["data"])
        ids = [event.pk for event in built]
        now = timezone.now()
        with sql_cursor() as cursor:
            cursor.execute(_DELIVERIES_SQL, {"now": now, "ids": ids})
            rows = sorted(cursor.fetchall())  # delivery ids follow event order: they are sent in it
            cursor.execute(_DISPATCHED_SQL, {"now": now, "ids": ids})
            cursor.execute(_DISPATCH_JOBS_DROP_SQL, {"task": DISPATCH_TASK, "ids": ids})
        batches: dict[int, list[int]] = {}
        for row in rows:
            batches.setdefault(row.endpoint_id, []).append(row.id)
        if batches:
            _jobs.batch_defer_jobs(
                [
                    app.configure_task(DELIVER_BATCH_TASK, queue=QUEUE, lock=f"webhooks:{endpoint_id}").make_new_job(
                        endpoint_id=endpoint_id, delivery_ids=delivery_ids
                    )
                    for endpoint_id, delivery_ids in batches.items()
                ]
            )
    return len(ids)


def events_dispatch_pending() -> int:
    """The sweeper: dispatch events whose dispatch after commit never ran (the process died); how many.

    Workspace by workspace, a batch of each in turn, so that one workspace's pile of them (or its poisoned
    event) never holds back another's."""
    before = timezone.now() - SWEEP_GRACE
    total, poisoned = 0, set()
    while True:
        with sql_cursor() as cursor:
            cursor.execute(_STALE_WORKSPACES_SQL, {"before": before})
            workspaces = [row.workspace_id for row in cursor.fetchall()]
        dispatched = sum(
            events_dispatch(workspace_id=workspace_id, before=before, poisoned=poisoned) for workspace_id in workspaces
        )
        total += dispatched
        if dispatched == 0:
            return total


def delivery_lock(endpoint_id: int, customer_id: int | None) -> str | None:
    """The engine runs jobs sharing a lock one at a time, in the order they were queued: one customer's
    deliveries to an endpoint that left their batch (a retry, a replay, one waiting behind a retry) go in
    order, a retrying one holding back the later ones; other customers' (and those of none) go on."""
    return None if customer_id is None else f"webhooks:{endpoint_id}:{customer_id}"


def deliveries_queue(deliveries: list[tuple[int, int, int | None]], *, at: dict[int, datetime] | None = None) -> None:
    """One job per (delivery id, endpoint id, customer id), in one statement, in the caller's transaction;
    `at`: when to run, per delivery id (a retry), else now."""
    if not deliveries:
        return
    at = at or {}
    jobs = [
        app.configure_task(
            DELIVER_TASK, queue=QUEUE, lock=delivery_lock(endpoint_id, customer_id), schedule_at=at.get(delivery_id)
        ).make_new_job(delivery_id=delivery_id)
        for delivery_id, endpoint_id, customer_id in deliveries
    ]
    _jobs.batch_defer_jobs(jobs)
