"""Stripe's events posted to a real server, signed by Stripe's own library: sales, renewals, refunds, currencies,
test mode, and what is refused."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from clicks.models import Click
from conversions.models import ConversionEvent, Refund
from customers.models import Customer
from payments.models import Delivery, Reference
from rollups.retention import retention_purge
from rollups.services import numbers_roll_up
from tests.factories import ClickFactory, WorkspaceFactory
from tests.payments.providers import (
    checkout_session,
    invoice,
    invoice_payment,
    post,
    refund,
    sid,
    stripe_event,
    stripe_signed,
)
from workspaces.services import workspace_retention_set

pytestmark = pytest.mark.django_db(transaction=True)


def deliver(url, event_type, obj, **kwargs):
    return post(url, *stripe_signed(stripe_event(event_type, obj, **kwargs)))


def subscribe(url, click, *, amount=4900, currency="usd"):
    """A subscription checkout with its first invoice: (customer id, subscription id, first invoice id)."""
    customer, subscription = sid("cus"), sid("sub")
    session = checkout_session(
        mode="subscription",
        amount=amount,
        currency=currency,
        click_id=click.click_id,
        customer=customer,
        subscription=subscription,
    )
    answer = deliver(url, "checkout.session.completed", session)
    assert answer.status_code == 200 and answer.json()["outcome"] == "remembered", answer.content
    first = invoice(
        amount=amount,
        currency=currency,
        customer=customer,
        subscription=subscription,
        billing_reason="subscription_create",
    )
    answer = deliver(url, "invoice.paid", first)
    assert answer.status_code == 200 and answer.json()["outcome"] == "sale", answer.content
    return customer, subscription, first["id"]


def test_a_checkout_then_twelve_renewals_are_attributed_to_the_first_click(stripe_url, click):
    customer, subscription, first = subscribe(stripe_url, click)
    for month in range(12):
        renewal = invoice(amount=4900, customer=customer, subscription=subscription)
        answer = deliver(stripe_url, "invoice.paid", renewal)
        assert answer.status_code == 200
        assert answer.json() == {"outcome": "sale", "sale_id": answer.json()["sale_id"]}, month
    sales = ConversionEvent.objects.filter(event="sale").order_by("pk")
    assert sales.count() == 13  # the checkout itself is no sale: its first invoice is
    assert {s.click_id for s in sales} == {click.pk}
    assert {(s.value_cents, s.currency, s.is_test, s.channel) for s in sales} == {(4900, "USD", False, "api")}
    assert sales[0].invoice_id == first
    customer_row = Customer.objects.get()
    assert customer_row.email == "ada@example.com" and customer_row.external_id == ""  # cus_... is no external_id
    assert {s.customer_id for s in sales} == {customer_row.pk}
    assert Reference.objects.get(kind="customer", ref=customer).customer_id == customer_row.pk


def test_retention_keeps_the_click_a_subscription_came_by_and_its_renewals_are_attributed(stripe_url, click):
    subscribe(stripe_url, click)
    customer, subscription = Reference.objects.get(kind="customer").ref, Reference.objects.get(kind="subscription").ref
    stranger = ClickFactory(link=click.link, workspace=click.workspace)
    long_ago = timezone.now() - timedelta(days=400)  # a yearly plan, a window of 365 days: its sale is past it
    Click.objects.update(created_at=long_ago)
    ConversionEvent.objects.update(occurred_at=long_ago)
    numbers_roll_up()
    workspace_retention_set(workspace=click.workspace, days=365)
    assert retention_purge().clicks == 1
    assert list(Click.objects.values_list("pk", flat=True)) == [click.pk]  # the stranger's went
    answer = deliver(stripe_url, "invoice.paid", invoice(amount=4900, customer=customer, subscription=subscription))
    assert answer.json()["outcome"] == "sale", answer.content
    assert ConversionEvent.objects.get(pk=answer.json()["sale_id"]).click_id == click.pk
    assert stranger.pk not in Click.objects.values_list("pk", flat=True)


def test_the_first_invoice_before_its_checkout_is_recorded_once_when_the_checkout_arrives(stripe_url, click):
    customer, subscription = sid("cus"), sid("sub")
    first = invoice(amount=4900, customer=customer, subscription=subscription, billing_reason="subscription_create")
    early = deliver(stripe_url, "invoice.paid", first)
    assert early.status_code == 200
    assert early.json()["outcome"] == "not_attributed"
    assert "no click remembered" in early.json()["reason"]
    assert ConversionEvent.objects.count() == 0
    session = checkout_session(
        mode="subscription",
        amount=4900,
        click_id=click.click_id,
        customer=customer,
        subscription=subscription,
        invoice=first["id"],
    )
    assert deliver(stripe_url, "checkout.session.completed", session).json()["outcome"] == "remembered"
    sale = ConversionEvent.objects.get()
    assert (sale.invoice_id, sale.click_id, sale.value_cents) == (first["id"], click.pk, 4900)
    played = Delivery.objects.get(event_type="invoice.paid")
    assert (played.outcome, played.conversion_id, played.waiting_for) == ("sale", sale.pk, [])


def test_a_payment_checkout_is_one_sale_and_its_refunds_partial_then_full(stripe_url, click):
    intent = sid("pi")
    session = checkout_session(
        mode="payment", amount=10000, click_id=click.click_id, payment_intent=intent, customer=sid("cus")
    )
    sale_id = deliver(stripe_url, "checkout.session.completed", session).json()["sale_id"]
    partial = deliver(stripe_url, "refund.created", refund(amount=2500, payment_intent=intent))
    assert partial.json()["outcome"] == "refund"
    full = deliver(stripe_url, "refund.created", refund(amount=7500, payment_intent=intent))
    assert full.json()["outcome"] == "refund"
    refunds = Refund.objects.filter(conversion_id=sale_id).order_by("pk")
    assert [(r.amount_cents, r.refund_id.startswith("re_")) for r in refunds] == [(2500, True), (7500, True)]
    too_much = deliver(stripe_url, "refund.created", refund(amount=1, payment_intent=intent))
    assert too_much.json()["outcome"] == "ignored" and "exceeds" in too_much.json()["reason"]


def test_a_renewal_refund_finds_its_invoice_through_invoice_payment_paid(stripe_url, click):
    *_, first = subscribe(stripe_url, click)
    intent = sid("pi")
    linked = deliver(
        stripe_url, "invoice_payment.paid", invoice_payment(invoice_id=first, payment_intent=intent, amount=4900)
    )
    assert linked.json()["outcome"] == "remembered"
    answer = deliver(stripe_url, "refund.created", refund(amount=4900, payment_intent=intent))
    assert answer.json()["outcome"] == "refund"
    assert Refund.objects.get().conversion.invoice_id == first


def test_a_refund_before_its_sale_is_kept_and_applied_when_the_sale_arrives(stripe_url, click):
    intent = sid("pi")
    early = deliver(stripe_url, "refund.created", refund(amount=300, payment_intent=intent))
    assert early.status_code == 200 and early.json()["outcome"] == "waiting"
    assert Refund.objects.count() == 0
    session = checkout_session(mode="payment", amount=1000, click_id=click.click_id, payment_intent=intent)
    sale_id = deliver(stripe_url, "checkout.session.completed", session).json()["sale_id"]
    applied = Refund.objects.get()
    assert (applied.conversion_id, applied.amount_cents) == (sale_id, 300)
    assert Delivery.objects.get(event_type="refund.created").outcome == "refund"


@pytest.mark.parametrize(
    ("currency", "amount", "stored"),
    [("jpy", 4900, (4900, "JPY")), ("kwd", 12345, (12345, "KWD")), ("isk", 490000, (4900, "ISK"))],
)
def test_amounts_are_read_in_each_currencys_minor_unit(stripe_url, click, currency, amount, stored):
    session = checkout_session(
        mode="payment", amount=amount, currency=currency, click_id=click.click_id, payment_intent=sid("pi")
    )
    assert deliver(stripe_url, "checkout.session.completed", session).json()["outcome"] == "sale"
    sale = ConversionEvent.objects.get()
    assert (sale.value_cents, sale.currency) == stored


def test_a_repeated_event_records_one_sale(stripe_url, click):
    event = stripe_event(
        "checkout.session.completed",
        checkout_session(mode="payment", amount=500, click_id=click.click_id, payment_intent=sid("pi")),
    )
    answers = [post(stripe_url, *stripe_signed(event)).json() for _ in range(3)]
    assert answers[0]["outcome"] == "sale"
    assert answers[1:] == [{"outcome": "duplicate", "first_outcome": "sale", "sale_id": answers[0]["sale_id"]}] * 2
    assert ConversionEvent.objects.count() == 1
    assert Delivery.objects.get().repeats == 2


def test_a_test_mode_event_lands_in_test_mode_only(stripe_url, click):
    session = checkout_session(
        mode="payment", amount=700, click_id=click.click_id, payment_intent=sid("pi"), livemode=False
    )
    assert deliver(stripe_url, "checkout.session.completed", session, livemode=False).json()["outcome"] == "sale"
    sale = ConversionEvent.objects.get()
    assert sale.is_test and Customer.objects.get().is_test
    assert not ConversionEvent.objects.filter(is_test=False).exists()


def test_a_bad_signature_and_a_stale_timestamp_are_refused_and_record_nothing(stripe_url, click):
    event = stripe_event(
        "checkout.session.completed",
        checkout_session(mode="payment", amount=500, click_id=click.click_id, payment_intent=sid("pi")),
    )
    body, headers = stripe_signed(event, "whsec_someone_elses")
    bad = post(stripe_url, body, headers)
    assert (bad.status_code, bad.json()) == (400, {"error": "invalid signature"})
    body, headers = stripe_signed(event, timestamp=int(time.time()) - 301)
    stale = post(stripe_url, body, headers)
    assert (stale.status_code, stale.json()) == (400, {"error": "stale timestamp"})
    body, headers = stripe_signed(event)
    tampered = post(stripe_url, body.replace(b'"amount_total": 500', b'"amount_total": 50000'), headers)
    assert tampered.status_code == 400
    unsigned = post(stripe_url, body, {"Content-Type": "application/json"})
    assert (unsigned.status_code, unsigned.json()) == (400, {"error": "no Stripe-Signature header"})
    assert ConversionEvent.objects.count() == 0
    assert list(Delivery.objects.values_list("outcome", "event_id", "body").distinct()) == [("rejected", "", "")]


def test_an_unknown_or_absent_click_is_answered_200_and_logged_not_attributed(stripe_url, acme):
    foreign = ClickFactory(link__post__workspace=WorkspaceFactory(slug="globex"))
    for click_id, reason in [
        ("nope", "unknown click id"),
        (foreign.click_id, "unknown click id"),
        (None, "no click id"),
    ]:
        session = checkout_session(mode="payment", amount=500, click_id=click_id, payment_intent=sid("pi"))
        answer = deliver(stripe_url, "checkout.session.completed", session)
        assert answer.status_code == 200
        assert answer.json()["outcome"] == "not_attributed" and answer.json()["reason"].startswith(reason)
    assert ConversionEvent.objects.count() == 0
    assert Customer.objects.count() == 0


def test_the_click_may_come_from_metadata_and_an_unknown_connection_is_404(live_server, stripe_url, click):
    session = checkout_session(
        mode="payment", amount=500, metadata={"lf_cid": click.click_id}, payment_intent=sid("pi")
    )
    assert deliver(stripe_url, "checkout.session.completed", session).json()["outcome"] == "sale"
    body, headers = stripe_signed(stripe_event("checkout.session.completed", session))
    missing = post(f"{live_server.url}/hooks/payments/{'x' * 32}", body, headers)
    assert (missing.status_code, missing.json()) == (404, {"error": "unknown connection"})


def test_an_api_sale_and_a_connector_sale_of_one_invoice_count_once(stripe_url, click, api, acme_token):
    customer, subscription = sid("cus"), sid("sub")
    deliver(
        stripe_url,
        "checkout.session.completed",
        checkout_session(
            mode="subscription", amount=900, click_id=click.click_id, customer=customer, subscription=subscription
        ),
    )
    paid = invoice(amount=900, customer=customer, subscription=subscription)
    by_api = api.post(
        "/api/v1/conversions",
        {"event": "sale", "click_id": click.click_id, "value_cents": 900, "invoice_id": paid["id"]},
        token=acme_token,
    )
    assert by_api.status_code == 201
    answer = deliver(stripe_url, "invoice.paid", paid)
    assert answer.json()["outcome"] == "duplicate" and answer.json()["sale_id"] == by_api.json()["id"]
    assert ConversionEvent.objects.filter(event="sale").count() == 1


def test_charge_refunded_lists_count_once_with_refund_created(stripe_url, click):
    intent, charge = sid("pi"), sid("ch")
    session = checkout_session(mode="payment", amount=3000, click_id=click.click_id, payment_intent=intent)
    sale_id = deliver(stripe_url, "checkout.session.completed", session).json()["sale_id"]
    first, second = refund(amount=1000, payment_intent=intent, charge=charge), refund(amount=500, payment_intent=intent)
    listed = {
        "id": charge,
        "object": "charge",
        "amount": 3000,
        "amount_refunded": 1500,
        "currency": "usd",
        "payment_intent": intent,
        "refunded": False,
        "refunds": {"object": "list", "data": [first, second], "has_more": False},
    }
    answer = deliver(stripe_url, "charge.refunded", listed).json()  # as API versions before 2022-11-15 send it
    assert answer["outcome"] == "refund" and answer["sale_id"] == sale_id
    again = deliver(stripe_url, "refund.created", first).json()
    assert again == {"outcome": "duplicate", "reason": "refund recorded before", "sale_id": sale_id}
    assert sorted(Refund.objects.values_list("amount_cents", flat=True)) == [500, 1000]
    unlisted = {**listed, "id": sid("ch"), "refunds": None}  # the pinned version lists none
    answer = deliver(stripe_url, "charge.refunded", unlisted).json()
    assert answer["outcome"] == "ignored" and "refund.created records them" in answer["reason"]
