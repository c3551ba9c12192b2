"""Broadcasts: a one-off email to a segment, written, scheduled, started (its recipients fixed), paused, resumed, cancelled."""

import logging
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Count, Q, Value
from django.utils import timezone

from campaigns.models import Broadcast, BroadcastRecipient, Segment
from campaigns.segments import segment_contacts
from campaigns.steps import step_content
from lftrack.errors import Unprocessable
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.sender")

Status = Broadcast.Status
Recipient = BroadcastRecipient.Status
# Written and changed until it starts; afterwards its recipients have it as it was.
EDITABLE = (Status.DRAFT, Status.SCHEDULED)


@transaction.atomic
def broadcast_save(
    *,
    workspace: Workspace,
    segment: Segment,
    name: str,
    subject: str,
    body: str = "",
    markdown: str = "",
    broadcast: Broadcast | None = None,
) -> Broadcast:
    """Create a draft, or change one not started yet: its content checked and rendered as a step's
    (campaigns/steps.py: the same Markdown, sanitizer and plain-text part)."""
    if segment.workspace_id != workspace.pk:
        raise Unprocessable("unknown segment")
    name, subject = name.strip(), subject.strip()
    if not name:
        raise Unprocessable("name is required")
    if len(name) > 200:
        raise Unprocessable("name is too long")
    if not subject:
        raise Unprocessable("subject is required")
    if len(subject) > 255:
        raise Unprocessable("subject is too long")
    content = step_content(body=body, markdown=markdown)
    if broadcast is None:
        return Broadcast.objects.create(workspace=workspace, segment=segment, name=name, subject=subject, **content)
    locked = Broadcast.objects.select_for_update().get(pk=broadcast.pk)
    if locked.status not in EDITABLE:
        raise Unprocessable("a broadcast that started cannot be changed")
    for field, value in {"segment": segment, "name": name, "subject": subject, **content}.items():
        setattr(locked, field, value)
    locked.save(update_fields=["segment", "name", "subject", "body", "markdown", "html"])
    return locked


@transaction.atomic
def broadcast_schedule(*, broadcast: Broadcast, at: datetime | None = None) -> Broadcast:
    """Schedule it at `at`, or now ("send now"): the sender starts it at its next pass on or after that time."""
    locked = Broadcast.objects.select_for_update().get(pk=broadcast.pk)
    if locked.status not in EDITABLE:
        raise Unprocessable("the broadcast has started")
    locked.status, locked.scheduled_at = Status.SCHEDULED, at or timezone.now()
    locked.save(update_fields=["status", "scheduled_at"])
    return locked


_RECIPIENT_COLUMNS = ("workspace_id", "broadcast_id", "customer_id", "status", "to_email", "message_id", "error")


def start_sql(*, broadcast: Broadcast) -> tuple[str, tuple]:
    """The statement fixing a broadcast's recipients and its parameters: one INSERT ... SELECT whose SELECT is the
    segment's query as the ORM compiles it (campaigns/segments.py), every value one of its parameters.

    One statement, so one snapshot: a contact added while it runs is not among them. Inserting 100,000 rows
    through bulk_create held the sender's pass for 13.6 s under a load of 7, this takes a few seconds at most
    (docs/benchmarks.md, "Broadcast sending"). The unique (broadcast, customer) keeps each contact once.
    """
    contacts = (
        segment_contacts(workspace_id=broadcast.workspace_id, filters=broadcast.segment.filters)
        .order_by()
        .annotate(
            fixed_workspace=Value(broadcast.workspace_id),
            fixed_broadcast=Value(broadcast.pk),
            fixed_status=Value(Recipient.PENDING.value),
            fixed_to=Value(""),
            fixed_message=Value(""),
            fixed_error=Value(""),
        )
        .values_list(
            "fixed_workspace", "fixed_broadcast", "pk", "fixed_status", "fixed_to", "fixed_message", "fixed_error"
        )
    )
    select, params = contacts.query.sql_with_params()
    columns = ", ".join(_RECIPIENT_COLUMNS)
    table = BroadcastRecipient._meta.db_table
    return f"INSERT INTO {table} ({columns}) {select} ON CONFLICT (broadcast_id, customer_id) DO NOTHING", params


def broadcast_start(*, broadcast: Broadcast, now: datetime) -> int:
    """Fix the recipients (every contact of the segment now) and hand the broadcast to the sender; returns how
    many. Only a scheduled broadcast starts, once: the row lock and the status settle two senders at once (the
    second skips the row another is starting rather than wait for it)."""
    with transaction.atomic():
        locked = (
            Broadcast.objects.select_for_update(skip_locked=True)
            .select_related("segment")
            .filter(pk=broadcast.pk, status=Status.SCHEDULED)
            .first()
        )
        if locked is None:
            return 0
        with connection.cursor() as cursor:
            cursor.execute(*start_sql(broadcast=locked))
        total = BroadcastRecipient.objects.filter(broadcast=locked).count()
        locked.status, locked.started_at, locked.total = Status.SENDING, now, total
        if total == 0:
            locked.status, locked.finished_at = Status.SENT, now
        locked.save(update_fields=["status", "started_at", "total", "finished_at"])
    logger.info(
        "broadcast started", extra={"broadcast_id": locked.pk, "workspace_id": locked.workspace_id, "total": total}
    )
    return total


