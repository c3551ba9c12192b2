"""Connector sales and refunds are sales and refunds like the API's: the same webhook events out, the same numbers
per currency; and one workspace's flood of deliveries leaves another's connection answering."""

import pytest
from django.test import override_settings

from payments.connections import connection_create
from tests.factories import ClickFactory, EndpointFactory, WorkspaceFactory
from tests.payments.conftest import hook_url
from tests.payments.providers import STRIPE_SECRET, checkout_session, post, refund, sid, stripe_event, stripe_signed
from webhooks.models import Event

pytestmark = pytest.mark.django_db(transaction=True)


def test_connector_sales_emit_webhooks_and_count_in_the_numbers_per_currency(api, acme, acme_token, stripe_url, click):
    EndpointFactory(workspace=acme)
    usd, jpy = sid("pi"), sid("pi")
    for intent, amount, currency in ((usd, 10000, "usd"), (jpy, 5000, "jpy")):
        session = checkout_session(
            mode="payment", amount=amount, currency=currency, click_id=click.click_id, payment_intent=intent
        )
        assert post(stripe_url, *stripe_signed(stripe_event("checkout.session.completed", session))).status_code == 200
    assert post(stripe_url, *stripe_signed(stripe_event("refund.created", refund(amount=2500, payment_intent=usd))))
    assert sorted(Event.objects.values_list("type", flat=True)) == [
        "customer.created",
        "sale.created",
        "sale.created",
        "sale.refunded",
    ]
    total = api.get("/api/v1/analytics", token=acme_token).json()["total"]
    assert total["sales"] == 2
    assert total["revenue"] == [
        {"currency": "JPY", "sales": 1, "gross_cents": 5000, "refunded_cents": 0, "net_cents": 5000},
        {"currency": "USD", "sales": 1, "gross_cents": 10000, "refunded_cents": 2500, "net_cents": 7500},
    ]


def test_a_flooding_connection_is_limited_alone(live_server, stripe_url, click):
    globex = WorkspaceFactory(slug="globex")
    theirs = connection_create(workspace=globex, provider="stripe", signing_secret=STRIPE_SECRET).connection
    their_click = ClickFactory(link__post__workspace=globex)
    with override_settings(RATELIMIT_PAYMENT_HOOKS="5/m"):
        flood = [
            post(stripe_url, *stripe_signed(stripe_event("customer.created", {"id": sid("cus")}))) for _ in range(6)
        ]
        assert [a.status_code for a in flood] == [200] * 5 + [429]
        assert flood[-1].json() == {"error": "rate_limited"} and int(flood[-1].headers["Retry-After"]) >= 1
        session = checkout_session(mode="payment", amount=100, click_id=their_click.click_id, payment_intent=sid("pi"))
        theirs_answer = post(
            hook_url(live_server, theirs), *stripe_signed(stripe_event("checkout.session.completed", session))
        )
        assert theirs_answer.json()["outcome"] == "sale"


def test_refused_deliveries_are_limited_per_address(live_server, stripe_url):
    with override_settings(RATELIMIT_PAYMENT_HOOK_FAILURES_IP="3/m"):
        answers = [post(f"{live_server.url}/hooks/payments/{'y' * 32}", b"{}", {}) for _ in range(4)]
        assert [a.status_code for a in answers] == [404, 404, 404, 429]
        body, headers = stripe_signed(stripe_event("customer.created", {"id": sid("cus")}), "whsec_wrong")
        assert post(stripe_url, body, headers).status_code == 429  # the address is out of tries for a while


def test_a_body_over_the_limit_is_413_before_it_is_read(stripe_url):
    answer = post(stripe_url, b"x" * (1024 * 1024 + 1), {"Content-Type": "application/json"})
    assert (answer.status_code, answer.json()) == (413, {"error": "request too large"})


def test_forged_deliveries_do_not_spend_the_connections_budget(stripe_url, click):
    with override_settings(RATELIMIT_PAYMENT_HOOKS="5/m", RATELIMIT_PAYMENT_HOOK_FAILURES_IP="1000/m"):
        forged = [
            post(stripe_url, *stripe_signed(stripe_event("customer.created", {"id": sid("cus")}), "whsec_x"))
            for _ in range(10)
        ]
        assert {a.status_code for a in forged} == {400}
        session = checkout_session(mode="payment", amount=100, click_id=click.click_id, payment_intent=sid("pi"))
        real = post(stripe_url, *stripe_signed(stripe_event("checkout.session.completed", session)))
        assert real.json()["outcome"] == "sale"
