"""GET /api/v1/customers, /customers/{id}, /customers/{id}/activity and /customers/{id}/export, DELETE
/customers/{id} (docs/api.md): the workspace's contacts as an integrator reads them back, with their totals and
suppression, exports and erases them (docs/privacy.md). Here, not in `customers`, because the
totals are conversions' and suppression is campaigns' (the apps import one way: docs/architecture.md, "The layers")."""

from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from campaigns.models import Enrollment
from campaigns.selectors import suppressions_by_email
from conversions import customers_openapi
from conversions.customers_openapi import SEARCH_MAX
from conversions.models import ConversionEvent, Refund
from conversions.selectors import customer_totals
from customers.erasure import customer_erase, customer_export
from customers.models import Customer, CustomerActivity
from customers.selectors import customer_by_reference, customers_page
from lftrack.errors import NotFound, Unprocessable
from lftrack.fields import iso_utc, optional
from lftrack.openapi import PagedAutoSchema
from lftrack.pagination import cursor_encode, page_out, page_position
from lftrack.ratelimit import READ_LIMITS, Limit, rate_limit, token_key

# Erasures per token; per address, they count with the reads.
ERASURE_LIMITS = (Limit("erasures-token", token_key, "RATELIMIT_ERASURES_TOKEN"), READ_LIMITS[1])


def customers_out(customers: list[Customer], workspace_id: int, *, test: bool = False) -> dict[int, dict]:
    """Each contact's answer, by id: two queries for the whole page (totals, suppressions). `test`: the contacts
    are test ones (a test token reads them), with their test-mode totals and suppressions."""
    totals = customer_totals(customer_ids=[c.pk for c in customers])
    suppressions = suppressions_by_email(workspace_id=workspace_id, emails=[c.email for c in customers], test=test)
    out = {}
    for c in customers:
        suppression = suppressions.get(c.email.lower()) if c.email else None
        out[c.pk] = {
            "id": c.pk,
            "email": optional(c.email),
            "name": optional(c.name),
            "avatar_url": optional(c.avatar_url),
            "external_id": optional(c.external_id),
            "source": c.source,
            "created_at": iso_utc(c.created_at),
            "totals": totals[c.pk],
            "suppressed": None
            if suppression is None
            else {"reason": suppression.reason, "since": iso_utc(suppression.created_at)},
        }
    return out


def _identity_item(activity: CustomerActivity) -> dict:
    detail = {"channel": activity.channel}
    if activity.external_id:
        detail["external_id"] = activity.external_id
    if activity.other_customer_id:
        detail["other_customer_id"] = activity.other_customer_id
    if activity.kind == CustomerActivity.Kind.SUPPRESSED:
        detail["reason"] = activity.detail.get("reason")
    return {"type": activity.kind, "at": activity.created_at, "detail": detail}


def _conversion_item(event: ConversionEvent) -> dict:
    detail = {
        "id": event.pk,
        "link_id": event.link_id,
        "value_cents": event.value_cents,
        "event_name": optional(event.event_name),
    }
    if event.event == ConversionEvent.Event.SALE:
        detail["currency"] = event.currency
    return {"type": event.event, "at": event.occurred_at, "detail": detail}


def _refund_item(refund: Refund) -> dict:
    detail = {
        "id": refund.pk,
        "conversion_id": refund.conversion_id,
        "amount_cents": refund.amount_cents,
        "currency": refund.currency,
        "reason": refund.reason,
        "refund_id": refund.refund_id,
    }
    return {"type": "refund", "at": refund.created_at, "detail": detail}


def _enrollment_item(enrollment: Enrollment) -> dict:
    detail = {"id": enrollment.pk, "campaign": enrollment.campaign.slug, "state": enrollment.state}
    return {"type": "enrolled", "at": enrollment.enrolled_at, "detail": detail}


