"""GET /api/v1/customers, /customers/{id} and /customers/{id}/activity (docs/api.md): the workspace's contacts as an
integrator reads them back, with their totals and suppression. Here, not in `customers`, because the
totals are conversions' and suppression is campaigns' (the apps import one way: docs/architecture.md, "The layers")."""

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from campaigns.models import Enrollment, Suppression
from campaigns.selectors import suppressions_by_email
from conversions.models import ConversionEvent, Refund
from conversions.selectors import customer_totals
from customers.models import Customer, CustomerActivity
from customers.selectors import customer_by_reference, customers_page
from lftrack.api import PAGE_ERRORS, READ_LIMITS, cursor_encode, iso_utc, optional, page_out, page_position
from lftrack.errors import NotFound, Unprocessable
from lftrack.openapi import PAGE_PARAMETERS, PagedAutoSchema, error_responses, page_of
from lftrack.ratelimit import rate_limit

SEARCH_MAX = 200


class RevenueOut(serializers.Serializer):
    currency = serializers.CharField(help_text="ISO 4217 code; amounts are in its minor unit.")
    sales = serializers.IntegerField()
    gross_cents = serializers.IntegerField()
    refunded_cents = serializers.IntegerField()
    net_cents = serializers.IntegerField(help_text="gross_cents - refunded_cents.")


class TotalsOut(serializers.Serializer):
    leads = serializers.IntegerField()
    sales = serializers.IntegerField(help_text="In every currency together.")
    revenue = RevenueOut(many=True, help_text="Per currency, sorted by it; never added across currencies.")


class SuppressionOut(serializers.Serializer):
    reason = serializers.ChoiceField(choices=Suppression.Reason.choices)
    since = serializers.DateTimeField()


@extend_schema_serializer(component_name="Customer")
class CustomerOut(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True)
    avatar_url = serializers.CharField(allow_null=True)
    external_id = serializers.CharField(allow_null=True)
    source = serializers.ChoiceField(choices=Customer.Channel.choices, help_text="How they came in.")
    created_at = serializers.DateTimeField()
    totals = TotalsOut()
    suppressed = SuppressionOut(allow_null=True, help_text="Null unless the address may not be emailed.")


CustomerPageOut = page_of(CustomerOut, "CustomerPage")


def customers_out(customers: list[Customer], workspace_id: int, *, test: bool = False) -> dict[int, dict]:
    """Each contact's answer, by id: two queries for the whole page (totals, suppressions). `test`: the contacts
    are test ones (a test token reads them), with their test-mode totals and suppressions."""
    totals = customer_totals(customer_ids=[c.pk for c in customers], test=test)
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


@extend_schema_serializer(component_name="ActivityItem")
class ActivityItemOut(serializers.Serializer):
    type = serializers.ChoiceField(
        choices=[*CustomerActivity.Kind.values, "lead", "sale", "refund", "enrolled"],
        help_text="created, email_added, external_id_moved_in / _out (with `other_customer_id`), suppressed, "
        "lead or sale (a conversion), refund (of one of their sales), enrolled (a campaign enrollment, with its "
        "state now).",
    )
    at = serializers.DateTimeField()
    detail = serializers.DictField()


ActivityPageOut = page_of(ActivityItemOut, "ActivityPage")


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
        "event_name": event.event_name,
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


class CustomerViewSet(viewsets.ViewSet):
    required_scopes = {"list": "read", "retrieve": "read", "activity": "read"}  # workspaces/auth.py
    schema = PagedAutoSchema()
    lookup_value_regex = "[^/]+"  # our id, or ext_ and the integrator's own, which may hold dots

    @extend_schema(
        operation_id="customer_list",
        summary="List or find customers",
        description="The workspace's customers, newest first, a page at a time (pass `next` as `cursor`). "
        "`email` finds one by address in any letter case, `external_id` by your own id, `search` matches a part "
        "of the email, name or external id. A test token reads test contacts only, a live token live ones only. "
        "Limits: 600 requests a minute per token and per client address.",
        tags=["customers"],
        parameters=[
            OpenApiParameter("email", str, description="The address, in any letter case."),
            OpenApiParameter("external_id", str, description="Your own id of the customer."),
            OpenApiParameter(
                "search",
                str,
                description=f"A part of the email, name or external id (at most {SEARCH_MAX} characters).",
            ),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: OpenApiResponse(CustomerPageOut, description="A page of customers."),
            **error_responses(400, 401, 403, 422, 429, 500, 503, e422=["search is too long", *PAGE_ERRORS]),
        },
    )
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

    @extend_schema(
        operation_id="customer_activity",
        summary="A customer's timeline",
        description="What happened to the customer, newest first, a page at a time (pass `next` as `cursor`): "
        "creation, an email added, an external id moved in from or out to another customer, suppression, their "
        "leads and sales, their enrollments.",
        tags=["customers"],
        parameters=[
            OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`."),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: OpenApiResponse(ActivityPageOut, description="A page of the timeline."),
            **error_responses(400, 401, 403, 404, 422, 429, 500, 503, e404=["unknown customer"], e422=PAGE_ERRORS),
        },
    )
    @action(detail=True, methods=["get"])
    @rate_limit(*READ_LIMITS)
    def activity(self, request, pk: str) -> Response:
        limit, after = page_position(request.query_params, ranked=True)
        customer = customer_by_reference(
            workspace_id=request.auth.workspace_id, reference=pk, test=request.auth.is_test
        )
        if customer is None:
            raise NotFound("unknown customer")
        data, last = customer_timeline(customer, after=after, limit=limit)
        return Response({"data": data, "next": None if last is None else cursor_encode(*last)})

    @extend_schema(
        operation_id="customer_retrieve",
        summary="Read a customer",
        description="By our id, or by yours as `ext_<external_id>`. Another workspace's customer is 404, as one "
        "that does not exist.",
        tags=["customers"],
        parameters=[
            OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`.")
        ],
        responses={
            200: OpenApiResponse(CustomerOut, description="The customer."),
            **error_responses(400, 401, 403, 404, 429, 500, 503, e404=["unknown customer"]),
        },
    )
    @rate_limit(*READ_LIMITS)
    def retrieve(self, request, pk: str) -> Response:
        workspace_id = request.auth.workspace_id
        test = request.auth.is_test
        customer = customer_by_reference(workspace_id=workspace_id, reference=pk, test=test)
        if customer is None:
            raise NotFound("unknown customer")
        return Response(customers_out([customer], workspace_id, test=test)[customer.pk])
