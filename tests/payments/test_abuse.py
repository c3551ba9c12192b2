"""Strange bodies, even correctly signed, are a clear 4xx or a logged 200, never a 500, and record nothing."""

import base64
import hashlib
import hmac
import json
import time

import pytest

from conversions.models import ConversionEvent
from payments.models import Delivery
from tests.payments.providers import (
    SHOPIFY_SECRET,
    STRIPE_SECRET,
    checkout_session,
    post,
    shopify_order,
    shopify_signed,
    sid,
    stripe_event,
    stripe_signed,
)

pytestmark = pytest.mark.django_db(transaction=True)


def stripe_raw(body: bytes) -> tuple[bytes, dict]:
    """`body` signed as Stripe signs: over the text, so a body that is not UTF-8 cannot even be signed by it."""
    now = int(time.time())
    digest = hmac.new(STRIPE_SECRET.encode(), f"{now}.".encode() + body, hashlib.sha256).hexdigest()
    return body, {"Stripe-Signature": f"t={now},v1={digest}"}


def shopify_raw(body: bytes, topic: str = "orders/paid") -> tuple[bytes, dict]:
    digest = base64.b64encode(hmac.new(SHOPIFY_SECRET.encode(), body, hashlib.sha256).digest()).decode()
    return body, {"X-Shopify-Hmac-Sha256": digest, "X-Shopify-Topic": topic, "X-Shopify-Webhook-Id": "w-1"}


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 200_000 + b"]" * 200_000,  # nested past the parser's depth
        json.dumps({"object": "event"}).encode(),  # no id, no type
        json.dumps([1, 2]).encode(),
        b"not json at all",
    ],
    ids=["nested", "no-id", "array", "text"],
)
def test_signed_but_unreadable_stripe_bodies_are_400(stripe_url, body):
    answer = post(stripe_url, *stripe_raw(body))
    assert (answer.status_code, answer.json()) == (400, {"error": "invalid payload"})
    assert Delivery.objects.get().outcome == "rejected"


def test_a_body_that_is_not_utf8_is_refused(stripe_url, shopify_url):
    utf16 = json.dumps({"id": 1}).encode("utf-16")
    assert post(stripe_url, *stripe_raw(utf16)).status_code == 400
    assert post(shopify_url, *shopify_raw(utf16)).json() == {"error": "invalid payload"}


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"amount_total": 49.5}, 400),  # a float is no amount in a minor unit
        ({"amount_total": "4900"}, 400),
        ({"amount_total": -1}, 400),
        ({"amount_total": 2**63}, 200),  # over the money bound: logged, not recorded
        ({"currency": "zzz"}, 200),
        ({"client_reference_id": "abc\u0000def"}, 200),  # NUL: an unknown click, not a database error
        ({"client_reference_id": "x" * 5000}, 200),
        ({"customer_details": "not an object"}, 200),
    ],
)
def test_odd_stripe_fields_are_answered_without_a_500(stripe_url, click, change, status):
    session = {
        **checkout_session(mode="payment", amount=100, click_id=click.click_id, payment_intent=sid("pi")),
        **change,
    }
    answer = post(stripe_url, *stripe_signed(stripe_event("checkout.session.completed", session)))
    assert answer.status_code == status, answer.content
    if status == 200 and "customer_details" not in change:
        assert answer.json()["outcome"] in ("ignored", "not_attributed")
        assert ConversionEvent.objects.count() == 0


@pytest.mark.parametrize(
    "order_id", [{"nested": 1}, "12a", -5, True, "١٢٣"], ids=["object", "letters", "negative", "bool", "arabic-digits"]
)
def test_an_odd_shopify_order_id_is_400(shopify_url, click, order_id):
    order = {**shopify_order(order_id=1, total="1.00", landing_site=f"/?lf_cid={click.click_id}"), "id": order_id}
    answer = post(shopify_url, *shopify_signed(order, "orders/paid"))
    assert (answer.status_code, answer.json()) == (400, {"error": "invalid payload"})


def test_shopify_without_its_topic_header_and_other_topics(shopify_url):
    body, headers = shopify_signed({"id": 5}, "orders/paid")
    del headers["X-Shopify-Topic"]
    assert post(shopify_url, body, headers).status_code == 400
    answer = post(shopify_url, *shopify_signed({"id": 5}, "customers/create"))
    assert answer.json() == {"outcome": "ignored", "reason": "not a topic the connector reads"}


def test_a_stripe_event_the_connector_does_not_read_is_ignored(stripe_url):
    answer = post(stripe_url, *stripe_signed(stripe_event("payment_intent.created", {"id": sid("pi")})))
    assert answer.json() == {"outcome": "ignored", "reason": "not an event the connector reads"}
