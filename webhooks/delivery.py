"""One delivery attempt (Standard Webhooks: signed POST), what it means for the delivery and the endpoint.

A 2xx delivers. No answer (refused address, network error, the 5 s timeout), 429 and 5xx are tried
again with exponential back-off and jitter for WEBHOOK_RETRY_WINDOW_HOURS (3 days); any other status
(3xx included: redirects are not followed) fails for good. Every attempt of an endpoint counts toward
its streak: WEBHOOK_FAILURES_TO_DISABLE failures in a row, or failing for the whole window, disable
it and its owners get an email. The event keeps its `webhook-id` across attempts and replays, so a
receiver de-duplicates by it (deliveries are at least once: docs/webhooks.md).
"""

import json
import logging
import random
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import models, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook

from lftrack.db import sql_cursor
from lftrack.fields import iso_utc
from lftrack.metrics import WEBHOOK_ATTEMPTS, WEBHOOK_DISABLINGS, labelled
from webhooks import network
from webhooks.models import Attempt, Delivery, Endpoint, Event
from webhooks.outbox import deliveries_queue
from webhooks.payloads import payload_build
from webhooks.secrets import secret_open
from workspaces.models import Membership

logger = logging.getLogger("lftrack.webhooks")
State = Delivery.State


def event_body(event: Event) -> bytes:
    """The JSON body: id, type, timestamp (when it happened), test, and the object kept at dispatch."""
    body = {
        "id": event.public_id,
        "type": event.type,
        "timestamp": iso_utc(event.created_at),
        "test": event.test,
        "data": event.data if event.data is not None else payload_build(event),
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def signature_headers(endpoint: Endpoint, *, msg_id: str, at: datetime, body: bytes) -> dict[str, str]:
    """webhook-id, webhook-timestamp (this attempt's) and webhook-signature: v1 HMAC-SHA256 with the current
    secret, and with the previous one too during a rotation's overlap (receivers accept either)."""
    secrets = [secret_open(endpoint.secret)]
    if endpoint.previous_secret and endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at > at:
        secrets.append(secret_open(endpoint.previous_secret))
    text = body.decode()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(
            Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=text) for secret in secrets
        ),
        "Content-Type": "application/json",
        "User-Agent": "lftrack-webhooks/1",
    }


def retry_delay(attempt: int) -> timedelta:
    """After the `attempt`-th failure: the base doubled per attempt, capped, times a jitter of ±25%
    (so endpoints that failed together are not all retried at the same instant)."""
    seconds = min(settings.WEBHOOK_RETRY_MAX_SECONDS, settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempt - 1))
    return timedelta(seconds=seconds * random.uniform(0.75, 1.25))


# A workspace sends on this many jobs at once at most, across all workers, so that other workspaces' jobs
# always find worker slots free (docs/concurrency.md, "Fair shares"). Session advisory locks, class
# SLOT_LOCK_CLASS + slot, keyed by the workspace: a worker that dies frees its slot with its connection.
WORKSPACE_SLOTS = 2
SLOT_LOCK_CLASS = 4310


class SlotsTaken(Exception):
    """The workspace already sends on all its slots: the job gives its worker slot back and runs again later,
    keeping its place (webhooks/tasks.py, `DeliveryRetry`)."""


# One advisory lock per (slot class, workspace); a session lock, released by _SLOT_UNLOCK_SQL.
_SLOT_LOCK_SQL = """SELECT pg_try_advisory_lock(%(slot)s, %(key)s) AS taken"""
_SLOT_UNLOCK_SQL = """SELECT pg_advisory_unlock(%(slot)s, %(key)s)"""


@contextmanager
def workspace_slot(workspace_id: int) -> Iterator[None]:
    """Hold one of the workspace's WORKSPACE_SLOTS for the block; SlotsTaken when all are held elsewhere."""
    key = workspace_id % 2**31
    taken = None
    with sql_cursor() as cursor:
        for slot in range(WORKSPACE_SLOTS):
            cursor.execute(_SLOT_LOCK_SQL, {"slot": SLOT_LOCK_CLASS + slot, "key": key})
            if cursor.fetchone().taken:
                taken = slot
                break
    if taken is None:
        raise SlotsTaken()
    try:
        yield
    finally:
        with sql_cursor() as cursor:
            cursor.execute(_SLOT_UNLOCK_SQL, {"slot": SLOT_LOCK_CLASS + taken, "key": key})


