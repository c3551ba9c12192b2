""" "Send a test event": a sample of the provider's own shape, signed with the connection's secret and received
through the same verification and recording as the provider's deliveries (payments/services.py)."""

import json
import secrets
import time
from decimal import Decimal

from clicks.models import Click
from lftrack.currencies import MINOR_UNITS
from lftrack.errors import Unprocessable
from payments.connections import connection_secrets
from payments.models import Connection, Delivery
from payments.services import hook_receive
from payments.signatures import shopify_sign, stripe_sign
from payments.stripe_events import STRIPE_API_VERSION

SAMPLE_AMOUNT = 1000  # in the workspace currency's minor unit


def _stripe_sample(click_id: str | None, currency: str) -> tuple[dict, dict]:
    now = int(time.time())
    session = {
        "id": f"cs_test_{secrets.token_hex(12)}",
        "object": "checkout.session",
        "amount_subtotal": SAMPLE_AMOUNT,
        "amount_total": SAMPLE_AMOUNT,
        "client_reference_id": click_id,
        "created": now,
        "currency": currency.lower(),
        "customer": None,
        "customer_details": {"email": "test-buyer@example.com", "name": "Test Buyer"},
        "invoice": None,
        "livemode": False,
        "metadata": {},
        "mode": "payment",
        "payment_intent": f"pi_test_{secrets.token_hex(12)}",
        "payment_status": "paid",
        "status": "complete",
    }
    event = {
        "id": f"evt_test_{secrets.token_hex(12)}",
        "object": "event",
        "api_version": STRIPE_API_VERSION,
        "created": now,
        "data": {"object": session},
        "livemode": False,  # a test-mode sale: kept out of every number
        "type": "checkout.session.completed",
    }
    return event, {}


def _shopify_sample(click_id: str | None, currency: str) -> tuple[dict, dict]:
    order_id = secrets.randbelow(10**15) + 10**15
    total = str(Decimal(SAMPLE_AMOUNT).scaleb(-MINOR_UNITS[currency]))
    order = {
        "id": order_id,
        "currency": currency,
        "email": "test-buyer@example.com",
        "landing_site": f"/?lf_cid={click_id}" if click_id else "/",
        "note_attributes": [],
        "test": True,  # a test order: kept out of every number
        "total_price": total,
        "customer": {"id": order_id + 1, "email": "test-buyer@example.com", "first_name": "Test", "last_name": "Buyer"},
    }
    headers = {"X-Shopify-Topic": "orders/paid", "X-Shopify-Webhook-Id": f"lftrack-test-{secrets.token_hex(12)}"}
    return order, headers


def connection_test_send(*, connection: Connection) -> Delivery:
    """A test-mode sale on the workspace's latest click (or, with no click yet, one that is not attributed),
    signed with the connection's secret: it shows in the log like the provider's own deliveries."""
    found = connection_secrets(connection)
    if not found:
        raise Unprocessable("paste the provider's signing secret first")
    click_id = (
        Click.objects.filter(workspace_id=connection.workspace_id).order_by("-pk").values_list("click_id", flat=True)
    ).first()
    currency = connection.workspace.currency
    if connection.provider == Connection.Provider.STRIPE:
        payload, headers = _stripe_sample(click_id, currency)
        body = json.dumps(payload, indent=2).encode()
        headers["Stripe-Signature"] = stripe_sign(body, found[0])
    else:
        payload, headers = _shopify_sample(click_id, currency)
        body = json.dumps(payload).encode()
        headers["X-Shopify-Hmac-Sha256"] = shopify_sign(body, found[0])
    return hook_receive(connection=connection, body=body, headers=headers)
