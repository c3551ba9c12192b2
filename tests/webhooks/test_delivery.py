"""Delivery against a real receiver on loopback that verifies every signature with standardwebhooks."""

from collections import defaultdict
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import mail
from django.db import connection
from django.test import Client

from campaigns.complaints import email_event_record
from campaigns.sending import run_pass
from campaigns.services import campaign_lead_add, campaign_pause, enrollment_stop
from campaigns.unsubscribe import unsubscribe
from clicks.links import link_add
from conversions.refunds import refund_record
from conversions.services import conversion_record
from customers.erasure import customer_erase
from customers.services import customer_match
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    LinkFactory,
    MembershipFactory,
    UserFactory,
)
from tests.webhooks.conftest import work
from webhooks.events import EVENT_TYPES
from webhooks.models import Attempt, Delivery, Endpoint, Event
from webhooks.services import endpoint_create, endpoint_enable

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_hooks")]


def hook(workspace, receiver, types=tuple(EVENT_TYPES), path="/hook"):
    issued = endpoint_create(workspace=workspace, url=receiver.url.replace("/hook", path), event_types=list(types))
    receiver.secret = issued.secret
    return issued.endpoint


def test_every_event_type_is_delivered_once_per_endpoint_in_each_customers_order(acme, receiver):
    first, second = hook(acme, receiver, path="/one"), hook(acme, receiver, path="/two")
    secret = receiver.secret
    Endpoint.objects.filter(pk=first.pk).update(
        secret=Endpoint.objects.get(pk=second.pk).secret
    )  # one secret to verify
    receiver.secret = secret
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0, active=True)
    link = LinkFactory(workspace=acme, post__workspace=acme, post__campaign=campaign)
    response = Client().get(f"/l/{link.key}")  # click.created
    click_id = parse_qs(urlsplit(response["Location"]).query)["lf_cid"][0]
    conversion_record(
        workspace=acme,
        channel="api",
        event="lead",
        click_id=click_id,  # customer, lead, enrollment
        customer={"email": "ada@example.com", "external_id": "u1"},
    )
    sold = conversion_record(
        workspace=acme,
        channel="api",
        event="sale",
        click_id=click_id,
        value_cents=4900,
        customer={"email": "ada@example.com"},
    )
    refund_record(workspace=acme, sale_id=sold.pk, amount_cents=900)  # sale.refunded
    customer_match(workspace=acme, channel="api", email="bea@example.com", external_id="u1")  # the id moves to Bea
    run_pass()  # Ada's only email goes: enrollment.completed
    lead = campaign_lead_add(campaign=campaign, email="cid@example.com")
    enrollment_stop(enrollment=lead.enrollment)
    email_event_record(workspace=acme, event_type="bounce", email="dee@example.com")
    email_event_record(workspace=acme, event_type="complaint", email="eve@example.com")
    campaign_lead_add(campaign=campaign, email="fay@example.com")
    unsubscribe(workspace=acme, email="fay@example.com")  # contact.unsubscribed, and her enrollment stops
    campaign_pause(campaign=campaign)
    gus = customer_match(workspace=acme, channel="api", email="gus@example.com").customer
    customer_erase(customer=gus)  # customer.erased

    work()

    events = {e.public_id: e for e in Event.objects.all()}
    assert set(EVENT_TYPES) <= {e.type for e in events.values()}
    for path in ("/one", "/two"):
        got = [(wid, payload) for wid, payload, _, p in receiver.received if p == path]
        assert all(payload is not None for _, payload in got), "every signature verifies"
        assert sorted(wid for wid, _ in got) == sorted(events), "each event once per endpoint"
        by_customer = defaultdict(list)
        for wid, _payload in got:
            by_customer[events[wid].customer_id].append(events[wid].pk)
        for customer_id, order in by_customer.items():
            if customer_id is not None:
                assert order == sorted(order), f"customer {customer_id}'s events arrived out of order"
    sale = next(p for _, p, _, _ in receiver.received if p and p["type"] == "sale.created")
    # the object as the worker built it at dispatch: here after the external id had moved on to Bea
    assert sale["data"]["value_cents"] == 4900 and sale["data"]["customer"]["external_id"] is None
    assert set(sale) == {"id", "type", "timestamp", "test", "data"} and sale["test"] is False
    refunded = next(p for _, p, _, _ in receiver.received if p and p["type"] == "sale.refunded")
    assert (refunded["data"]["id"], refunded["data"]["refunded_cents"], refunded["data"]["net_cents"]) == (
        sold.pk,
        900,
        4000,
    )


