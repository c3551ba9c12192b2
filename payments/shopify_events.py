"""Shopify's webhooks as the connector reads them: orders/paid and refunds/create (docs/payments.md, "Shopify")."""

import urllib.parse
from collections.abc import Mapping
from decimal import Decimal

from payments.readings import Reading, Unreadable, Unrecordable, currency_of, decimal_amount, json_of, obj, text

SHOPIFY_TOPICS = ("orders/paid", "refunds/create")


def _id(value: object) -> str:
    """One of Shopify's numeric ids (a JSON integer, or its digits as a string)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | str)
        or not str(value).isascii()
        or not str(value).isdigit()
        or len(str(value)) > 30
    ):
        raise Unreadable("an id is not a number")
    return str(value)


def _landing_click(landing_site: str) -> str:
    """`lf_cid` from the order's landing page (`/products/x?lf_cid=...`): the address the tracked link sent."""
    query = urllib.parse.urlsplit(landing_site).query
    return (urllib.parse.parse_qs(query).get("lf_cid") or [""])[0]


def _order_paid(reading: Reading, order: dict) -> None:
    attributes = {text(obj(a).get("name")): obj(a).get("value") for a in order.get("note_attributes") or []}
    reading.click_id = text(attributes.get("lf_cid"), 200) or text(
        _landing_click(text(order.get("landing_site"), 2048)), 200
    )
    customer = obj(order.get("customer"))
    reading.email = text(order.get("email"), 254) or text(customer.get("email"), 254)
    reading.name = " ".join(filter(None, (text(customer.get("first_name")), text(customer.get("last_name")))))[:200]
    reading.customer_ref = _id(customer["id"]) if customer.get("id") is not None else ""
    reading.currency = currency_of(order.get("currency"))  # the shop's currency, which total_price is in
    reading.amount = decimal_amount(order.get("total_price"), reading.currency)
    reading.invoice_id = _id(order["id"])  # the order id: an API sale for the same order names it too
    reading.payment_refs = [reading.invoice_id]
    reading.click_refs = [reading.customer_ref] if reading.customer_ref else []
    reading.action = "sale"


def _refund_created(reading: Reading, refund: dict) -> None:
    """The money a refund returned: its successful refund transactions (a restock alone returns none)."""
    paid_back = [
        obj(t)
        for t in refund.get("transactions") or []
        if obj(t).get("kind") == "refund" and obj(t).get("status") == "success"
    ]
    if not paid_back:
        reading.reason = "no money was refunded"
        return
    currencies = {currency_of(t.get("currency")) for t in paid_back}
    if len(currencies) != 1:
        raise Unrecordable("the refund's transactions are in several currencies")
    reading.currency = currencies.pop()
    total = sum((Decimal(decimal_amount(t.get("amount"), reading.currency)) for t in paid_back), Decimal(0))
    reading.refunds = [(_id(refund["id"]), int(total))]
    reading.payment_refs = [_id(refund["order_id"])]
    reading.action = "refund"


_READERS = {"orders/paid": _order_paid, "refunds/create": _refund_created}


def shopify_read(body: bytes, headers: Mapping[str, str]) -> Reading:
    """The verified body, with its topic and webhook id from the headers, as a Reading."""
    topic, webhook_id = text(headers.get("X-Shopify-Topic"), 100), text(headers.get("X-Shopify-Webhook-Id"))
    if not topic or not webhook_id:
        raise Unreadable("no X-Shopify-Topic or X-Shopify-Webhook-Id header")
    payload = json_of(body)
    if not isinstance(payload, dict) or payload.get("id") is None:
        raise Unreadable("not a Shopify object")
    # An order says whether it is a test; a refund does not (its order's mode decides, payments/services.py).
    test = payload.get("test") is True if topic == "orders/paid" else None
    reading = Reading(event_id=webhook_id, event_type=topic, test=test)
    reader = _READERS.get(topic)
    if reader is None:
        reading.reason = "not a topic the connector reads"
        return reading
    try:
        reader(reading, payload)
    except Unrecordable as error:  # well-formed, but no amount lftrack can store: logged, never retried
        reading.action, reading.reason = "ignore", f"not recorded: {error}"
    except (KeyError, TypeError, AttributeError, ValueError):
        raise Unreadable("not the shape of this topic") from None
    return reading
