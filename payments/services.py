"""A provider's delivery, verified, read and recorded exactly once, in any order (docs/payments.md, "Exactly once, in any order").

Every delivery of one event is one Delivery row (a unique index): concurrent repeats wait on it and answer what the
first recorded. Sales go through conversion_record and refunds through refund_record, so they emit the same webhook
events and count in every number like API sales; an invoice or order id is recorded once per workspace and mode
whichever event (or API call) brings it first. An event that needs one arriving later (a refund before its sale,
a renewal before its checkout) keeps the provider's ids it waits for, and is played again when one arrives.
"""

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from clicks.models import Click
from conversions.models import ConversionEvent
from conversions.refunds import REFUND_EXCEEDS, refund_record
from conversions.services import InvoiceRecorded, conversion_record
from customers.services import customer_match
from lftrack.errors import Unprocessable
from payments.connections import connection_secrets
from payments.models import Connection, Delivery, Reference
from payments.readings import Reading, Unreadable, Unrecordable
from payments.shopify_events import shopify_read
from payments.signatures import SignatureRefused, shopify_verify, stripe_verify
from payments.stripe_events import stripe_read
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.payments")
Outcome = Delivery.Outcome
Kind = Reference.Kind
# How many waiting events one arrival plays again, and how deep a chain of them goes (a sale wakes a link, which
# wakes a refund): bounded, so one delivery's work is bounded; the rest wait for the next arrival or a replay.
WAKE_MAX = 100
WAKE_DEPTH = 3


@dataclass(frozen=True)
class ProviderRules:
    verify: Callable[[bytes, Mapping[str, str], list[str]], None]
    read: Callable[[bytes, Mapping[str, str]], Reading]


PROVIDERS: dict[str, ProviderRules] = {
    Connection.Provider.STRIPE: ProviderRules(stripe_verify, stripe_read),
    Connection.Provider.SHOPIFY: ProviderRules(shopify_verify, shopify_read),
}


def hook_read(*, connection: Connection, body: bytes, headers: Mapping[str, str]) -> Reading:
    """Verify the raw body with the provider's rules, then read it. SignatureRefused and Unreadable are logged
    on the connection (without the body: nothing in it can be trusted) and raised, for a 400."""
    rules = PROVIDERS[connection.provider]
    try:
        rules.verify(body, headers, connection_secrets(connection))
        return rules.read(body, headers)
    except SignatureRefused as refused:
        _reject(connection, refused.reason)
        raise
    except Unreadable as unreadable:
        _reject(connection, f"invalid payload: {unreadable}")
        raise


def hook_receive(*, connection: Connection, body: bytes, headers: Mapping[str, str]) -> Delivery:
    """Verify, read and record a delivery exactly once. A database that fails raises its own error (503: the
    provider retries, and the retry is recorded once)."""
    reading = hook_read(connection=connection, body=body, headers=headers)
    return delivery_receive(connection=connection, reading=reading, body=body.decode())


def _reject(connection: Connection, reason: str) -> None:
    Delivery.objects.create(
        workspace_id=connection.workspace_id,
        connection=connection,
        outcome=Outcome.REJECTED,
        reason=reason[:300],
        received_at=timezone.now(),
    )
    logger.warning(
        "payment delivery rejected (%s)",
        reason,
        extra={"connection_id": connection.pk, "provider": connection.provider},
    )


@transaction.atomic
def delivery_receive(*, connection: Connection, reading: Reading, body: str) -> Delivery:
    """The event's one Delivery row, recorded now or, for a repeat, as first recorded (`repeated` set on it)."""
    try:
        with transaction.atomic():  # a concurrent first delivery holds the index entry: this waits for its commit
            delivery = Delivery.objects.create(
                workspace_id=connection.workspace_id,
                connection=connection,
                event_id=reading.event_id,
                event_type=reading.event_type,
                is_test=bool(reading.test),
                outcome=Outcome.IGNORED,
                body=body,
                received_at=timezone.now(),
            )
    except IntegrityError:
        Delivery.objects.filter(connection=connection, event_id=reading.event_id).update(repeats=F("repeats") + 1)
        delivery = Delivery.objects.get(connection=connection, event_id=reading.event_id)
        delivery.repeated = True
        return delivery
    delivery.connection = connection
    _play(delivery, reading, depth=0)
    delivery.repeated = False
    return delivery


