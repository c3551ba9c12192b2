"""The sequence sender: claim due enrollments, reserve each step once, mail the batch over one SMTP connection.

Guarantee: **at most once per step**. A pass works in batches of three steps:

1. Reserve, in one short transaction holding the claimed enrollments' row locks (a fair share of each
   workspace's due enrollments, `SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint
   rows and one workspace's backlog never fills a batch others wait behind): skip suppressed
   addresses and contacts without one, defer what is over the workspace's daily limit, and for each
   step to send insert its EmailSend row (unique per enrollment and position), `reserved` by this
   worker's database session, and advance the enrollment (last_sent_position, last_sent_at,
   next_send_at, or `completed`). The transaction commits before any mail leaves: from then on no
   worker can take that step again. A test contact's step (test mode) is recorded there and then as a
   `test` send, advanced the same way and mailed to nobody; it uses none of the daily limit.
2. Hand the messages to the email backend over one connection, one at a time: just before each,
   one statement marks it `failed` with the error UNCONFIRMED and the ones accepted since the last
   such statement `sent`.
3. Record what the server said: accepted rows become `sent`; a permanent refusal stays `failed` with
   the server's answer; a temporary refusal (4xx), or messages never handed over because the
   connection could not be used, are released (row deleted, enrollment put back) to be tried again.

A worker that dies at any moment leaves at most one message UNCONFIRMED (it may or may not have gone
out, and it is never sent again: a duplicate costs more than a lost step, as recipients who get an
email twice complain, and complaints pause the campaign). Its other rows are `sent`, or still
`reserved`: never handed over, they are released by the next pass of any worker once the dead
worker's database session is gone (`_recover`).
"""

import logging
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.mail import EmailMessage
from django.db import close_old_connections, connection, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from campaigns.broadcast_sending import broadcast_batch, broadcasts_recover
from campaigns.broadcasts import broadcasts_start_due
from campaigns.confirmation import confirmations_send
from campaigns.daily_limits import daily_allowance, next_utc_midnight
from campaigns.digests import suppression_keys
from campaigns.mail import message_id_new
from campaigns.models import Campaign, CampaignEmail, EmailSend, Enrollment, Suppression
from campaigns.outgoing import batch_links, outgoing_message
from campaigns.schedule import step_due_at
from campaigns.services import enrollment_event, suppression_add
from campaigns.smtp import Delivery, Mailer, deliver
from lftrack.db import sql_cursor
from lftrack.errors import Unprocessable
from lftrack.fairshare import in_turns, waiting_workspaces_sql
from lftrack.logs import request_id_var
from lftrack.metrics import EMAILS, labelled
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.sender")

State = Enrollment.State
BATCH_SIZE = 100
# A message the server refused for now (4xx) is tried again after this long.
RETRY_DELAY = timedelta(minutes=10)
# Consecutive passes that could not use SMTP (or failed) wait longer and longer, up to this.
MAX_BACKOFF_SECONDS = 60.0
HEARTBEAT_SECONDS = 60.0
UNCONFIRMED = "unconfirmed: the worker stopped before the SMTP server's answer was recorded; not retried (at most once)"
_ENROLLMENT_FIELDS = ["state", "stopped_at", "completed_at", "last_sent_position", "last_sent_at", "next_send_at"]


@dataclass
class PassResult:
    """What one pass did. `deferred` counts emails that wait for later: over the daily limit or to retry."""

    sent: int = 0
    deferred: int = 0
    skipped: int = 0  # suppressed addresses and contacts without one: their enrollments were stopped
    failed: int = 0  # refused for good by the server, or unconfirmed
    test: int = 0  # test contacts' steps: recorded as `test` sends, mailed to nobody
    smtp_error: str = ""  # the pass ended early because the email backend could not be used
    confirmations: int = 0  # double opt-in emails (campaigns/confirmation.py)
    broadcast: int = 0  # of `sent`, broadcast messages (campaigns/broadcast_sending.py)

    def counts(self) -> dict[str, int]:
        return {"sent": self.sent, "deferred": self.deferred, "skipped": self.skipped}

    def add(self, other: "PassResult") -> None:
        self.sent += other.sent
        self.deferred += other.deferred
        self.skipped += other.skipped
        self.failed += other.failed
        self.test += other.test
        self.confirmations += other.confirmations
        self.broadcast += other.broadcast

    @property
    def idle(self) -> bool:
        return not (self.sent or self.deferred or self.skipped or self.failed or self.test or self.confirmations)