def test_a_click_created_body_carries_the_clicks_country_and_utm_fields(acme, receiver):
    hook(acme, receiver, types=["click.created"])
    link = link_add(
        workspace=acme,
        destination="https://shop.example.com/pricing",
        utm={"utm_source": "newsletter", "utm_medium": "", "utm_campaign": "autumn"},
    )
    response = Client().get(
        f"/l/{link.key}",
        REMOTE_ADDR="8.8.8.8",  # a US address (tests/clicks/test_geo.py)
        HTTP_USER_AGENT="Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/126.0.0.0 Safari/537.36",
        HTTP_REFERER="https://news.ycombinator.com/item?id=1",
    )
    click_id = parse_qs(urlsplit(response["Location"]).query)["lf_cid"][0]
    work()
    ((_, payload, _, _),) = receiver.received
    assert payload["type"] == "click.created"
    assert payload["data"] == {
        "id": click_id,
        "link_id": link.pk,
        "post_id": link.post_id,
        "created_at": payload["data"]["created_at"],
        "device": "desktop",
        "browser": "Chrome",
        "os": "Windows",
        "referrer_domain": "news.ycombinator.com",
        "country": "US",
        "city": None,  # no city database here (GEOIP_PATH)
        "utm_source": "newsletter",
        "utm_medium": None,
        "utm_campaign": "autumn",
        "bot": False,
    }


def test_a_receiver_that_fails_three_times_gets_the_event_on_the_fourth_attempt(acme, receiver):
    hook(acme, receiver, types=["customer.created"])
    receiver.script = [500, 500, 500]
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    work()
    ids = [wid for wid, _, _, _ in receiver.received]
    assert len(ids) == 4 and len(set(ids)) == 1  # the same webhook-id every time
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts) == ("delivered", 4)
    log = list(Attempt.objects.order_by("number").values_list("number", "status_code", "ok"))
    assert log == [(1, 500, False), (2, 500, False), (3, 500, False), (4, 200, True)]
    assert Endpoint.objects.get().failures_in_row == 0


def test_a_retrying_customer_holds_back_only_their_own_later_events(acme, receiver):
    """One batch to the endpoint: Ada's first event fails and is retried; her second waits behind it, Bea's goes."""
    hook(acme, receiver, types=["customer.created", "lead.created"])
    failed = []  # Ada's first attempt fails

    def decide(payload):
        if payload and payload["data"].get("email") == "ada@example.com" and not failed:
            failed.append(payload)
            return 500

    receiver.decide = decide
    click = ClickFactory(workspace=acme, link__workspace=acme)
    lead = conversion_record(
        workspace=acme, channel="api", event="lead", click_id=click.click_id, customer={"email": "ada@example.com"}
    )  # customer.created, lead.created: Ada's
    customer_match(workspace=acme, channel="api", email="bea@example.com")
    work()
    got = [(payload["type"], payload["data"].get("email")) for _, payload, _, _ in receiver.received]
    assert got.index(("customer.created", "bea@example.com")) < 3  # not held back by Ada's retry
    adas = [e.public_id for e in Event.objects.filter(customer_id=lead.customer_id).order_by("pk")]
    assert len(adas) == 2
    assert [wid for wid, _, _, _ in receiver.received if wid in adas] == [adas[0], adas[0], adas[1]]
    assert Delivery.objects.filter(state="delivered").count() == Event.objects.count() == 3