@transaction.atomic
def delivery_replay(*, delivery: Delivery) -> Delivery:
    """Play a logged event again, as if it arrived now (a click fixed, a connection reconnected); what it
    recorded before stays recorded once."""
    delivery = Delivery.objects.select_for_update().select_related("connection").get(pk=delivery.pk)
    if not delivery.body:
        raise Unprocessable("a rejected delivery has no verified body to replay")
    _play(delivery, _reread(delivery), depth=0)
    return delivery


def _reread(delivery: Delivery) -> Reading:
    headers = {"X-Shopify-Topic": delivery.event_type, "X-Shopify-Webhook-Id": delivery.event_id}
    return PROVIDERS[delivery.connection.provider].read(delivery.body.encode(), headers)


@dataclass
class _Result:
    outcome: str
    reason: str = ""
    conversion_id: int | None = None
    refund_id: int | None = None
    waiting_for: tuple[str, ...] = ()
    test: bool | None = None


def _play(delivery: Delivery, reading: Reading, *, depth: int) -> None:
    """Record what the reading asks, on the delivery's row; then play again what waited for the ids it brought."""
    workspace = delivery.connection.workspace
    provider = delivery.connection.provider
    woken: list[str] = []
    try:
        result = _ACTIONS[reading.action](workspace, provider, reading, woken)
    except Unrecordable as error:
        result = _Result(Outcome.IGNORED, f"not recorded: {error}")
    delivery.outcome, delivery.reason = result.outcome, result.reason[:300]
    delivery.conversion_id, delivery.refund_id = result.conversion_id, result.refund_id
    delivery.waiting_for = list(result.waiting_for)
    if result.test is not None:
        delivery.is_test = result.test
    delivery.save(update_fields=["outcome", "reason", "conversion", "refund", "waiting_for", "is_test"])
    if result.outcome in (Outcome.NOT_ATTRIBUTED, Outcome.WAITING):
        logger.info(
            "payment event %s (%s)",
            result.outcome,
            result.reason,
            extra={
                "workspace_id": workspace.pk,
                "connection_id": delivery.connection_id,
                "event_type": reading.event_type,
            },
        )
    woken = [ref for ref in woken if ref]
    if woken and depth < WAKE_DEPTH:
        _wake(delivery, provider, woken, depth=depth + 1)


def _wake(delivery: Delivery, provider: str, refs: list[str], *, depth: int) -> None:
    waiting = (
        Delivery.objects.select_for_update(of=("self",))  # not the connection's and workspace's rows
        .select_related("connection__workspace")
        .filter(workspace_id=delivery.workspace_id, connection__provider=provider, waiting_for__overlap=refs)
        .exclude(pk=delivery.pk)
        .order_by("pk")[:WAKE_MAX]
    )
    for other in waiting:
        _play(other, _reread(other), depth=depth)


def _modes(reading: Reading) -> list[bool]:
    return [reading.test] if reading.test is not None else [False, True]


def _reference(workspace: Workspace, provider: str, test: bool, kind: str, refs: list[str]) -> Reference | None:
    """The first of `refs` known as `kind`, in their order."""
    found = {
        r.ref: r
        for r in Reference.objects.filter(
            workspace=workspace, provider=provider, is_test=test, kind=kind, ref__in=refs
        ).select_related("click", "conversion")
    }
    return next((found[ref] for ref in refs if ref in found), None)


def _keep(
    workspace: Workspace,
    provider: str,
    test: bool,
    kind: str,
    refs: list[str],
    *,
    update: tuple[str, ...],
    **values: object,
) -> None:
    """The references of `refs` in one statement: new ones created with `values`, known ones given the `update`
    fields of `values` (none: left as they are). INSERT ... ON CONFLICT: concurrent writers of one id never fail."""
    rows = [
        Reference(workspace=workspace, provider=provider, is_test=test, kind=kind, ref=ref, **values)
        for ref in dict.fromkeys(refs)
        if ref
    ]
    if not rows:
        return
    if update:
        Reference.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["workspace", "provider", "is_test", "kind", "ref"],
            update_fields=list(update),
        )
    else:
        Reference.objects.bulk_create(rows, ignore_conflicts=True)


