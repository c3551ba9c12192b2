"""Refunds of sales: never more than what is left of the sale, each provider refund recorded once (docs/api.md)."""

from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from conversions.models import ConversionEvent, Refund
from lftrack.currencies import MONEY_MAX
from lftrack.db import from_row, prepared_cursor
from lftrack.errors import NotFound, Unprocessable
from webhooks.outbox import event_emit
from workspaces.models import Workspace

REFUND_EXCEEDS = "refund exceeds the sale"
NOT_A_SALE = "only a sale can be refunded"
AMOUNT_TOO_LARGE = f"amount_cents must be at most {MONEY_MAX}"
REFUND_ID_REUSED = "refund_id reused for a different sale or amount"

# A refund repeating a refund_id inserts nothing (the unique index on it), whoever committed it first.
# A refund's columns: its INSERT's column list and parameters, and the instance's fields (lftrack.db.from_row).
_WRITTEN = (
    "workspace_id",
    "conversion_id",
    "link_id",
    "amount_cents",
    "currency",
    "sale_occurred_at",
    "reason",
    "refund_id",
    "is_test",
    "created_at",
)
_INSERT_SQL = f"""INSERT INTO {Refund._meta.db_table} ({", ".join(_WRITTEN)})
    VALUES ({", ".join(f"%({column})s" for column in _WRITTEN)})
    ON CONFLICT (workspace_id, refund_id, is_test) WHERE refund_id <> '' DO NOTHING RETURNING id"""


@dataclass(frozen=True)
class RefundResult:
    refund: Refund
    sale: ConversionEvent  # with `refunded_cents`: all its refunds so far, this one included
    created: bool  # False: the refund_id was refunded before, `refund` is that first refund


@transaction.atomic
def refund_record(
    *,
    workspace: Workspace,
    sale_id: int,
    amount_cents: int | None = None,
    reason: str = "",
    refund_id: str = "",
    test: bool = False,
) -> RefundResult:
    """Refund `amount_cents` of the workspace's sale `sale_id` (None: all that is left of it).

    The sale's row is locked (FOR NO KEY UPDATE: its refunds' foreign keys still insert) while its refunds are
    summed and this one is added, so concurrent refunds add up one after another and never exceed the sale
    (422 `refund exceeds the sale`). A `refund_id` the workspace has refunded before stores nothing and answers
    that first refund when this one names the same sale and amount (or none), also under concurrent repeats (the
    unique index decides); another sale or amount is 422, as a reused Idempotency-Key is. A test token (`test`)
    sees only test-mode sales, a live one only live sales: another mode's sale is unknown.
    """
    if refund_id:
        first = _refunded(workspace=workspace, refund_id=refund_id, test=test)
        if first is not None:
            return _repeated(first, sale_id=sale_id, amount_cents=amount_cents)
    sale = (
        ConversionEvent.objects.select_for_update(no_key=True)
        .filter(workspace=workspace, pk=sale_id, is_test=test)
        .first()
    )
    if sale is None:
        raise NotFound("unknown conversion")
    if sale.event != ConversionEvent.Event.SALE:
        raise Unprocessable(NOT_A_SALE)
    refunded = Refund.objects.filter(conversion=sale).aggregate(total=Sum("amount_cents"))["total"] or 0
    left = (sale.value_cents or 0) - refunded
    amount = left if amount_cents is None else amount_cents
    if amount <= 0 or amount > left:
        raise Unprocessable(REFUND_EXCEEDS)
    if amount > MONEY_MAX:  # all that is left of a sale stored before the bound: refund it in parts
        raise Unprocessable(AMOUNT_TOO_LARGE)
    written = {
        "workspace_id": workspace.pk,
        "conversion_id": sale.pk,
        "link_id": sale.link_id,
        "amount_cents": amount,
        "currency": sale.currency,
        "sale_occurred_at": sale.occurred_at,
        "reason": reason,
        "refund_id": refund_id,
        "is_test": sale.is_test,
        "created_at": timezone.now(),
    }
    adapt = connection.ops.adapt_datetimefield_value
    with prepared_cursor() as cursor:
        cursor.execute(
            _INSERT_SQL,
            {
                **written,
                "sale_occurred_at": adapt(written["sale_occurred_at"]),
                "created_at": adapt(written["created_at"]),
            },
        )
        row = cursor.fetchone()
    if row is None:  # a concurrent repeat of this refund_id committed first
        first = _refunded(workspace=workspace, refund_id=refund_id, test=test)
        if first is None:  # it rolled back after all: nothing to answer with
            raise RuntimeError("refund_id conflict without a refund")
        return _repeated(first, sale_id=sale_id, amount_cents=amount_cents)
    refund = from_row(Refund, {**written, "id": row.id}, workspace=workspace, conversion=sale)
    sale.refunded_cents = refunded + amount
    sale_refunded_emit(sale=sale, refund=refund)
    return RefundResult(refund=refund, sale=sale, created=True)


def _repeated(first: RefundResult, *, sale_id: int, amount_cents: int | None) -> RefundResult:
    """`first`, the refund of this refund_id, if the request names its sale and its amount (or none: whatever it was)."""
    if first.sale.pk != sale_id or amount_cents not in (None, first.refund.amount_cents):
        raise Unprocessable(REFUND_ID_REUSED)
    return first


def _refunded(*, workspace: Workspace, refund_id: str, test: bool) -> RefundResult | None:
    refund = (
        Refund.objects.filter(workspace=workspace, refund_id=refund_id, is_test=test)
        .select_related("conversion")
        .first()
    )
    if refund is None:
        return None
    sale = refund.conversion
    sale.refunded_cents = Refund.objects.filter(conversion=sale).aggregate(total=Sum("amount_cents"))["total"] or 0
    return RefundResult(refund=refund, sale=sale, created=False)


def sale_refunded_emit(*, sale: ConversionEvent, refund: Refund) -> None:
    """The `sale.refunded` webhook event, in the refund's transaction (the outbox): its body is the sale as the read
    API shows it, refunded and net amounts included; a test-mode refund reaches test endpoints only."""
    event_emit(
        workspace_id=sale.workspace_id,
        type="sale.refunded",
        subject_id=sale.pk,
        customer_id=sale.customer_id,
        detail={"refund_id": refund.pk},
        test=sale.is_test,
    )
