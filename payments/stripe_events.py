"""Stripe's events as the connector reads them, at the pinned API version (docs/payments.md, "Stripe")."""

from collections.abc import Mapping

from payments.readings import (
    Reading,
    Unreadable,
    Unrecordable,
    amount_of,
    currency_of,
    json_of,
    obj,
    ref_of,
    text,
)

# The version whose shapes are read; set it on the endpoint in Stripe's dashboard. Fields older versions put
# elsewhere are read too (invoice.subscription, invoice.payment_intent, charge.refunds), so an endpoint left on
# the account's default still works (docs/payments.md, "Setup").
STRIPE_API_VERSION = "2026-10-28.endive"
# The events to select in Stripe's dashboard, in the order docs/payments.md explains them.
STRIPE_EVENTS = (
    "checkout.session.completed",
    "checkout.session.async_payment_succeeded",
    "invoice.paid",
    "invoice_payment.paid",
    "refund.created",
    "charge.refunded",
)
# ISO 4217 gives the Icelandic króna no decimals; Stripe still writes it with two (100 is 1 ISK).
_EXTRA_DIGITS = {"ISK": 2}
CLICK_MAX = 64


def _money(reading: Reading, amount: object, currency: object) -> tuple[int, str]:
    code = currency_of(currency)
    return amount_of(amount, scale=_EXTRA_DIGITS.get(code, 0)), code


def _refs(*values: object) -> list[str]:
    return [ref for ref in dict.fromkeys(ref_of(value) for value in values) if ref]


def _checkout(reading: Reading, session: dict) -> None:
    """A Checkout Session (and so a Payment Link or a Buy Button): its click, its buyer, and in payment mode the
    sale; in subscription mode the click is remembered and invoice.paid records each payment, the first included
    (so the first payment never counts twice)."""
    metadata = obj(session.get("metadata"))
    reading.click_id = text(session.get("client_reference_id"), 200) or text(metadata.get("lf_cid"), 200)
    details = obj(session.get("customer_details"))
    reading.email = text(details.get("email"), 254) or text(session.get("customer_email"), 254)
    reading.name = text(details.get("name"), 200)
    reading.customer_ref = ref_of(session.get("customer"))
    reading.subscription_ref = ref_of(session.get("subscription"))
    mode = session.get("mode")
    if mode == "subscription":
        reading.action = "remember"
        return
    if mode != "payment":
        reading.reason = "a setup session takes no payment"
        return
    if session.get("payment_status") != "paid":
        reading.reason = "not paid yet: checkout.session.async_payment_succeeded records it"
        return
    reading.action = "sale"
    reading.amount, reading.currency = _money(reading, session.get("amount_total"), session.get("currency"))
    # An invoice made by the session (invoice_creation) names the payment as invoice.paid will; else the intent.
    reading.invoice_id = ref_of(session.get("invoice")) or ref_of(session.get("payment_intent")) or text(session["id"])
    reading.payment_refs = _refs(session.get("payment_intent"), session.get("invoice"), session.get("id"))
    reading.click_refs = _refs(reading.customer_ref)


def _invoice_paid(reading: Reading, invoice: dict) -> None:
    """Every paid invoice: a subscription's first payment and each renewal, attributed to the click remembered for
    its subscription or customer (or one in the subscription's metadata)."""
    parent = obj(obj(invoice.get("parent")).get("subscription_details")) or obj(invoice.get("subscription_details"))
    reading.subscription_ref = ref_of(parent.get("subscription")) or ref_of(invoice.get("subscription"))
    reading.customer_ref = ref_of(invoice.get("customer"))
    reading.click_id = text(obj(parent.get("metadata")).get("lf_cid"), 200) or text(
        obj(invoice.get("metadata")).get("lf_cid"), 200
    )
    reading.click_refs = _refs(reading.subscription_ref, reading.customer_ref)
    reading.waits_for_click = True
    reading.email = text(invoice.get("customer_email"), 254)
    reading.name = text(invoice.get("customer_name"), 200)
    reading.amount, reading.currency = _money(reading, invoice.get("amount_paid"), invoice.get("currency"))
    reading.invoice_id = text(invoice["id"])
    payments = [obj(obj(p).get("payment")) for p in obj(invoice.get("payments")).get("data") or []]
    reading.payment_refs = _refs(
        invoice["id"],
        invoice.get("payment_intent"),  # before 2025-03-31.basil
        invoice.get("charge"),
        *(p.get("payment_intent") for p in payments),
        *(p.get("charge") for p in payments),
    )
    if reading.amount == 0:
        reading.action, reading.reason = "remember", "nothing was paid (a trial, or a credited invoice)"
        return
    reading.action = "sale"


