"""Reads of conversion events that the back office and the API share."""

from typing import Any

from django.db.models import BigIntegerField, F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from clicks.models import Click
from conversions.models import ConversionEvent, CustomerTotals, Refund
from customers.models import Customer
from lftrack.db import after_keyset


def conversions_of_customer(*, customer: Customer) -> QuerySet:
    """The contact's leads and sales, newest first, with their link and post."""
    return (
        ConversionEvent.objects.filter(workspace_id=customer.workspace_id, customer=customer)
        .select_related("link__post")
        .order_by("-occurred_at", "-pk")
    )


def clicks_of_customer(*, customer: Customer) -> QuerySet:
    """The clicks that led to the contact's leads and sales, newest first, with their link and post. A click
    carries no contact: it becomes theirs through a conversion (the (customer, -occurred_at) index)."""
    converted = ConversionEvent.objects.filter(workspace_id=customer.workspace_id, customer=customer)
    return (
        Click.objects.filter(workspace_id=customer.workspace_id, pk__in=converted.values("click_id"))
        .select_related("link__post")
        .order_by("-created_at", "-pk")
    )


def conversions_page(
    *, workspace_id: int, filters: dict, after: tuple | None, limit: int, test: bool = False
) -> list[ConversionEvent]:
    """GET /api/v1/conversions: the workspace's events newest first (occurred_at, then id), `limit` of them
    after the keyset `after` = (occurred_at, id) of the last one already seen. Served by the
    (workspace, -occurred_at) index; a row inserted meanwhile lands before the cursor, never in a later page.
    `filters`: event, link_id, customer_id, since (>=), until (<). Live events, or with `test` test-mode ones
    only (a test token reads back what it recorded, a live one never sees it). Each with `refunded_cents`."""
    events = ConversionEvent.objects.filter(workspace_id=workspace_id, is_test=test)
    for name, lookup in (
        ("event", "event"),
        ("link_id", "link_id"),
        ("customer_id", "customer_id"),
        ("since", "occurred_at__gte"),
        ("until", "occurred_at__lt"),
    ):
        if filters.get(name) is not None:
            events = events.filter(**{lookup: filters[name]})
    if after is not None:
        events = events.filter(after_keyset("occurred_at", after))
    return list(
        events.select_related("customer")
        .annotate(click_key=F("click__click_id"), refunded_cents=refunded_of(OuterRef("pk")))
        .order_by("-occurred_at", "-pk")[:limit]
    )


def refunded_of(sale: int | OuterRef) -> Coalesce:
    """What was refunded of `sale` (an id or OuterRef), 0 when nothing (the (conversion, id) index)."""
    # The plugin's lookup check takes no OuterRef, which Django resolves in a Subquery.
    rows = Refund.objects.filter(conversion=sale).order_by().values("conversion").annotate(total=Sum("amount_cents"))  # type: ignore[misc]
    return Coalesce(Subquery(rows.values("total"), output_field=BigIntegerField()), 0)


def customer_totals(*, customer_ids: list[int]) -> dict[int, dict]:
    """Leads, sales and revenue of each customer, by id: revenue per currency (sorted), gross, refunded and net,
    never added across currencies. Read from the stored totals (CustomerTotals, kept by triggers): one query for
    a page, whatever the contacts' numbers of events. A test contact's totals are its test-mode events'."""
    totals: dict[int, dict[str, Any]] = {pk: {"leads": 0, "sales": 0, "revenue": []} for pk in customer_ids}
    rows = CustomerTotals.objects.filter(customer_id__in=customer_ids).order_by("customer_id", "currency")
    for row in rows:
        total = totals[row.customer_id]
        if not row.currency:
            total["leads"], total["sales"] = row.leads, row.sales
            continue
        total["revenue"].append(
            {
                "currency": row.currency,
                "sales": row.sales,
                "gross_cents": row.revenue_cents,
                "refunded_cents": row.refunded_cents,
                "net_cents": row.net_cents,
            }
        )
    return totals
