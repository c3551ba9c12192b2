"""What a provider's event asks of lftrack, read from its verified body: a sale, a refund, ids to link, or nothing."""

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from lftrack.currencies import MINOR_UNITS, MONEY_MAX, currency_code


class Unreadable(Exception):
    """The verified body is not an event of the shape the connector reads (answered 400, logged as rejected)."""


class Unrecordable(Exception):
    """A well-formed event that cannot become a sale or refund (an unknown currency, an amount finer than its
    currency's minor unit): answered 200 (a retry would not change it) and logged with the reason."""


@dataclass
class Reading:
    event_id: str
    event_type: str
    test: bool | None  # None: the event does not say (a Shopify refund); its sale's mode decides
    action: str = "ignore"  # sale | remember | link | refund | ignore
    reason: str = ""  # why an ignored event is ignored
    # A sale: its click (given, or remembered for one of click_refs, first found wins), its money and its buyer.
    click_id: str = ""
    click_refs: list[str] = field(default_factory=list)
    # Without a click yet, wait for one of click_refs to be remembered: an invoice whose checkout comes later.
    waits_for_click: bool = False
    invoice_id: str = ""
    amount: int = 0
    currency: str = ""
    email: str = ""
    name: str = ""
    customer_ref: str = ""
    subscription_ref: str = ""
    # The provider's ids of the payment: a later refund names one of them.
    payment_refs: list[str] = field(default_factory=list)
    # A refund: each (provider refund id, amount) of it; payment_refs name the payment it refunds.
    refunds: list[tuple[str, int]] = field(default_factory=list)
    # A link (Stripe's invoice_payment.paid) makes payment_refs ids of the sale of `invoice_id`; a remember (a
    # subscription's checkout) keeps the click for customer_ref and subscription_ref, and records no sale.


def currency_of(raw: object) -> str:
    code = currency_code(raw) if isinstance(raw, str) else None
    if code is None:
        raise Unrecordable(f"unknown currency {str(raw)[:10]!r}")
    return code


def amount_of(value: object, *, scale: int = 0) -> int:
    """A non-negative integer amount within the money bound, `scale` decimal digits finer than wanted (Stripe's
    ISK) taken off only when they are zeros."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Unreadable("an amount is not a non-negative integer")
    if scale:
        whole, rest = divmod(value, 10**scale)
        if rest:
            raise Unrecordable("the amount is finer than its currency's minor unit")
        value = whole
    if value > MONEY_MAX:
        raise Unrecordable("the amount is over the money bound")
    return value


def decimal_amount(text: object, currency: str) -> int:
    """A decimal string ("19.99") in `currency`'s minor unit, exactly: never through a float, and refused when it
    has digits finer than the currency has (a 0.5 yen)."""
    if not isinstance(text, str | int) or isinstance(text, bool):
        raise Unreadable("an amount is not a decimal string")
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise Unreadable("an amount is not a decimal string") from None
    if not value.is_finite() or value < 0:
        raise Unreadable("an amount is not a non-negative decimal")
    minor = value.scaleb(MINOR_UNITS[currency])
    if minor != minor.to_integral_value():
        raise Unrecordable(f"the amount has more decimals than {currency} has")
    if minor > MONEY_MAX:
        raise Unrecordable("the amount is over the money bound")
    return int(minor)


def text(value: object, limit: int = 255) -> str:
    """A string field of the payload, or "" for null or anything else; without NUL (PostgreSQL refuses it in
    text), cut to the column's length."""
    return value.replace("\x00", "")[:limit] if isinstance(value, str) else ""


def json_of(body: bytes) -> object:
    """The verified body parsed: UTF-8 JSON only, as both providers send it (the log keeps the body as text)."""
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested past the parser's depth
        raise Unreadable("invalid JSON") from None


def obj(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def ref_of(value: object) -> str:
    """An id that the provider may send as a string or, expanded, as an object with an id."""
    if isinstance(value, dict):
        value = value.get("id")
    return text(value)