def _buyer(reading: Reading) -> dict[str, str] | None:
    try:
        validate_email(reading.email)
    except ValidationError:
        return None
    return {"email": reading.email, "name": reading.name}


def _click(workspace: Workspace, provider: str, reading: Reading) -> tuple[Click | None, str]:
    """The sale's click: the one it names, else the one remembered for its subscription or customer; or why none."""
    if reading.click_id:
        click = Click.objects.filter(workspace=workspace, click_id=reading.click_id).first()
        return click, "" if click else "unknown click id"
    for kind in (Kind.SUBSCRIPTION, Kind.CUSTOMER):
        ref = _reference(workspace, provider, bool(reading.test), kind, reading.click_refs)
        if ref is not None and ref.click_id is not None:
            return ref.click, ""
    if reading.click_refs:
        return None, "no click id, and no click remembered for this customer or subscription"
    return None, "no click id (client_reference_id, metadata.lf_cid, landing_site or the lf_cid note attribute)"


def _sale(workspace: Workspace, provider: str, reading: Reading, woken: list[str]) -> _Result:
    test = bool(reading.test)
    click, why = _click(workspace, provider, reading)
    if click is None:
        # Its refunds are then not attributed either, and wait with it.
        _keep(workspace, provider, test, Kind.PAYMENT, reading.payment_refs, update=())
        # A checkout arriving after its first invoice (Stripe does not order them) plays this again.
        waiting = tuple(reading.click_refs) if reading.waits_for_click else ()
        return _Result(Outcome.NOT_ATTRIBUTED, why, waiting_for=waiting)
    outcome, reason = Outcome.SALE, ""
    try:
        sale = conversion_record(
            workspace=workspace,
            channel="api",
            event=ConversionEvent.Event.SALE,
            click_id=click.click_id,
            value_cents=reading.amount,
            event_name=f"{Connection.Provider(provider).label} {reading.event_type}",
            meta={"provider": provider, "event_id": reading.event_id},
            customer=_buyer(reading),
            invoice_id=reading.invoice_id,
            currency=reading.currency,
            test=test,
        )
    except InvoiceRecorded as recorded:
        sale = recorded.sale
        outcome, reason = Outcome.DUPLICATE, f"invoice {reading.invoice_id} was recorded before, as sale #{sale.pk}"
    _keep(workspace, provider, test, Kind.PAYMENT, reading.payment_refs, update=("conversion",), conversion=sale)
    _remember(workspace, provider, reading, click, sale.customer_id, explicit=bool(reading.click_id))
    woken.extend([*reading.payment_refs, reading.customer_ref, reading.subscription_ref])
    return _Result(outcome, reason, conversion_id=sale.pk)


def _remember(
    workspace: Workspace, provider: str, reading: Reading, click: Click, customer_id: int | None, *, explicit: bool
) -> None:
    """The click a subscription came by (its first, for good) and a customer's latest named click: renewals and
    later purchases without a click id are attributed to them."""
    test = bool(reading.test)
    values = {"click": click, "customer_id": customer_id}
    _keep(workspace, provider, test, Kind.SUBSCRIPTION, [reading.subscription_ref], update=(), **values)
    update = ("click", "customer") if explicit else ()
    _keep(workspace, provider, test, Kind.CUSTOMER, [reading.customer_ref], update=update, **values)


def _remember_checkout(workspace: Workspace, provider: str, reading: Reading, woken: list[str]) -> _Result:
    """A subscription's checkout: no sale (invoice.paid records each payment), its click and buyer remembered."""
    click, why = _click(workspace, provider, reading)
    if click is None:
        waiting = tuple(reading.click_refs) if reading.waits_for_click else ()
        return _Result(Outcome.NOT_ATTRIBUTED, why, waiting_for=waiting)
    buyer = _buyer(reading)
    customer_id = None
    if buyer is not None:
        customer_id = customer_match(workspace=workspace, channel="api", test=bool(reading.test), **buyer).customer.pk  # type: ignore[arg-type]  # str fields only
    _remember(workspace, provider, reading, click, customer_id, explicit=bool(reading.click_id))
    woken.extend([reading.customer_ref, reading.subscription_ref])
    return _Result(Outcome.REMEMBERED, reading.reason or "click remembered for this customer and subscription")