def _invoice_payment_paid(reading: Reading, payment: dict) -> None:
    """Since 2025-03-31.basil an invoice no longer names its payment intent: this event does, so that a refund,
    which names the intent or the charge, finds the invoice's sale."""
    reading.action = "link"
    reading.invoice_id = ref_of(payment.get("invoice"))
    detail = obj(payment.get("payment"))
    reading.payment_refs = _refs(detail.get("payment_intent"), detail.get("charge"))
    if not reading.invoice_id or not reading.payment_refs:
        reading.action, reading.reason = "ignore", "no invoice or payment named"


def _refund(reading: Reading, refund: dict) -> None:
    if refund.get("status") in ("failed", "canceled"):
        reading.reason = f"the refund {refund.get('status')}"
        return
    amount, reading.currency = _money(reading, refund.get("amount"), refund.get("currency"))
    reading.action = "refund"
    reading.refunds = [(text(refund["id"]), amount)]
    reading.payment_refs = _refs(refund.get("payment_intent"), refund.get("charge"))


def _charge_refunded(reading: Reading, charge: dict) -> None:
    """Each refund the charge lists, by its own id, so that refund.created of the same refund counts once with it.
    Since 2022-11-15 the charge lists none: refund.created then records them."""
    listed = [obj(r) for r in obj(charge.get("refunds")).get("data") or []]
    listed = [r for r in listed if text(r.get("id")) and r.get("status") not in ("failed", "canceled")]
    if not listed:
        reading.reason = "this API version lists no refunds on the charge: refund.created records them"
        return
    reading.action = "refund"
    reading.currency = currency_of(charge.get("currency"))
    reading.refunds = [(text(r["id"]), _money(reading, r.get("amount"), charge.get("currency"))[0]) for r in listed]
    reading.payment_refs = _refs(charge.get("payment_intent"), charge.get("id"), charge.get("invoice"))


_READERS = {
    "checkout.session.completed": _checkout,
    "checkout.session.async_payment_succeeded": _checkout,
    "invoice.paid": _invoice_paid,
    "invoice_payment.paid": _invoice_payment_paid,
    "refund.created": _refund,
    "charge.refunded": _charge_refunded,
}


def stripe_read(body: bytes, headers: Mapping[str, str]) -> Reading:
    """The verified body as a Reading. Unreadable when it is not a Stripe event of the shape the version has."""
    event = json_of(body)
    if not isinstance(event, dict) or event.get("object") != "event":
        raise Unreadable("not a Stripe event")
    event_id, event_type, livemode = text(event.get("id")), text(event.get("type"), 100), event.get("livemode")
    data = obj(obj(event.get("data")).get("object"))
    if not event_id or not event_type or not isinstance(livemode, bool):
        raise Unreadable("not a Stripe event")
    reading = Reading(event_id=event_id, event_type=event_type, test=not livemode)
    reader = _READERS.get(event_type)
    if reader is None:
        reading.reason = "not an event the connector reads"
        return reading
    if not text(data.get("id")):
        raise Unreadable("the event's object has no id")
    try:
        reader(reading, data)
    except Unrecordable as error:  # well-formed, but no amount lftrack can store: logged, never retried
        reading.action, reading.reason = "ignore", f"not recorded: {error}"
    except (KeyError, TypeError, AttributeError):
        raise Unreadable("not the shape of this event") from None
    return reading
