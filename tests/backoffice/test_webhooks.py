"""Webhook endpoints in the back office: owners only, secret once, test event, rotate, re-enable, log, replay."""
import re

import pytest
from django.urls import reverse
from procrastinate.contrib.django.models import ProcrastinateJob

from tests.factories import EndpointFactory
from webhooks.models import Attempt, Delivery, Endpoint, Event
from webhooks.outbox import event_emit
from webhooks.secrets import secret_open

pytestmark = pytest.mark.django_db
ADD = reverse("admin:webhooks_endpoint_add")
LIST = reverse("admin:webhooks_endpoint_changelist")
SECRET_RE = re.compile(r'id="webhook-secret" value="(whsec_[^"]+)"')


def change(endpoint) -> str:
    return reverse("admin:webhooks_endpoint_change", args=[endpoint.pk])


def test_an_owner_creates_an_endpoint_and_sees_its_secret_once(as_alice, acme, public_dns):
    page = as_alice.post(ADD, {"workspace": acme.pk, "url": "https://crm.example.com/hooks",
                               "event_types": ["sale.created", "lead.created"], "description": "CRM"})
    assert page.status_code == 200
    secret = SECRET_RE.search(page.content.decode()).group(1)
    endpoint = Endpoint.objects.get()
    assert secret_open(endpoint.secret) == secret and endpoint.event_types == ["lead.created", "sale.created"]
    assert secret not in as_alice.get(change(endpoint)).content.decode()


def test_a_private_url_is_refused_on_the_form(as_alice, acme, public_dns):
    page = as_alice.post(ADD, {"workspace": acme.pk, "url": "https://10.1.2.3/", "event_types": ["sale.created"]})
    assert "url resolves to a private, loopback or link-local address" in page.content.decode()
    assert not Endpoint.objects.exists()


def test_editors_and_other_workspaces_see_nothing(as_bob, as_charlie, acme):
    endpoint = EndpointFactory(workspace=acme)
    assert as_bob.get(LIST).status_code == 403
    assert as_charlie.get(change(endpoint)).status_code == 302  # "doesn't exist", never the page
    assert as_charlie.post(reverse("admin:webhooks_endpoint_test", args=[endpoint.pk])).status_code == 403
    assert not Event.objects.exists()


def test_send_test_event_queues_it_for_this_endpoint_only(as_alice, acme):
    endpoint, other = EndpointFactory(workspace=acme), EndpointFactory(workspace=acme)
    response = as_alice.post(reverse("admin:webhooks_endpoint_test", args=[endpoint.pk]))
    assert response.status_code == 302
    event = Event.objects.get()
    assert event.type == "webhook.test" and event.data["message"]
    assert list(Delivery.objects.values_list("endpoint_id", flat=True)) == [endpoint.pk] != [other.pk]
    assert ProcrastinateJob.objects.filter(task_name="webhooks.deliver").count() == 1


def test_replay_sends_a_past_event_again_and_the_log_shows_attempts(as_alice, acme):
    endpoint = EndpointFactory(workspace=acme)
    event = Event.objects.get(pk=event_emit(workspace_id=acme.pk, type="customer.created", subject_id=1))
    delivery = Delivery.objects.create(workspace=acme, event=event, endpoint=endpoint, state="failed", attempts=1,
                                       queued_at=event.created_at)
    Attempt.objects.create(workspace=acme, delivery=delivery, endpoint=endpoint, number=1, started_at=event.created_at,
                           status_code=410, duration_ms=12, response_excerpt="gone for good")
    page = as_alice.get(change(endpoint)).content.decode()
    assert "gone for good" in page and "410" in page and event.public_id in page
    as_alice.post(reverse("admin:webhooks_endpoint_replay", args=[endpoint.pk, event.pk]))
    delivery.refresh_from_db()
    assert delivery.state == "pending"
    assert ProcrastinateJob.objects.filter(args={"delivery_id": delivery.pk}).exists()


def test_re_enable_is_one_click_and_rotate_shows_the_new_secret(as_alice, acme):
    endpoint = EndpointFactory(workspace=acme, enabled=False, disabled_reason="20 failed attempts in a row",
                               failures_in_row=20)
    assert "Re-enable" in as_alice.get(change(endpoint)).content.decode()
    as_alice.post(reverse("admin:webhooks_endpoint_enable", args=[endpoint.pk]))
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.failures_in_row == 0
    page = as_alice.post(reverse("admin:webhooks_endpoint_rotate", args=[endpoint.pk]))
    secret = SECRET_RE.search(page.content.decode()).group(1)
    endpoint.refresh_from_db()
    assert secret_open(endpoint.secret) == secret and secret_open(endpoint.previous_secret) == endpoint.secret_clear