def delivery_attempt(*, delivery_id: int) -> datetime | None:
    """Send the delivery once; when to try again (None: delivered, failed for good, or nothing to do).

    A delivery no longer pending (delivered, failed, replaced) or gone is left alone; one whose endpoint
    is disabled stays pending, to be queued again when it is re-enabled. Sends in one of the workspace's
    slots (SlotsTaken when none is free)."""
    delivery = Delivery.objects.select_related("event", "endpoint").filter(pk=delivery_id).first()
    if delivery is None or delivery.state != State.PENDING or not delivery.endpoint.enabled:
        return None
    with workspace_slot(delivery.workspace_id):
        body = event_body(delivery.event)
        started = timezone.now()
        headers = signature_headers(delivery.endpoint, msg_id=delivery.event.public_id, at=started, body=body)
        answer = network.post(delivery.endpoint.url, body, headers)
        return delivery_record(delivery, answer, started=started)


@transaction.atomic
def delivery_record(delivery: Delivery, answer: network.Answer, *, started: datetime) -> datetime | None:
    """Log the attempt, move the delivery and the endpoint's streak on; when to retry, if at all."""
    now = timezone.now()
    retry_at = _attempt_log(delivery, answer, started=started, now=now)
    Delivery.objects.filter(pk=delivery.pk).update(
        state=_state(answer, retry_at),
        attempts=delivery.attempts + 1,
        last_attempt_at=now,
        delivered_at=now if _ok(answer) else None,
    )
    if _ok(answer):
        _streak_clear(delivery.endpoint_id)
    else:
        _failure_count(delivery.endpoint_id, now=now)
    return retry_at


def _ok(answer: network.Answer) -> bool:
    return answer.status is not None and 200 <= answer.status < 300


def _state(answer: network.Answer, retry_at: datetime | None) -> str:
    return State.DELIVERED if _ok(answer) else State.PENDING if retry_at else State.FAILED


def _attempt_log(
    delivery: Delivery, answer: network.Answer, *, started: datetime, now: datetime, save: bool = True
) -> datetime | None:
    """The attempt's row in the log (saved, or left to the caller's bulk insert: `delivery._attempt`) and
    its warning line if it failed; when to retry, if at all."""
    ok = _ok(answer)
    retryable = answer.status is None or answer.status == 429 or answer.status >= 500
    number = delivery.attempts + 1
    delivery._attempt = Attempt(
        workspace_id=delivery.workspace_id,
        delivery=delivery,
        endpoint_id=delivery.endpoint_id,
        number=number,
        started_at=started,
        status_code=answer.status,
        duration_ms=answer.duration_ms,
        response_excerpt=answer.excerpt,
        error=answer.error,
        ok=ok,
    )
    if save:
        delivery._attempt.save()
    retry_at = None
    if not ok and retryable and now + (delay := retry_delay(number)) <= delivery.queued_at + _window():
        retry_at = now + delay
    labelled(WEBHOOK_ATTEMPTS, "delivered" if ok else "retry" if retry_at else "failed").inc()
    if not ok:
        # One line per failed attempt: ids, status and error only (never the URL, body or secret).
        logger.warning(
            "webhook attempt failed",
            extra={
                "endpoint_id": delivery.endpoint_id,
                "delivery_id": delivery.pk,
                "event_type": delivery.event.type,
                "attempt": number,
                "status": answer.status,
                "error": answer.error,
                "retry_at": iso_utc(retry_at) if retry_at else None,
            },
        )
    return retry_at


def _streak_clear(endpoint_id: int) -> None:
    Endpoint.objects.filter(pk=endpoint_id).exclude(failures_in_row=0).update(failures_in_row=0, failing_since=None)


# A batch's attempts are recorded (committed) at least this often: what a worker killed mid-batch sends again.
BATCH_RECORD_SECONDS = 2.0
# A batch job sends on this many connections at once, one customer's deliveries always on the same one:
# a receiver answering in 100 ms gets up to 40 deliveries a second from one job, not 10.
BATCH_LANES = 4
# A batch job starts no delivery past this many seconds: a slow receiver's rest goes behind (a job per
# delivery), and the worker slot is given back within this and one attempt's 5 s.
BATCH_BUDGET_SECONDS = 30.0