def customer_timeline(customer: Customer, *, after: tuple | None, limit: int) -> tuple[list[dict], tuple | None]:
    """The contact's identity changes, conversions and enrollments merged newest first, `limit` of them after
    the keyset `after` = (time, source, id); and the keyset of the last one when more follow. Each source
    reads at most `limit` + 1 rows through its index on the customer."""
    sources = [
        (3, Refund.objects.filter(conversion__customer=customer, is_test=customer.is_test), "created_at", _refund_item),
        (2, CustomerActivity.objects.filter(customer=customer), "created_at", _identity_item),
        (
            1,
            ConversionEvent.objects.filter(workspace_id=customer.workspace_id, customer=customer),
            "occurred_at",
            _conversion_item,
        ),
        (0, Enrollment.objects.filter(customer=customer).select_related("campaign"), "enrolled_at", _enrollment_item),
    ]
    rows = []
    for rank, queryset, at, item in sources:
        if after is not None:
            moment, after_rank, pk = after
            older = Q(**{f"{at}__lt": moment})
            same = Q(**{at: moment}) & (
                Q(pk__lt=pk) if rank == after_rank else Q() if rank < after_rank else Q(pk__in=[])
            )
            queryset = queryset.filter(older | same)
        for obj in queryset.order_by(f"-{at}", "-pk")[: limit + 1]:
            rows.append(((getattr(obj, at), rank, obj.pk), item(obj)))
    rows.sort(key=lambda row: row[0], reverse=True)
    page = rows[:limit]
    return [{**entry, "at": iso_utc(entry["at"])} for _, entry in page], (page[-1][0] if len(rows) > limit else None)


def _customer(request, pk: str) -> Customer:
    """The token's workspace's contact (of the token's mode) by id or `ext_` reference; 404 otherwise."""
    customer = customer_by_reference(workspace_id=request.auth.workspace_id, reference=pk, test=request.auth.is_test)
    if customer is None:
        raise NotFound("unknown customer")
    return customer


class CustomerViewSet(viewsets.ViewSet):
    # workspaces/auth.py
    required_scopes = {
        "list": "read",
        "retrieve": "read",
        "activity": "read",
        "export": "customers:read",
        "destroy": "customers:write",
    }
    schema = PagedAutoSchema()
    lookup_value_regex = "[^/]+"  # our id, or ext_ and the integrator's own, which may hold dots

    @extend_schema(**customers_openapi.CUSTOMER_LIST)
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        params = request.query_params
        filters = {name: params.get(name) for name in ("email", "external_id", "search")}
        if len(filters["search"] or "") > SEARCH_MAX:
            raise Unprocessable("search is too long")
        limit, after = page_position(params)
        workspace_id = request.auth.workspace_id
        test = request.auth.is_test
        rows = customers_page(workspace_id=workspace_id, filters=filters, after=after, limit=limit + 1, test=test)
        answers = customers_out(rows[:limit], workspace_id, test=test)
        return Response(page_out(rows, limit, lambda c: answers[c.pk], at=lambda c: c.created_at))

    @extend_schema(**customers_openapi.CUSTOMER_ACTIVITY)
    @action(detail=True, methods=["get"])
    @rate_limit(*READ_LIMITS)
    def activity(self, request, pk: str) -> Response:
        limit, after = page_position(request.query_params, ranked=True)
        customer = _customer(request, pk)
        data, last = customer_timeline(customer, after=after, limit=limit)
        return Response({"data": data, "next": None if last is None else cursor_encode(*last)})

    @extend_schema(**customers_openapi.CUSTOMER_RETRIEVE)
    @rate_limit(*READ_LIMITS)
    def retrieve(self, request, pk: str) -> Response:
        customer = _customer(request, pk)
        return Response(customers_out([customer], request.auth.workspace_id, test=request.auth.is_test)[customer.pk])

    @extend_schema(**customers_openapi.CUSTOMER_EXPORT)
    @action(detail=True, methods=["get"])
    @rate_limit(*READ_LIMITS)
    def export(self, request, pk: str) -> Response:
        customer = _customer(request, pk)
        return Response(customer_export(customer=customer))

    @extend_schema(**customers_openapi.CUSTOMER_ERASE)
    @rate_limit(*ERASURE_LIMITS)
    def destroy(self, request, pk: str) -> Response:
        customer = _customer(request, pk)
        customer_erase(customer=customer)
        return Response(status=204)