def _link(workspace: Workspace, provider: str, reading: Reading, woken: list[str]) -> _Result:
    invoice = _reference(workspace, provider, bool(reading.test), Kind.PAYMENT, [reading.invoice_id])
    if invoice is None:
        return _Result(Outcome.WAITING, "its invoice has not arrived yet", waiting_for=(reading.invoice_id,))
    _keep(
        workspace,
        provider,
        bool(reading.test),
        Kind.PAYMENT,
        reading.payment_refs,
        update=("conversion",),
        conversion_id=invoice.conversion_id,
    )
    woken.extend(reading.payment_refs)
    return _Result(Outcome.REMEMBERED, "payment linked to its invoice", conversion_id=invoice.conversion_id)


def _refund(workspace: Workspace, provider: str, reading: Reading, woken: list[str]) -> _Result:
    payment = None
    for test in _modes(reading):
        payment = _reference(workspace, provider, test, Kind.PAYMENT, reading.payment_refs)
        if payment is not None:
            break
    waiting = tuple(reading.payment_refs)
    if payment is None:
        return _Result(Outcome.WAITING, "its sale has not arrived yet", waiting_for=waiting)
    if payment.conversion_id is None:
        return _Result(Outcome.NOT_ATTRIBUTED, "the sale it refunds was not attributed", waiting_for=waiting)
    sale = cast(ConversionEvent, payment.conversion)  # conversion_id is set
    if reading.currency != sale.currency:
        raise Unrecordable(f"the refund is in {reading.currency}, its sale #{sale.pk} in {sale.currency}")
    recorded, exceeded = [], ""
    for refund_id, amount in reading.refunds:
        try:
            result = refund_record(
                workspace=workspace,
                sale_id=sale.pk,
                amount_cents=amount,
                reason=f"{Connection.Provider(provider).label} refund",
                refund_id=refund_id,
                test=sale.is_test,
            )
        except Unprocessable as error:
            if error.message != REFUND_EXCEEDS:
                raise
            exceeded = f"not recorded: refund exceeds what is left of sale #{sale.pk}"
            continue
        if result.created:
            recorded.append(result.refund.pk)
    if recorded:  # a charge's several refunds: the first one recorded names them in the log
        return _Result(Outcome.REFUND, exceeded, conversion_id=sale.pk, refund_id=recorded[0], test=sale.is_test)
    if exceeded:
        return _Result(Outcome.IGNORED, exceeded, conversion_id=sale.pk, test=sale.is_test)
    return _Result(Outcome.DUPLICATE, "refund recorded before", conversion_id=sale.pk, test=sale.is_test)


def _ignore(workspace: Workspace, provider: str, reading: Reading, woken: list[str]) -> _Result:
    return _Result(Outcome.IGNORED, reading.reason or "nothing to record")


_ACTIONS = {"sale": _sale, "remember": _remember_checkout, "link": _link, "refund": _refund, "ignore": _ignore}


def delivery_answer(delivery: Delivery) -> dict:
    """The body of the 200 the provider gets: what became of its event (its dashboard shows it)."""
    answer: dict[str, str | int] = {"outcome": Outcome.DUPLICATE.value if delivery.repeated else delivery.outcome}
    if delivery.repeated:
        answer["first_outcome"] = delivery.outcome
    if delivery.reason:
        answer["reason"] = delivery.reason
    if delivery.conversion_id is not None:
        answer["sale_id"] = delivery.conversion_id
    if delivery.refund_id is not None:
        answer["refund_id"] = delivery.refund_id
    return answer


def deliveries_purge(*, now: datetime | None = None) -> int:
    """The log past PAYMENT_LOG_RETENTION_DAYS goes (its bodies hold buyers' emails); an event still waiting for its
    sale is kept three times as long. What the deliveries recorded (sales, refunds, references) stays."""
    now = now or timezone.now()
    keep = timedelta(days=settings.PAYMENT_LOG_RETENTION_DAYS)
    done = Delivery.objects.filter(received_at__lt=now - keep, waiting_for=[])
    stale = Delivery.objects.filter(received_at__lt=now - 3 * keep).exclude(waiting_for=[])
    return done.delete()[0] + stale.delete()[0]
