"""Reads of conversion events that the back office and the API share."""
from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from clicks.models import Click
from conversions.models import ConversionEvent
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
    *, workspace_id: int, filters: dict, after: tuple | None, limit: int
) -> list[ConversionEvent]:
    """GET /api/v1/conversions: the workspace's events newest first (occurred_at, then id), `limit` of them
    after the keyset `after` = (occurred_at, id) of the last one already seen. Served by the
    (workspace, -occurred_at) index; a row inserted meanwhile lands before the cursor, never in a later page.
    `filters`: event, link_id, customer_id, since (>=), until (<)."""
    events = ConversionEvent.objects.filter(workspace_id=workspace_id)
    for name, lookup in (("event", "event"), ("link_id", "link_id"), ("customer_id", "customer_id"),
                         ("since", "occurred_at__gte"), ("until", "occurred_at__lt")):
        if filters.get(name) is not None:
            events = events.filter(**{lookup: filters[name]})
    if after is not None:
        events = events.filter(after_keyset("occurred_at", after))
    return list(
        events.select_related("customer").annotate(click_key=F("click__click_id")).order_by("-occurred_at", "-pk")[:limit]
    )


def customer_totals(*, customer_ids: list[int]) -> dict[int, dict]:
    """Leads, sales and revenue (cents) of each customer, by id (one query; the (customer, -occurred_at) index)."""
    rows = (
        ConversionEvent.objects.filter(customer_id__in=customer_ids)
        .values("customer_id")
        .annotate(
            leads=Count("pk", filter=Q(event="lead")),
            sales=Count("pk", filter=Q(event="sale")),
            revenue_cents=Coalesce(Sum("value_cents", filter=Q(event="sale")), 0),
        )
    )
    empty = {"leads": 0, "sales": 0, "revenue_cents": 0}
    found = {row.pop("customer_id"): row for row in rows}
    return {pk: found.get(pk, empty) for pk in customer_ids}
