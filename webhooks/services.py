"""Webhook endpoints (create, change, rotate the secret, re-enable, delete), replays and test events."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from lftrack.errors import Unprocessable
from webhooks.events import EVENT_TYPES, TEST_EVENT
from webhooks.models import Delivery, Endpoint, Event
from webhooks.network import url_check
from webhooks.outbox import deliveries_queue
from webhooks.payloads import payload_build
from webhooks.secrets import secret_new, secret_seal
from workspaces.models import Workspace

URL_MAX = 2048
DESCRIPTION_MAX = 200
OVERLAP_MAX_HOURS = 72


@dataclass(frozen=True)
class Issued:
    """An endpoint and its signing secret, in clear this once."""

    endpoint: Endpoint
    secret: str


def _event_types_check(event_types: list[str]) -> list[str]:
    if not event_types:
        raise Unprocessable("event_types must name at least one event type")
    for event_type in event_types:
        if event_type not in EVENT_TYPES:
            raise Unprocessable(f"unknown event type: {event_type}"[:300])
    return sorted(set(event_types))


def _url_check(url: str) -> str:
    if len(url) > URL_MAX:
        raise Unprocessable("url is too long")
    return url_check(url)


@transaction.atomic
def endpoint_create(
    *,
    workspace: Workspace,
    url: str,
    event_types: list[str],
    description: str = "",
    enabled: bool = True,
    test: bool = False,
) -> Issued:
    """A new endpoint with a new secret, shown once. At most WEBHOOK_ENDPOINTS_PER_WORKSPACE per workspace
    (each endpoint multiplies the deliveries every event costs)."""
    event_types = _event_types_check(event_types)
    if len(description) > DESCRIPTION_MAX:
        raise Unprocessable("description is too long")
    _url_check(url)
    # The workspace row serialises creations, so two concurrent ones cannot both pass the cap.
    Workspace.objects.select_for_update(no_key=True).filter(pk=workspace.pk).exists()
    if Endpoint.objects.filter(workspace=workspace).count() >= settings.WEBHOOK_ENDPOINTS_PER_WORKSPACE:
        raise Unprocessable(f"a workspace has at most {settings.WEBHOOK_ENDPOINTS_PER_WORKSPACE} webhook endpoints")
    secret = secret_new()
    endpoint = Endpoint.objects.create(
        workspace=workspace,
        url=url,
        event_types=event_types,
        description=description,
        enabled=enabled,
        test=test,
        secret=secret_seal(secret),
    )
    return Issued(endpoint, secret)


@transaction.atomic
def endpoint_update(
    *,
    endpoint: Endpoint,
    url: str | None = None,
    event_types: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> Endpoint:
    """Change what is given. Enabling a disabled endpoint is `endpoint_enable`."""
    endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    if url is not None:
        endpoint.url = _url_check(url)
    if event_types is not None:
        endpoint.event_types = _event_types_check(event_types)
    if description is not None:
        if len(description) > DESCRIPTION_MAX:
            raise Unprocessable("description is too long")
        endpoint.description = description
    if enabled is False and endpoint.enabled:
        endpoint.enabled = False
        endpoint.disabled_at = timezone.now()
        endpoint.disabled_reason = "disabled by hand"
    endpoint.save()
    if enabled and not endpoint.enabled:
        return endpoint_enable(endpoint=endpoint)
    return endpoint


@transaction.atomic
def endpoint_enable(*, endpoint: Endpoint) -> Endpoint:
    """Re-enable (one click): the failure streak starts over and the deliveries left pending when it was
    disabled are queued again, in their order; events that came meanwhile were not kept for it."""
    endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    if endpoint.enabled:
        return endpoint
    endpoint.enabled = True
    endpoint.disabled_at = None
    endpoint.disabled_reason = ""
    endpoint.failures_in_row = 0
    endpoint.failing_since = None
    endpoint.save()
    now = timezone.now()
    pending = list(
        Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.PENDING)
        .order_by("event_id")
        .values_list("pk", "event__customer_id")
    )
    Delivery.objects.filter(pk__in=[pk for pk, _ in pending]).update(queued_at=now)
    deliveries_queue([(pk, endpoint.pk, customer_id) for pk, customer_id in pending])
    return endpoint


@transaction.atomic
def endpoint_secret_rotate(*, endpoint: Endpoint, overlap_hours: int | None = None) -> Issued:
    """A new secret, shown once; the old one goes on signing beside it for `overlap_hours` (default
    WEBHOOK_SECRET_OVERLAP_HOURS; 0 retires it at once, for a leaked secret)."""
    if overlap_hours is None:
        overlap_hours = settings.WEBHOOK_SECRET_OVERLAP_HOURS
    if not 0 <= overlap_hours <= OVERLAP_MAX_HOURS:
        raise Unprocessable(f"overlap_hours must be 0 to {OVERLAP_MAX_HOURS}")
    endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = secret_new()
    endpoint.previous_secret = endpoint.secret if overlap_hours else ""
    endpoint.previous_secret_expires_at = timezone.now() + timedelta(hours=overlap_hours) if overlap_hours else None
    endpoint.secret = secret_seal(secret)
    endpoint.save()
    return Issued(endpoint, secret)


@transaction.atomic
def endpoint_delete(*, endpoint: Endpoint) -> None:
    """Gone with its deliveries and log; jobs still queued for it find nothing and end."""
    Endpoint.objects.filter(pk=endpoint.pk).delete()


@transaction.atomic
def event_replay(*, event: Event, endpoint: Endpoint) -> Delivery:
    """Send a past event of the endpoint's workspace to it again, as it was first sent (same id and body).
    A delivery already queued is left as it is."""
    if event.workspace_id != endpoint.workspace_id or event.test != endpoint.test:
        raise Unprocessable("unknown event")
    delivery, created = Delivery.objects.select_for_update().get_or_create(
        event=event,
        endpoint=endpoint,
        defaults={"workspace_id": endpoint.workspace_id, "queued_at": timezone.now()},
    )
    if created or delivery.state != Delivery.State.PENDING:
        Delivery.objects.filter(pk=delivery.pk).update(state=Delivery.State.PENDING, queued_at=timezone.now())
        deliveries_queue([(delivery.pk, endpoint.pk, event.customer_id)])
    return delivery


@transaction.atomic
def endpoint_test_send(*, endpoint: Endpoint) -> Event:
    """A `webhook.test` event to this endpoint only, whatever it subscribes to."""
    now = timezone.now()
    event = Event(
        workspace_id=endpoint.workspace_id,
        type=TEST_EVENT,
        test=endpoint.test,
        subject_id=endpoint.pk,
        created_at=now,
        dispatched_at=now,
    )
    event.data = payload_build(event)
    event.save()
    event_replay(event=event, endpoint=endpoint)
    return event
