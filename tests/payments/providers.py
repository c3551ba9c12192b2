"""Provider payloads as the providers send them (the shapes of Stripe's API at the pinned version and of Shopify's
webhooks), signed with each provider's scheme: Stripe's through its own library's signing helper."""

import base64
import hashlib
import hmac
import itertools
import json
import time

import requests
import stripe

from payments.stripe_events import STRIPE_API_VERSION

STRIPE_SECRET = "whsec_test_4eC39HqLyjWDarjtT1zdp7dc"
SHOPIFY_SECRET = "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"
_ids = itertools.count(1000)


def sid(prefix: str) -> str:
    """A Stripe-like id: `cus_`, `sub_`, `in_`, ... and 24 characters."""
    return f"{prefix}_{next(_ids):0>24}"


def stripe_event(event_type: str, obj: dict, *, livemode: bool = True, event_id: str | None = None) -> dict:
    return {
        "id": event_id or sid("evt"),
        "object": "event",
        "api_version": STRIPE_API_VERSION,
        "created": int(time.time()),
        "data": {"object": obj},
        "livemode": livemode,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }


def checkout_session(
    *,
    mode: str,
    amount: int,
    currency: str = "usd",
    click_id: str | None = None,
    metadata: dict | None = None,
    customer: str | None = None,
    subscription: str | None = None,
    payment_intent: str | None = None,
    invoice: str | None = None,
    email: str = "ada@example.com",
    name: str = "Ada Lovelace",
    payment_status: str = "paid",
    livemode: bool = True,
) -> dict:
    now = int(time.time())
    return {
        "id": sid("cs_live" if livemode else "cs_test"),
        "object": "checkout.session",
        "amount_subtotal": amount,
        "amount_total": amount,
        "cancel_url": None,
        "client_reference_id": click_id,
        "created": now,
        "currency": currency,
        "customer": customer,
        "customer_creation": "always",
        "customer_details": {
            "address": {
                "city": None,
                "country": "GB",
                "line1": None,
                "line2": None,
                "postal_code": None,
                "state": None,
            },
            "email": email,
            "name": name,
            "phone": None,
            "tax_exempt": "none",
            "tax_ids": [],
        },
        "customer_email": None,
        "expires_at": now + 86400,
        "invoice": invoice,
        "livemode": livemode,
        "metadata": metadata or {},
        "mode": mode,
        "payment_intent": payment_intent,
        "payment_link": None,
        "payment_method_types": ["card"],
        "payment_status": payment_status,
        "status": "complete",
        "subscription": subscription,
        "success_url": "https://shop.example.com/thanks",
        "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
        "ui_mode": "hosted",
        "url": None,
    }


def invoice(
    *,
    amount: int,
    customer: str,
    subscription: str | None,
    billing_reason: str = "subscription_cycle",
    currency: str = "usd",
    email: str = "ada@example.com",
    livemode: bool = True,
    subscription_metadata: dict | None = None,
    invoice_id: str | None = None,
) -> dict:
    now = int(time.time())
    parent = None
    if subscription:
        parent = {
            "quote_details": None,
            "subscription_details": {"metadata": subscription_metadata or {}, "subscription": subscription},
            "type": "subscription_details",
        }
    return {
        "id": invoice_id or sid("in"),
        "object": "invoice",
        "account_country": "GB",
        "amount_due": amount,
        "amount_paid": amount,
        "amount_remaining": 0,
        "attempt_count": 1,
        "attempted": True,
        "billing_reason": billing_reason,
        "collection_method": "charge_automatically",
        "created": now,
        "currency": currency,
        "customer": customer,
        "customer_email": email,
        "customer_name": "Ada Lovelace",
        "livemode": livemode,
        "metadata": {},
        "parent": parent,
        "period_end": now,
        "period_start": now - 30 * 86400,
        "status": "paid",
        "status_transitions": {"paid_at": now, "finalized_at": now},
        "subtotal": amount,
        "total": amount,
        "lines": {"object": "list", "data": [], "has_more": False, "url": "/v1/invoices/in_x/lines"},
    }