@dataclass
class _Reservation:
    enrollment: Enrollment
    step: CampaignEmail
    send: EmailSend
    # The enrollment as claimed, to put it back when the message is released.
    previous_position: int
    previous_sent_at: datetime | None
    previous_next_send_at: datetime | None
    # Filled after the reservation commits (`_prepare`): the step's tracked links and the workspace's layout.
    links: dict[str, str] = field(default_factory=dict)
    workspace: Workspace | None = None


# ---------------------------------------------------------------------------------------------
# The worker


def run_pass(*, batch_size: int = BATCH_SIZE, should_stop: Callable[[], bool] = lambda: False) -> PassResult:
    """Send everything due now, batch after batch, until nothing is left, SMTP fails or `should_stop()`."""
    result = PassResult()
    mailer = Mailer()
    request_id = request_id_var.set("send-" + uuid.uuid4().hex[:16])  # ties this pass's log lines together
    started = time.perf_counter()
    try:
        _recover(now=timezone.now())
        result.confirmations = confirmations_send(now=timezone.now(), mailer=mailer)
        broadcasts_recover()
        broadcasts_start_due(now=timezone.now())
        more_broadcasts = True
        # A sequence batch, then a broadcast batch, in turns: a broadcast of 100,000 holds the sequence emails
        # (of every workspace, its own too) back by one batch at most, and the other way round.
        while True:
            reservations, more = _reserve(now=timezone.now(), batch_size=batch_size, result=result)
            if reservations:
                _prepare(reservations)
                delivery = deliver(reservations, _message, mailer, handing_over=_handing_over)
                _record(delivery, now=timezone.now())
                labelled(EMAILS, "bounced").inc(len(delivery.bounced))
                result.sent += len(delivery.accepted)
                result.failed += len(delivery.failed) + len(delivery.bounced)
                result.deferred += len(delivery.retry) + len(delivery.released)
                if delivery.error:
                    result.smtp_error = delivery.error
                    logger.error("email backend unavailable", extra={"error": delivery.error})
                    break
            if more_broadcasts:  # a round is a sequence batch and a broadcast batch, even when told to stop
                batch = broadcast_batch(now=timezone.now(), batch_size=batch_size, mailer=mailer)
                labelled(EMAILS, "bounced").inc(batch.bounced)
                result.sent += batch.sent
                result.failed += batch.failed
                result.skipped += batch.skipped
                result.deferred += batch.deferred
                result.broadcast += batch.sent
                more_broadcasts = batch.more
                if batch.smtp_error:
                    result.smtp_error = batch.smtp_error
                    logger.error("email backend unavailable", extra={"error": batch.smtp_error})
                    break
            if not (more or more_broadcasts) or should_stop():
                break
    finally:
        mailer.close()
        for outcome in ("sent", "deferred", "skipped", "failed", "test"):
            labelled(EMAILS, outcome).inc(getattr(result, outcome))
        logger.log(
            logging.DEBUG if result.idle and not result.smtp_error else logging.INFO,
            "send pass",
            extra={
                **result.counts(),
                "failed": result.failed,
                "test": result.test,
                "confirmations": result.confirmations,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        request_id_var.reset(request_id)
    return result


def sender_run(*, stop: threading.Event, batch_size: int = BATCH_SIZE, idle_seconds: float = 1.0) -> PassResult:
    """The long-lived worker: passes until `stop` is set (the command sets it on SIGTERM or SIGINT).

    `stop` is checked between batches, so a signal finishes the batch in hand. Sleeps `idle_seconds`
    when a pass found nothing; backs off up to a minute while SMTP or the database keeps failing.
    """
    totals = PassResult()
    failures = 0
    logger.info("sender started", extra={"batch_size": batch_size})
    beat = time.monotonic()
    while not stop.is_set():
        if time.monotonic() - beat >= HEARTBEAT_SECONDS:  # a quiet worker still says it is alive
            logger.info("sender alive", extra=totals.counts())
            beat = time.monotonic()
        close_old_connections()  # a connection broken by a database restart is replaced, not reused
        try:
            result = run_pass(batch_size=batch_size, should_stop=stop.is_set)
            failed = bool(result.smtp_error)
        except Exception:  # the database went away, say: log it, wait, try again
            logger.exception("send pass failed")
            result, failed = PassResult(), True
        totals.add(result)
        if failed:
            failures += 1
            stop.wait(min(MAX_BACKOFF_SECONDS, idle_seconds * 2**failures))
        else:
            failures = 0
            if result.idle:
                stop.wait(idle_seconds)
    return totals


# ---------------------------------------------------------------------------------------------
# 1. Reserve


_ENROLLMENT = Enrollment._meta.db_table
_SCHEDULED = "e.state = 'active' AND e.next_send_at IS NOT NULL"
# The batch, locked: every workspace with something due gives its oldest due enrollments of active campaigns, an
# equal share of the batch (at least one each). The workspaces are found by a skip scan of the partial index
# `campaigns_enrollment_due` (workspace_id, next_send_at: one probe each gives a workspace and its earliest
# due time), and each one's share is a range of the same index; rows other workers hold are skipped. A test
# and bench/sender.py check the plan.
_CLAIM_SQL = f"""
    WITH RECURSIVE waiting (workspace_id, next_send_at) AS (
        {waiting_workspaces_sql(table=_ENROLLMENT, condition=_SCHEDULED, first="next_send_at")}
    ), due AS MATERIALIZED (
        SELECT workspace_id FROM waiting WHERE next_send_at <= %(now)s
    ), share AS (
        SELECT GREATEST(1, %(batch)s / NULLIF(count(*), 0)) AS size FROM due
    )
    SELECT claimed.id, share.size FROM due CROSS JOIN share CROSS JOIN LATERAL (
        SELECT e.id FROM {_ENROLLMENT} e JOIN {Campaign._meta.db_table} c ON c.id = e.campaign_id
        WHERE e.workspace_id = due.workspace_id AND {_SCHEDULED} AND e.next_send_at <= %(now)s
          AND c.status = %(active)s
        ORDER BY e.next_send_at
        LIMIT share.size
        FOR UPDATE OF e SKIP LOCKED
    ) claimed
"""


def claim_sql(*, now: datetime, batch_size: int) -> tuple[str, dict]:
    """The statement claiming a batch (due active enrollments of active campaigns, a fair share of each
    workspace's, locked) and its parameters; it answers (enrollment id, the batch's share per workspace)."""
    return _CLAIM_SQL, {"now": now, "batch": batch_size, "active": Campaign.Status.ACTIVE}


def _claim(*, now: datetime, batch_size: int) -> tuple[list[Enrollment], bool]:
    """The claimed enrollments, in turns by workspace (each one's oldest first), and whether some workspace
    took its whole share (so more may be due).

    Each row carries its address lower-cased by the database, as Suppression stores it; the suppression
    check is a second query (`_suppressed`) so that it runs for the claimed rows only, where a correlated
    EXISTS in the claim could be planned as a hash of the whole suppression list for every batch.
    """
    with sql_cursor() as cursor:
        cursor.execute(*claim_sql(now=now, batch_size=batch_size))
        rows = cursor.fetchall()
    if not rows:
        return [], False
    claimed = (
        Enrollment.objects.filter(pk__in=[row.id for row in rows])
        .select_related("customer")
        .annotate(email_lower=Lower("customer__email"))
        .order_by("next_send_at", "pk")
    )
    due = in_turns(claimed, key=lambda enrollment: enrollment.workspace_id)
    per_workspace = Counter(enrollment.workspace_id for enrollment in due)
    return due, max(per_workspace.values()) >= rows[0].size


def _reserve(*, now: datetime, batch_size: int, result: PassResult) -> tuple[list[_Reservation], bool]:
    """Step 1, one transaction: claim a batch, decide for each enrollment, write the reservations. Also
    answers whether more may be due (some workspace took its whole share of the batch)."""
    with transaction.atomic():
        due, more = _claim(now=now, batch_size=batch_size)
        if not due:
            return [], False
        # Read after the claim, under its locks: an activation committed before is seen; one committing
        # later waits for these rows and re-evaluates them (campaigns.schedule).
        steps = _steps_by_campaign({enrollment.campaign_id for enrollment in due})
        suppressed = _suppressed(due)
        to_send: list[tuple[Enrollment, CampaignEmail]] = []
        for enrollment in due:
            if not enrollment.customer.email or _suppression_key(enrollment) in suppressed:
                enrollment.state = State.STOPPED
                enrollment.stopped_at = now
                enrollment.next_send_at = None
                result.skipped += 1
                continue
            step = _next_active(steps[enrollment.campaign_id], after=enrollment.last_sent_position)
            if step is None:  # due by a stale time (no active step left): waits for an activation
                enrollment.next_send_at = None
                continue
            to_send.append((enrollment, step))

        allowance = daily_allowance({e.workspace_id for e, _ in to_send if not e.is_test}, now=now)
        backend_pid = connection.connection.info.backend_pid  # this worker, for as long as it lives
        reservations: list[_Reservation] = []
        tests: list[EmailSend] = []
        for enrollment, step in to_send:
            if not enrollment.is_test and allowance[enrollment.workspace_id] <= 0:
                enrollment.next_send_at = next_utc_midnight(now)  # the next window; never dropped
                result.deferred += 1
                continue
            # Test mode: the step is recorded and the enrollment moves on; nobody is mailed.
            reservation = _reservation_isolated(
                enrollment,
                step,
                steps[enrollment.campaign_id],
                now=now,
                backend_pid=None if enrollment.is_test else backend_pid,
            )
            if reservation is None:
                result.deferred += 1
            elif enrollment.is_test:
                reservation.send.status, reservation.send.message_id = EmailSend.Status.TEST, ""
                tests.append(reservation.send)
                result.test += 1
            else:
                allowance[enrollment.workspace_id] -= 1
                reservations.append(reservation)

        EmailSend.objects.bulk_create([*tests, *(reservation.send for reservation in reservations)])
        _enrollments_save(due)
        for enrollment in due:  # the state changes of this batch, reported in its transaction
            if enrollment.state == State.STOPPED:
                enrollment_event(enrollment, "enrollment.stopped")
            elif enrollment.state == State.COMPLETED:
                enrollment_event(enrollment, "enrollment.completed")
    return reservations, more


def _enrollments_save(enrollments: list[Enrollment]) -> None:
    """One UPDATE per distinct set of new values: a batch of one step shares them (same `now`, same
    delay), so this is one to a few statements where bulk_update would build a CASE per row and field."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for enrollment in enrollments:
        groups[tuple(getattr(enrollment, name) for name in _ENROLLMENT_FIELDS)].append(enrollment.pk)
    for values, pks in groups.items():
        Enrollment.objects.filter(pk__in=pks).update(**dict(zip(_ENROLLMENT_FIELDS, values, strict=True)))


def _suppression_key(enrollment: Enrollment) -> tuple[int, str, bool]:
    return enrollment.workspace_id, enrollment.email_lower, enrollment.is_test


def _suppressed(enrollments: list[Enrollment]) -> set[tuple[int, str, bool]]:
    """(workspace id, lower(email), mode) of the claimed addresses on their workspace's suppression list (a test
    contact's on the test one).

    One query per workspace in the batch, `email IN (...)` on the (workspace, email) unique index.
    Read under the claim's locks: a suppression committed before is seen; one committing later
    stops the enrollment after this batch (suppression_add's UPDATE waits for the row lock).
    """
    # An erased person's address is on the list as its digest only (docs/privacy.md, "The suppression digest"):
    # each key looked up maps back to the address it stands for.
    by_workspace: dict[int, dict[str, str]] = defaultdict(dict)
    for enrollment in enrollments:
        if enrollment.email_lower:
            for key in suppression_keys(workspace_id=enrollment.workspace_id, email=enrollment.email_lower):
                by_workspace[enrollment.workspace_id][key] = enrollment.email_lower
    found: set[tuple[int, str, bool]] = set()
    for workspace_id, keys in by_workspace.items():
        rows = Suppression.objects.filter(workspace_id=workspace_id, email__in=keys).values_list("email", "is_test")
        found.update((workspace_id, keys[email], is_test) for email, is_test in rows)
    return found


def _steps_by_campaign(campaign_ids: Iterable[int]) -> dict[int, list[CampaignEmail]]:
    steps: dict[int, list[CampaignEmail]] = defaultdict(list)
    for step in CampaignEmail.objects.filter(campaign_id__in=campaign_ids).order_by("campaign_id", "position"):
        steps[step.campaign_id].append(step)
    return steps


def _next_active(steps: list[CampaignEmail], *, after: int) -> CampaignEmail | None:
    """The first active step after position `after`: inactive steps are skipped (docs/enrollment.md)."""
    return next((step for step in steps if step.active and step.position > after), None)


def _reservation(
    enrollment: Enrollment, step: CampaignEmail, steps: list[CampaignEmail], *, now: datetime, backend_pid: int | None
) -> _Reservation:
    """Advance the locked enrollment past `step` and build its EmailSend row (saved by the caller)."""
    reservation = _Reservation(
        enrollment=enrollment,
        step=step,
        send=EmailSend(
            workspace_id=enrollment.workspace_id,
            campaign_id=enrollment.campaign_id,
            enrollment=enrollment,
            campaign_email=step,
            position=step.position,
            to_email=enrollment.customer.email,
            message_id=message_id_new(),
            status=EmailSend.Status.RESERVED,  # until just before it is handed to the server
            reserved_by=backend_pid,
            sent_at=now,
        ),
        previous_position=enrollment.last_sent_position,
        previous_sent_at=enrollment.last_sent_at,
        previous_next_send_at=enrollment.next_send_at,
    )
    enrollment.last_sent_position = step.position
    enrollment.last_sent_at = now
    following = _next_active(steps, after=step.position)
    if following is not None:
        enrollment.next_send_at = step_due_at(enrollment=enrollment, delay_minutes=following.delay_minutes)
    elif steps[-1].position > step.position:
        enrollment.next_send_at = None  # only inactive steps remain: activating one schedules it
    else:
        enrollment.state = State.COMPLETED
        enrollment.completed_at = now
        enrollment.next_send_at = None
    return reservation


def _reservation_isolated(
    enrollment: Enrollment, step: CampaignEmail, steps: list[CampaignEmail], *, now: datetime, backend_pid: int | None
) -> _Reservation | None:
    """`_reservation`, or None when it raises for this enrollment: one row's data must not stop the batch of
    every workspace. The enrollment is put back as claimed, due again after RETRY_DELAY, and one line says
    so (ids and the error's class) once per pass."""
    claimed = {name: getattr(enrollment, name) for name in _ENROLLMENT_FIELDS}
    try:
        return _reservation(enrollment, step, steps, now=now, backend_pid=backend_pid)
    except Exception as exc:
        for name, value in claimed.items():
            setattr(enrollment, name, value)
        enrollment.next_send_at = now + RETRY_DELAY
        logger.error(
            "enrollment not reserved",
            extra={
                "enrollment_id": enrollment.pk,
                "workspace_id": enrollment.workspace_id,
                "error": type(exc).__name__,
            },
        )
        return None


# ---------------------------------------------------------------------------------------------
# 2. Deliver (campaigns/smtp.py hands the batch over and sorts the answers)


def _prepare(reservations: list[_Reservation]) -> None:
    """Each reservation's tracked links and workspace, once per step and workspace of the batch."""
    links = batch_links(reservation.step for reservation in reservations)
    workspaces = Workspace.objects.in_bulk({reservation.send.workspace_id for reservation in reservations})
    for reservation in reservations:
        reservation.links = links[reservation.step.pk]
        reservation.workspace = workspaces[reservation.send.workspace_id]


def _message(reservation: _Reservation) -> EmailMessage:
    return outgoing_message(
        content=reservation.step,
        customer=reservation.enrollment.customer,
        links=reservation.links,
        workspace=reservation.workspace,
        workspace_id=reservation.enrollment.workspace_id,
        message_id=reservation.send.message_id,
        send_id=reservation.send.pk,
    )


# ---------------------------------------------------------------------------------------------
# 3. Record


# One statement before each message goes: it becomes unconfirmed, the ones accepted since the last
# such statement become sent. A worker killed at any moment leaves one message at most unconfirmed.
_HANDING_OVER_SQL = f"""UPDATE {EmailSend._meta.db_table}
    SET status = CASE WHEN id = %(next)s THEN %(failed)s ELSE %(sent)s END,
        error = CASE WHEN id = %(next)s THEN %(unconfirmed)s ELSE '' END, reserved_by = NULL
    WHERE id = ANY(%(ids)s)"""


def _handing_over(reservation: _Reservation, accepted: list[_Reservation]) -> None:
    ids = [reservation.send.pk, *(done.send.pk for done in accepted)]
    with connection.cursor() as cursor:
        cursor.execute(
            _HANDING_OVER_SQL,
            {
                "next": reservation.send.pk,
                "ids": ids,
                "failed": EmailSend.Status.FAILED,
                "sent": EmailSend.Status.SENT,
                "unconfirmed": UNCONFIRMED,
            },
        )


def _record(delivery: Delivery[_Reservation], *, now: datetime) -> None:
    with transaction.atomic():
        if delivery.accepted:
            EmailSend.objects.filter(pk__in=[reservation.send.pk for reservation in delivery.accepted]).update(
                status=EmailSend.Status.SENT, error="", reserved_by=None
            )
        for reservation, error, reason in [*delivery.failed, *delivery.bounced]:
            EmailSend.objects.filter(pk=reservation.send.pk).update(
                status=EmailSend.Status.FAILED, error=error, reserved_by=None
            )
            # One line per email that failed for good (it is never tried again): ids and the reason, no address.
            logger.warning(
                "email not sent",
                extra={
                    "send_id": reservation.send.pk,
                    "workspace_id": reservation.send.workspace_id,
                    "campaign_id": reservation.send.campaign_id,
                    "error": reason,
                },
            )
        for reservation, _, _ in delivery.bounced:
            _bounce(reservation)
        if delivery.retry:
            _release(delivery.retry, retry_at=now + RETRY_DELAY)
        if delivery.released:
            _release(delivery.released, retry_at=None)


def _bounce(reservation: _Reservation) -> None:
    """The server refused the address for good: suppress it as bounced, as a reported bounce would (this
    stops the contact's enrollments). An address the suppression list refuses is logged, not fatal."""
    email = reservation.enrollment.customer.email
    try:
        suppression_add(
            workspace=reservation.enrollment.workspace, email=email, reason=Suppression.Reason.BOUNCED, channel="smtp"
        )
    except Unprocessable as exc:
        logger.warning("bounced address not suppressed", extra={"send_id": reservation.send.pk, "error": exc.message})


# Reservations whose worker's database session is gone: the worker died before handing them over.
_ABANDONED_SQL = f"""SELECT id FROM {EmailSend._meta.db_table} WHERE status = %(reserved)s
    AND reserved_by NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    FOR UPDATE SKIP LOCKED"""


def _recover(*, now: datetime) -> int:
    """Release the reservations of workers that died before handing them over (killed, crashed): none of
    them left, so each is deleted and its enrollment put back, due now. Returns how many.

    A worker's reservations are tied to its PostgreSQL session (`reserved_by`): a process that dies
    loses its connection, and the server ends that session. A reservation whose message was already
    on its way is `failed` / unconfirmed by then, never here: it is not sent again.
    """
    with transaction.atomic():
        with sql_cursor() as cursor:
            cursor.execute(_ABANDONED_SQL, {"reserved": EmailSend.Status.RESERVED})
            ids = [row.id for row in cursor.fetchall()]
        if not ids:
            return 0
        abandoned = list(EmailSend.objects.filter(pk__in=ids).select_related("enrollment"))
        enrollments = Enrollment.objects.select_for_update().in_bulk([send.enrollment_id for send in abandoned])
        EmailSend.objects.filter(pk__in=ids).delete()
        changed = []
        for send in abandoned:
            enrollment = enrollments.get(send.enrollment_id)
            if enrollment is None or enrollment.last_sent_position != send.position:
                continue  # moved on since: nothing to put back
            before = EmailSend.objects.filter(enrollment=enrollment).order_by("-position").first()
            enrollment.last_sent_position = before.position if before else 0
            enrollment.last_sent_at = before.sent_at if before else None
            if enrollment.state == State.COMPLETED:
                enrollment.state = State.ACTIVE
                enrollment.completed_at = None
            if enrollment.state == State.ACTIVE:
                enrollment.next_send_at = now
            changed.append(enrollment)
        _enrollments_save(changed)
    logger.warning("released the reservations of a worker that died", extra={"count": len(ids)})
    return len(ids)


def _release(reservations: list[_Reservation], *, retry_at: datetime | None) -> None:
    """Undo reservations whose message certainly did not leave: delete the row, put the enrollment back.

    `retry_at` None puts back the due time it had, so the next pass takes it again.
    """
    EmailSend.objects.filter(pk__in=[reservation.send.pk for reservation in reservations]).delete()
    current = Enrollment.objects.select_for_update().in_bulk(
        [reservation.enrollment.pk for reservation in reservations]
    )
    changed = []
    for reservation in reservations:
        enrollment = current.get(reservation.enrollment.pk)
        if enrollment is None or enrollment.last_sent_position != reservation.send.position:
            continue
        enrollment.last_sent_position = reservation.previous_position
        enrollment.last_sent_at = reservation.previous_sent_at
        if enrollment.state == State.COMPLETED:
            enrollment.state = State.ACTIVE
            enrollment.completed_at = None
        # Stopped meanwhile (an unsubscribe, a suppression): it stays stopped, with nothing due.
        if enrollment.state == State.ACTIVE:
            enrollment.next_send_at = retry_at or reservation.previous_next_send_at
        changed.append(enrollment)
    _enrollments_save(changed)