def deliveries_send(*, endpoint_id: int, delivery_ids: list[int]) -> int:
    """Send the endpoint's pending deliveries among `delivery_ids` (one dispatch's) and record them
    together: one transaction for the batch (or per BATCH_RECORD_SECONDS), not three commits per
    delivery. Returns how many were attempted.

    Each customer's deliveries go in order, one after the other, on one of BATCH_LANES threads (events
    without a customer spread over them). A delivery whose customer has an earlier delivery still
    pending outside the batch (retrying, replayed), or one that failed earlier in the batch, is not sent
    here but queued behind it on the customer's lock (`deliveries_queue`), as is a failed one's retry.
    The endpoint's streak counts as answers come: once it reaches WEBHOOK_FAILURES_TO_DISABLE nothing
    more is sent (the endpoint is disabled as the batch is recorded; its deliveries wait for it). Past
    BATCH_BUDGET_SECONDS nothing more is started either: the rest goes behind. Sends in one of the
    workspace's slots (SlotsTaken when none is free)."""
    endpoint = Endpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None or not endpoint.enabled:
        return 0
    with workspace_slot(endpoint.workspace_id):
        return _batch_send(endpoint, delivery_ids)


def _batch_send(endpoint: Endpoint, delivery_ids: list[int]) -> int:
    endpoint_id = endpoint.pk
    deliveries = list(
        Delivery.objects.select_related("event")
        .filter(pk__in=delivery_ids, endpoint_id=endpoint_id, state=State.PENDING)
        .order_by("pk")
    )
    customers = {d.event.customer_id for d in deliveries} - {None}
    # The earliest delivery still pending outside the batch, per customer (before the batch's last).
    earlier = (
        dict(
            Delivery.objects.filter(
                endpoint_id=endpoint_id,
                state=State.PENDING,
                event__customer_id__in=customers,
                pk__lt=deliveries[-1].pk if deliveries else 0,
            )
            .exclude(pk__in=delivery_ids)
            .values("event__customer_id")
            .annotate(first=models.Min("pk"))
            .values_list("event__customer_id", "first")
        )
        if customers
        else {}
    )
    lanes: list[list[tuple[Delivery, bytes]]] = [[] for _ in range(BATCH_LANES)]
    behind: list[Delivery] = []
    for n, delivery in enumerate(deliveries):
        customer = delivery.event.customer_id
        if customer is not None and earlier.get(customer, delivery.pk) < delivery.pk:
            behind.append(delivery)
        else:  # the body is built here: an event kept without its object (older code) reads the database
            lanes[(customer if customer is not None else n) % BATCH_LANES].append(
                (delivery, event_body(delivery.event))
            )
    sent: list[tuple[Delivery, network.Answer, datetime]] = []
    lock = threading.Lock()
    streak = [endpoint.failures_in_row]
    deadline = time.monotonic() + BATCH_BUDGET_SECONDS

    def lane_send(lane: list[tuple[Delivery, bytes]]) -> None:
        held: set[int] = set()
        for delivery, body in lane:
            customer = delivery.event.customer_id
            with lock:
                if (
                    customer in held
                    or streak[0] >= settings.WEBHOOK_FAILURES_TO_DISABLE
                    or time.monotonic() >= deadline
                ):
                    behind.append(delivery)
                    continue
            started = timezone.now()
            headers = signature_headers(endpoint, msg_id=delivery.event.public_id, at=started, body=body)
            answer = network.post(endpoint.url, body, headers)
            with lock:
                sent.append((delivery, answer, started))
                streak[0] = 0 if _ok(answer) else streak[0] + 1
                if not _ok(answer) and customer is not None:
                    held.add(customer)

    attempted = 0
    with ThreadPoolExecutor(max_workers=BATCH_LANES) as pool:
        pending = {pool.submit(lane_send, lane) for lane in lanes if lane}
        while pending:
            _, pending = futures.wait(pending, timeout=BATCH_RECORD_SECONDS)
            if pending:  # the batch goes on: what came back so far is recorded now
                with lock:
                    done, sent[:] = sent[:], []
                _batch_record(endpoint_id, done, [])
                attempted += len(done)
    _batch_record(endpoint_id, sent, behind)
    return attempted + len(sent)


