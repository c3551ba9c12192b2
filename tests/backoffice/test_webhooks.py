"""Webhook endpoints in the back office: owners only, secret once, test event, rotate, re-enable, log, replay; a
form sent twice (a reload of its answer, a double click) acts once."""

import re
import socket
import threading
import time

import pytest
from django.test import Client
from django.urls import reverse
from procrastinate.contrib.django.models import ProcrastinateJob

from tests.conftest import form_of
from tests.factories import EndpointFactory
from webhooks.models import Attempt, Delivery, Endpoint, Event
from webhooks.outbox import event_emit
from webhooks.secrets import secret_open

pytestmark = pytest.mark.django_db
ADD = reverse("admin:webhooks_endpoint_add")
LIST = reverse("admin:webhooks_endpoint_changelist")
SECRET_RE = re.compile(r'id="webhook-secret" value="(whsec_[^"]+)"')
NONCE_RE = re.compile(r'name="nonce" value="([^"]+)"')


def change(endpoint) -> str:
    return reverse("admin:webhooks_endpoint_change", args=[endpoint.pk])


def test_an_owner_creates_an_endpoint_and_sees_its_secret_once(as_alice, acme, public_dns):
    page = as_alice.post(
        ADD,
        form_of(
            as_alice,
            ADD,
            workspace=acme.pk,
            url="https://crm.example.com/hooks",
            event_types=["sale.created", "lead.created"],
            description="CRM",
        ),
    )
    assert page.status_code == 200
    secret = SECRET_RE.search(page.content.decode()).group(1)
    endpoint = Endpoint.objects.get()
    assert secret_open(endpoint.secret) == secret and endpoint.event_types == ["lead.created", "sale.created"]
    assert secret not in as_alice.get(change(endpoint)).content.decode()


def test_a_private_url_is_refused_on_the_form_and_corrected_it_creates(as_alice, acme, public_dns):
    page = as_alice.post(
        ADD, form_of(as_alice, ADD, workspace=acme.pk, url="https://10.1.2.3/", event_types=["sale.created"])
    )
    assert "url resolves to a private, loopback or link-local address" in page.content.decode()
    assert not Endpoint.objects.exists()
    fresh = NONCE_RE.search(page.content.decode()).group(1)  # the refused form comes back ready to send again
    page = as_alice.post(
        ADD, {"nonce": fresh, "workspace": acme.pk, "url": "https://crm.example.com/", "event_types": ["sale.created"]}
    )
    assert SECRET_RE.search(page.content.decode()) and Endpoint.objects.count() == 1


def test_sending_the_create_form_twice_makes_one_endpoint(as_alice, acme, public_dns):
    """A reload of the page that shows the secret sends the same POST again; so does the back button."""
    data = form_of(as_alice, ADD, workspace=acme.pk, url="https://crm.example.com/hooks", event_types=["sale.created"])
    first = as_alice.post(ADD, data)
    assert SECRET_RE.search(first.content.decode())
    again = as_alice.post(ADD, data, follow=True)
    assert again.redirect_chain == [(LIST, 302)] and "This form was already sent" in again.content.decode()
    assert not SECRET_RE.search(again.content.decode())
    assert Endpoint.objects.count() == 1


def test_a_form_without_its_nonce_or_with_a_made_up_one_makes_nothing(as_alice, acme, public_dns):
    data = {"workspace": acme.pk, "url": "https://crm.example.com/hooks", "event_types": ["sale.created"]}
    assert "This field is required" in as_alice.post(ADD, data).content.decode()
    assert as_alice.post(ADD, {**data, "nonce": "made-up"}).status_code == 302
    assert not Endpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_double_click_makes_one_endpoint(alice, acme, public_dns, monkeypatch):
    """Two POSTs of one form at once: both read the session before either saved it; one endpoint comes of them."""
    from tests.backoffice.conftest import client_for

    first = client_for(alice)
    second = Client()
    second.cookies = first.cookies
    data = form_of(first, ADD, workspace=acme.pk, url="https://crm.example.com/hooks", event_types=["sale.created"])
    resolve = socket.getaddrinfo  # public_dns's

    def slow(*args, **kwargs):  # the URL check resolving the host takes a while
        time.sleep(0.5)
        return resolve(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    answers = []
    threads = [
        threading.Thread(target=lambda c=c: answers.append(c.post(ADD, data).status_code)) for c in (first, second)
    ]
    threads[0].start()
    time.sleep(0.1)
    threads[1].start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [200, 302] and Endpoint.objects.count() == 1


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
    delivery = Delivery.objects.create(
        workspace=acme, event=event, endpoint=endpoint, state="failed", attempts=1, queued_at=event.created_at
    )
    Attempt.objects.create(
        workspace=acme,
        delivery=delivery,
        endpoint=endpoint,
        number=1,
        started_at=event.created_at,
        status_code=410,
        duration_ms=12,
        response_excerpt="gone for good",
    )
    page = as_alice.get(change(endpoint)).content.decode()
    assert "gone for good" in page and "410" in page and event.public_id in page
    as_alice.post(reverse("admin:webhooks_endpoint_replay", args=[endpoint.pk, event.pk]))
    delivery.refresh_from_db()
    assert delivery.state == "pending"
    assert ProcrastinateJob.objects.filter(args={"delivery_id": delivery.pk}).exists()


def test_re_enable_is_one_click_and_rotate_shows_the_new_secret(as_alice, acme):
    endpoint = EndpointFactory(
        workspace=acme, enabled=False, disabled_reason="20 failed attempts in a row", failures_in_row=20
    )
    assert "Re-enable" in as_alice.get(change(endpoint)).content.decode()
    as_alice.post(reverse("admin:webhooks_endpoint_enable", args=[endpoint.pk]))
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.failures_in_row == 0
    rotate = reverse("admin:webhooks_endpoint_rotate", args=[endpoint.pk])
    data = form_of(as_alice, rotate, overlap_hours=24)
    page = as_alice.post(rotate, data)
    secret = SECRET_RE.search(page.content.decode()).group(1)
    endpoint.refresh_from_db()
    assert secret_open(endpoint.secret) == secret and secret_open(endpoint.previous_secret) == endpoint.secret_clear
    again = as_alice.post(rotate, data)  # a reload of the page showing the new secret
    assert again.status_code == 302 and again.url == change(endpoint)
    endpoint.refresh_from_db()  # the receiver's old secret still signs, beside the one shown
    assert secret_open(endpoint.secret) == secret and secret_open(endpoint.previous_secret) == endpoint.secret_clear


def test_a_rotation_can_retire_the_old_secret_at_once(as_alice, acme):
    endpoint = EndpointFactory(workspace=acme)
    rotate = reverse("admin:webhooks_endpoint_rotate", args=[endpoint.pk])
    assert 'id="endpoint-rotate"' in as_alice.get(change(endpoint)).content.decode()
    as_alice.post(rotate, form_of(as_alice, rotate, overlap_hours=0))
    endpoint.refresh_from_db()
    assert endpoint.previous_secret == "" and endpoint.previous_secret_expires_at is None