def broadcasts_start_due(*, now: datetime, limit: int = 10) -> int:
    """Start the broadcasts whose time has come (a few per pass: each fixes its recipients in one statement)."""
    due = list(
        Broadcast.objects.filter(status=Status.SCHEDULED, scheduled_at__lte=now)
        .order_by("scheduled_at")
        .values_list("pk", flat=True)[:limit]
    )
    started = 0
    for pk in due:
        try:
            broadcast_start(broadcast=Broadcast(pk=pk), now=now)
            started += 1
        except Exception as exc:  # one broadcast's failure must not hold the others nor the sequences
            logger.error("broadcast not started", extra={"broadcast_id": pk, "error": type(exc).__name__})
    return started


@transaction.atomic
def broadcast_pause(*, broadcast: Broadcast, now: datetime | None = None) -> bool:
    """Stop sending (by hand, or for complaints): its pending recipients are held; a batch in hand still goes."""
    locked = Broadcast.objects.select_for_update().get(pk=broadcast.pk)
    if locked.status != Status.SENDING:
        return False
    BroadcastRecipient.objects.filter(broadcast=locked, status=Recipient.PENDING).update(status=Recipient.HELD)
    locked.status, locked.paused_at = Status.PAUSED, now or timezone.now()
    locked.save(update_fields=["status", "paused_at"])
    return True


@transaction.atomic
def broadcast_resume(*, broadcast: Broadcast) -> bool:
    """Send the rest: its held recipients go back to the sender (suppressions meanwhile are checked at send)."""
    locked = Broadcast.objects.select_for_update().get(pk=broadcast.pk)
    if locked.status != Status.PAUSED:
        return False
    BroadcastRecipient.objects.filter(broadcast=locked, status=Recipient.HELD).update(status=Recipient.PENDING)
    locked.status, locked.paused_at = Status.SENDING, None
    locked.save(update_fields=["status", "paused_at"])
    return True


@transaction.atomic
def broadcast_cancel(*, broadcast: Broadcast, now: datetime | None = None) -> bool:
    """Never send it, or nothing more of it: recipients not mailed yet are skipped."""
    locked = Broadcast.objects.select_for_update().get(pk=broadcast.pk)
    if locked.status in (Status.SENT, Status.CANCELLED):
        return False
    BroadcastRecipient.objects.filter(broadcast=locked, status__in=[Recipient.PENDING, Recipient.HELD]).update(
        status=Recipient.SKIPPED, error="cancelled"
    )
    locked.status, locked.finished_at = Status.CANCELLED, now or timezone.now()
    locked.save(update_fields=["status", "finished_at"])
    return True


def broadcasts_finish(*, broadcast_ids: set[int], now: datetime) -> None:
    """Mark sent the broadcasts of a batch that have nobody left to mail."""
    for pk in broadcast_ids:
        left = BroadcastRecipient.objects.filter(
            broadcast_id=pk, status__in=[Recipient.PENDING, Recipient.RESERVED, Recipient.HELD]
        )
        if not left.exists():
            Broadcast.objects.filter(pk=pk, status=Status.SENDING).update(status=Status.SENT, finished_at=now)


def broadcast_progress(*, broadcast_ids: list[int]) -> dict[int, dict[str, int]]:
    """{broadcast id: {"total", "sent", "failed", "skipped", "waiting"}}: one grouped count over the
    (broadcast, status) index."""
    rows = (
        BroadcastRecipient.objects.filter(broadcast_id__in=broadcast_ids)
        .values("broadcast_id")
        .annotate(
            total=Count("pk"),
            sent=Count("pk", filter=Q(status=Recipient.SENT)),
            failed=Count("pk", filter=Q(status=Recipient.FAILED)),
            skipped=Count("pk", filter=Q(status=Recipient.SKIPPED)),
        )
    )
    progress = {pk: {"total": 0, "sent": 0, "failed": 0, "skipped": 0, "waiting": 0} for pk in broadcast_ids}
    for row in rows:
        done = row["sent"] + row["failed"] + row["skipped"]
        progress[row["broadcast_id"]] = {
            "total": row["total"],
            "sent": row["sent"],
            "failed": row["failed"],
            "skipped": row["skipped"],
            "waiting": row["total"] - done,
        }
    return progress