def test_a_burst_is_dispatched_and_sent_in_few_jobs(acme, receiver):
    hook(acme, receiver, types=["customer.created"])
    for n in range(30):
        customer_match(workspace=acme, channel="api", email=f"p{n}@example.com")
    work()
    assert sorted(payload["data"]["email"] for _, payload, _, _ in receiver.received) == sorted(
        f"p{n}@example.com" for n in range(30)
    )  # each once
    with connection.cursor() as cursor:
        # The event's jobs only: a periodic job (the sweeper) may run too when work() spans a minute's start.
        cursor.execute(
            "SELECT task_name, count(*) FROM procrastinate_jobs j WHERE status = 'succeeded' AND NOT EXISTS"
            " (SELECT FROM procrastinate_periodic_defers p WHERE p.job_id = j.id) GROUP BY 1"
        )
        ran = dict(cursor.fetchall())
    assert ran == {"webhooks.dispatch": 1, "webhooks.deliver_batch": 1}
    assert Attempt.objects.filter(ok=True).count() == 30


def test_a_slow_receiver_gets_several_customers_at_once_and_each_customer_in_order(acme, receiver):
    hook(acme, receiver, types=["customer.created", "lead.created"])
    receiver.hold = 0.2
    for n in range(8):
        click = ClickFactory(workspace=acme, link__workspace=acme)
        conversion_record(
            workspace=acme,
            channel="api",
            event="lead",
            click_id=click.click_id,
            customer={"email": f"p{n}@example.com"},
        )
    work()
    assert 2 <= receiver.most_at_once <= 4  # the batch's lanes
    customers = {e.public_id: e.customer_id for e in Event.objects.all()}
    arrived = defaultdict(list)
    for wid, payload, _, _ in receiver.received:
        arrived[customers[wid]].append(payload["type"])
    assert len(arrived) == 8 and all(types == ["customer.created", "lead.created"] for types in arrived.values())


def test_a_final_answer_is_not_retried_and_a_redirect_is_not_followed(acme, receiver):
    hook(acme, receiver, types=["customer.created"])
    receiver.script = [404, 302]
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    customer_match(workspace=acme, channel="api", email="bea@example.com")
    work()
    assert len(receiver.received) == 2  # one attempt each; nothing reached the redirect's target
    assert sorted(Delivery.objects.values_list("state", flat=True)) == ["failed", "failed"]


def test_twenty_failures_in_a_row_disable_the_endpoint_and_tell_its_owners(acme, alice, receiver):
    MembershipFactory(user=UserFactory(username="ed", email="ed@example.com"), workspace=acme)  # an editor: not told
    endpoint = hook(acme, receiver, types=["customer.created"])
    receiver.script = [503] * 1000
    for n in range(20):
        customer_match(workspace=acme, channel="api", email=f"p{n}@example.com")
    work()
    endpoint.refresh_from_db()
    # attempts already on their way when the 20th failed are counted too
    assert not endpoint.enabled and endpoint.failures_in_row >= 20
    assert endpoint.disabled_reason.endswith("failed attempts in a row")
    assert len(mail.outbox) == 1 and mail.outbox[0].to == [alice.email]
    assert f"/admin/webhooks/endpoint/{endpoint.pk}/change/" in mail.outbox[0].body
    assert Delivery.objects.filter(state="pending").count() == 20  # kept for when it comes back
    # one click later: the waiting deliveries go, in order, now that the receiver answers
    receiver.script = []
    endpoint_enable(endpoint=endpoint)
    work()
    assert Delivery.objects.filter(state="delivered").count() == 20
    assert len(mail.outbox) == 1


def test_a_rolled_back_conversion_sends_nothing(acme, receiver, acme_token):
    hook(acme, receiver)
    click = ClickFactory(workspace=acme, link__workspace=acme)
    response = Client().post(
        "/api/v1/conversions",
        {"event": "lead", "click_id": click.click_id + "x", "customer": {"email": "a@example.com"}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}",
    )
    assert response.status_code == 422
    work()
    assert receiver.received == [] and not Event.objects.exists()