@transaction.atomic
def _batch_record(
    endpoint_id: int, sent: list[tuple[Delivery, network.Answer, datetime]], behind: list[Delivery]
) -> None:
    """The batch's attempts in the log, its deliveries moved on (a statement per outcome), the endpoint's
    streak (cleared by the last success, then counting the failures after it), and the jobs of the
    retries and of the deliveries left behind, in delivery order."""
    if not sent and not behind:
        return
    now = timezone.now()
    retries: dict[int, datetime] = {}
    outcomes: dict[tuple[str, bool], list[int]] = {}
    failures_after_success, succeeded = 0, False
    for delivery, answer, started in sent:
        retry_at = _attempt_log(delivery, answer, started=started, now=now, save=False)
        if retry_at:
            retries[delivery.pk] = retry_at
        outcomes.setdefault((_state(answer, retry_at), _ok(answer)), []).append(delivery.pk)
        succeeded, failures_after_success = (True, 0) if _ok(answer) else (succeeded, failures_after_success + 1)
    Attempt.objects.bulk_create([delivery._attempt for delivery, _, _ in sent])
    for (state, ok), ids in outcomes.items():
        Delivery.objects.filter(pk__in=ids).update(
            state=state, attempts=models.F("attempts") + 1, last_attempt_at=now, delivered_at=now if ok else None
        )
    if succeeded:
        _streak_clear(endpoint_id)
    if failures_after_success:
        _failure_count(endpoint_id, now=now, count=failures_after_success)
    queued = sorted([*behind, *(d for d, _, _ in sent if d.pk in retries)], key=lambda d: d.pk)
    deliveries_queue([(d.pk, endpoint_id, d.event.customer_id) for d in queued], at=retries)


def _window() -> timedelta:
    return timedelta(hours=settings.WEBHOOK_RETRY_WINDOW_HOURS)


# One statement: a concurrent failure of the same endpoint adds to the streak, never overwrites it.
_FAILURES_SQL = f"""UPDATE {Endpoint._meta.db_table}
    SET failures_in_row = failures_in_row + %(count)s, failing_since = COALESCE(failing_since, %(now)s)
    WHERE id = %(endpoint_id)s RETURNING failures_in_row, failing_since"""


def _failure_count(endpoint_id: int, *, now: datetime, count: int = 1) -> None:
    """`count` more failures in the endpoint's streak; past the limit it is disabled, once, and its owners told."""
    with sql_cursor() as cursor:
        cursor.execute(_FAILURES_SQL, {"count": count, "now": now, "endpoint_id": endpoint_id})
        row = cursor.fetchone()
    failures, since = row.failures_in_row, row.failing_since
    if failures >= settings.WEBHOOK_FAILURES_TO_DISABLE:
        reason = f"{failures} failed attempts in a row"
    elif now - since >= _window():
        reason = f"failing since {since:%Y-%m-%d %H:%M} UTC"
    else:
        return
    disabled = Endpoint.objects.filter(pk=endpoint_id, enabled=True).update(
        enabled=False, disabled_at=now, disabled_reason=reason
    )
    if disabled:
        WEBHOOK_DISABLINGS.inc()
        logger.warning("webhook endpoint disabled", extra={"endpoint_id": endpoint_id, "failures": failures})
        transaction.on_commit(lambda: owners_notify(endpoint_id), robust=True)


def owners_notify(endpoint_id: int) -> int:
    """Email the workspace's owners that the endpoint was disabled, with the page that re-enables it."""
    endpoint = Endpoint.objects.select_related("workspace").filter(pk=endpoint_id).first()
    if endpoint is None:
        return 0
    emails = sorted(
        set(
            Membership.objects.filter(workspace_id=endpoint.workspace_id, role=Membership.Role.OWNER)
            .exclude(user__email="")
            .values_list("user__email", flat=True)
        )
    )
    if not emails:
        return 0
    page = settings.PUBLIC_BASE_URL + reverse("admin:webhooks_endpoint_change", args=[endpoint.pk])
    body = render_to_string(
        "emails/webhook_disabled.txt",
        {"url": endpoint.url, "workspace": endpoint.workspace.name, "reason": endpoint.disabled_reason, "page": page},
    )
    try:
        return send_mail(f"Webhook endpoint disabled: {endpoint.url}"[:200], body, None, emails)
    except Exception as exc:  # the endpoint stays disabled; the page says so
        logger.warning(
            "webhook disable email not sent", extra={"endpoint_id": endpoint_id, "error": type(exc).__name__}
        )
        return 0