def invoice_payment(*, invoice_id: str, payment_intent: str, amount: int, currency: str = "usd", livemode=True) -> dict:
    now = int(time.time())
    return {
        "id": sid("inpay"),
        "object": "invoice_payment",
        "amount_paid": amount,
        "amount_requested": amount,
        "created": now,
        "currency": currency,
        "invoice": invoice_id,
        "is_default": True,
        "livemode": livemode,
        "payment": {"type": "payment_intent", "payment_intent": payment_intent},
        "status": "paid",
        "status_transitions": {"canceled_at": None, "paid_at": now},
    }


def refund(*, amount: int, payment_intent: str, charge: str | None = None, currency: str = "usd") -> dict:
    return {
        "id": sid("re"),
        "object": "refund",
        "amount": amount,
        "balance_transaction": sid("txn"),
        "charge": charge or sid("ch"),
        "created": int(time.time()),
        "currency": currency,
        "metadata": {},
        "payment_intent": payment_intent,
        "reason": "requested_by_customer",
        "receipt_number": None,
        "status": "succeeded",
    }


def stripe_signed(event: dict, secret: str = STRIPE_SECRET, *, timestamp: int | None = None) -> tuple[bytes, dict]:
    """(body, headers) as Stripe posts them, the header made by the stripe package's own helper."""
    body = json.dumps(event, indent=2)  # Stripe sends pretty-printed JSON; the signature covers the exact bytes
    header = stripe.WebhookSignature.generate_signature_header(body, secret, timestamp)
    return body.encode(), {"Stripe-Signature": header, "Content-Type": "application/json; charset=utf-8"}


def shopify_order(
    *,
    order_id: int,
    total: str,
    currency: str = "USD",
    landing_site: str | None = None,
    note_attributes: list | None = None,
    test: bool = False,
    email: str = "grace@example.com",
) -> dict:
    return {
        "id": order_id,
        "admin_graphql_api_id": f"gid://shopify/Order/{order_id}",
        "buyer_accepts_marketing": False,
        "confirmed": True,
        "created_at": "2026-11-20T10:00:00-05:00",
        "currency": currency,
        "current_total_price": total,
        "email": email,
        "financial_status": "paid",
        "landing_site": landing_site,
        "name": f"#{order_id % 10000}",
        "note": None,
        "note_attributes": note_attributes or [],
        "order_number": order_id % 10000,
        "presentment_currency": currency,
        "processed_at": "2026-11-20T10:00:00-05:00",
        "referring_site": "https://www.example.org/",
        "subtotal_price": total,
        "test": test,
        "total_price": total,
        "total_tax": "0.00",
        "customer": {"id": order_id + 7, "email": email, "first_name": "Grace", "last_name": "Hopper"},
        "line_items": [{"id": order_id + 1, "price": total, "quantity": 1, "title": "Notebook"}],
    }


def shopify_refund(*, refund_id: int, order_id: int, amounts: list[str], currency: str = "USD") -> dict:
    return {
        "id": refund_id,
        "admin_graphql_api_id": f"gid://shopify/Refund/{refund_id}",
        "created_at": "2026-11-21T10:00:00-05:00",
        "note": "damaged",
        "order_id": order_id,
        "processed_at": "2026-11-21T10:00:00-05:00",
        "restock": False,
        "refund_line_items": [],
        "transactions": [
            {
                "id": refund_id + i + 1,
                "amount": amount,
                "currency": currency,
                "gateway": "bogus",
                "kind": "refund",
                "order_id": order_id,
                "status": "success",
            }
            for i, amount in enumerate(amounts)
        ],
    }


def shopify_signed(payload: dict, topic: str, *, webhook_id: str | None = None, secret: str = SHOPIFY_SECRET):
    body = json.dumps(payload).encode()
    digest = base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()
    headers = {
        "Content-Type": "application/json",
        "X-Shopify-Topic": topic,
        "X-Shopify-Hmac-Sha256": digest,
        "X-Shopify-Shop-Domain": "acme.myshopify.com",
        "X-Shopify-Webhook-Id": webhook_id or f"b54557e4-bdd9-4b37-8a5f-{next(_ids):012d}",
        "X-Shopify-Triggered-At": "2026-11-20T15:00:00.000Z",
        "X-Shopify-API-Version": "2025-10",
    }
    return body, headers


def post(url: str, body: bytes, headers: dict) -> requests.Response:
    return requests.post(url, data=body, headers=headers, timeout=30)
