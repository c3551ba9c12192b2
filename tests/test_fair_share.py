"""The worker's periodic clean-ups with a noisy neighbour: one workspace's thousands of expired rows never keep
another workspace's from going in the same run (one set-based statement over every workspace; nothing is
processed row by row, so no row can poison a run). docs/concurrency.md, "Fair shares"."""

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.models import Enrollment
from campaigns.tasks import expire_pending
from conversions.models import IdempotencyKey
from conversions.tasks import idempotency_purge
from customers.models import Customer
from payments.models import Connection
from payments.models import Delivery as PaymentDelivery
from payments.tasks import purge as payments_purge
from tests.factories import CampaignFactory, CustomerFactory, EndpointFactory
from webhooks.models import Delivery, Event
from webhooks.tasks import purge

pytestmark = pytest.mark.django_db


def test_one_idempotency_purge_takes_every_workspaces_expired_keys(acme, globex):
    old, fresh = timezone.now() - timedelta(days=2), timezone.now()
    IdempotencyKey.objects.bulk_create(
        IdempotencyKey(workspace=acme, key=f"a{n}", request_digest="x", created_at=old) for n in range(5000)
    )
    IdempotencyKey.objects.create(workspace=globex, key="b-old", request_digest="x", created_at=old)
    IdempotencyKey.objects.create(workspace=globex, key="b-new", request_digest="x", created_at=fresh)

    assert idempotency_purge(timestamp=0) == 5001
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["b-new"]


def test_one_expiry_run_takes_every_workspaces_unconfirmed_enrollments(acme, globex):
    past = timezone.now() - timedelta(minutes=1)
    flooded = CampaignFactory(workspace=acme)
    customers = Customer.objects.bulk_create(
        Customer(workspace=acme, email=f"a{n}@example.com", source="pixel") for n in range(3000)
    )
    Enrollment.objects.bulk_create(
        Enrollment(
            workspace=acme, campaign=flooded, customer=customer, state="pending", enrolled_at=past, confirm_by=past
        )
        for customer in customers
    )
    mine = CampaignFactory(workspace=globex)
    Enrollment.objects.create(
        workspace=globex,
        campaign=mine,
        customer=CustomerFactory(workspace=globex),
        state="pending",
        enrolled_at=past,
        confirm_by=past,
    )

    assert expire_pending(timestamp=0) == 3001
    assert not Enrollment.objects.exists()


def test_one_webhook_purge_takes_every_workspaces_old_events(acme, globex, settings):
    old = timezone.now() - timedelta(days=settings.WEBHOOK_RETENTION_DAYS + 1)
    endpoint = EndpointFactory(workspace=acme)
    events = Event.objects.bulk_create(
        Event(workspace=acme, type="customer.created", subject_id=n, created_at=old) for n in range(2000)
    )
    Delivery.objects.bulk_create(
        Delivery(workspace=acme, event=event, endpoint=endpoint, queued_at=old) for event in events
    )
    Event.objects.create(workspace=globex, type="customer.created", subject_id=1, created_at=old)
    kept = Event.objects.create(workspace=globex, type="customer.created", subject_id=2, created_at=timezone.now())

    purge(timestamp=0)
    assert list(Event.objects.all()) == [kept] and not Delivery.objects.exists()


def test_one_payment_log_purge_takes_every_workspaces_old_deliveries(acme, globex, settings):
    old = timezone.now() - timedelta(days=settings.PAYMENT_LOG_RETENTION_DAYS + 1)
    flooded = Connection.objects.create(workspace=acme, provider="stripe")
    PaymentDelivery.objects.bulk_create(
        PaymentDelivery(workspace=acme, connection=flooded, event_id=f"evt_{n}", outcome="sale", received_at=old)
        for n in range(3000)
    )
    mine = Connection.objects.create(workspace=globex, provider="shopify")
    PaymentDelivery.objects.create(workspace=globex, connection=mine, event_id="old", outcome="sale", received_at=old)
    kept = PaymentDelivery.objects.create(
        workspace=globex, connection=mine, event_id="new", outcome="sale", received_at=timezone.now()
    )

    assert payments_purge(timestamp=0) == 3001
    assert list(PaymentDelivery.objects.all()) == [kept]
