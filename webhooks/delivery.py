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
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook

from lftrack.api import iso_utc
from webhooks import network
from webhooks.models import Attempt, Delivery, Endpoint, Event
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
        "webhook-signature": " ".join(Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=text) for secret in secrets),
        "Content-Type": "application/json",
        "User-Agent": "lftrack-webhooks/1",
    }


def retry_delay(attempt: int) -> timedelta:
    """After the `attempt`-th failure: the base doubled per attempt, capped, times a jitter of ±25%
    (so endpoints that failed together are not all retried at the same instant)."""
    seconds = min(settings.WEBHOOK_RETRY_MAX_SECONDS, settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempt - 1))
    return timedelta(seconds=seconds * random.uniform(0.75, 1.25))


def delivery_attempt(*, delivery_id: int) -> datetime | None:
    """Send the delivery once; when to try again (None: delivered, failed for good, or nothing to do).

    A delivery no longer pending (delivered, failed, replaced) or gone is left alone; one whose endpoint
    is disabled stays pending, to be queued again when it is re-enabled."""
    delivery = Delivery.objects.select_related("event", "endpoint").filter(pk=delivery_id).first()
    if delivery is None or delivery.state != State.PENDING or not delivery.endpoint.enabled:
        return None
    body = event_body(delivery.event)
    started = timezone.now()
    headers = signature_headers(delivery.endpoint, msg_id=delivery.event.public_id, at=started, body=body)
    answer = network.post(delivery.endpoint.url, body, headers)
    return delivery_record(delivery, answer, started=started)


@transaction.atomic
def delivery_record(delivery: Delivery, answer: network.Answer, *, started: datetime) -> datetime | None:
    """Log the attempt, move the delivery and the endpoint's streak on; when to retry, if at all."""
    now = timezone.now()
    ok = answer.status is not None and 200 <= answer.status < 300
    retryable = answer.status is None or answer.status == 429 or answer.status >= 500
    number = delivery.attempts + 1
    Attempt.objects.create(
        workspace_id=delivery.workspace_id, delivery=delivery, endpoint_id=delivery.endpoint_id, number=number,
        started_at=started, status_code=answer.status, duration_ms=answer.duration_ms,
        response_excerpt=answer.excerpt, error=answer.error, ok=ok,
    )
    retry_at = None
    if ok:
        state = State.DELIVERED
    elif retryable and now + (delay := retry_delay(number)) <= delivery.queued_at + _window():
        state, retry_at = State.PENDING, now + delay
    else:
        state = State.FAILED
    Delivery.objects.filter(pk=delivery.pk).update(
        state=state, attempts=number, last_attempt_at=now, delivered_at=now if ok else None
    )
    if ok:
        Endpoint.objects.filter(pk=delivery.endpoint_id).exclude(failures_in_row=0).update(
            failures_in_row=0, failing_since=None
        )
    else:
        # One line per failed attempt: ids, status and error only (never the URL, body or secret).
        logger.warning("webhook attempt failed", extra={
            "endpoint_id": delivery.endpoint_id, "delivery_id": delivery.pk, "event_type": delivery.event.type,
            "attempt": number, "status": answer.status, "error": answer.error,
            "retry_at": iso_utc(retry_at) if retry_at else None,
        })
        _failure_count(delivery.endpoint_id, now=now)
    return retry_at


def _window() -> timedelta:
    return timedelta(hours=settings.WEBHOOK_RETRY_WINDOW_HOURS)


def _failure_count(endpoint_id: int, *, now: datetime) -> None:
    """One more failure in the endpoint's streak; past the limit it is disabled, once, and its owners told."""
    table = Endpoint._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET failures_in_row = failures_in_row + 1, failing_since = COALESCE(failing_since, %s)"
            " WHERE id = %s RETURNING failures_in_row, failing_since",
            [now, endpoint_id],
        )
        failures, since = cursor.fetchone()
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
    body = (
        f"The webhook endpoint {endpoint.url} of {endpoint.workspace.name} was disabled: {endpoint.disabled_reason}.\n\n"
        "Its deliveries wait; nothing new is kept for it until it is enabled again. Once it answers, "
        f"re-enable it with one click on its page:\n{page}\n"
    )
    try:
        return send_mail(f"Webhook endpoint disabled: {endpoint.url}"[:200], body, None, emails)
    except Exception as exc:  # the endpoint stays disabled; the page says so
        logger.warning("webhook disable email not sent", extra={"endpoint_id": endpoint_id, "error": type(exc).__name__})
        return 0
