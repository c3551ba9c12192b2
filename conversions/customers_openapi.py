"""OpenAPI description of GET /api/v1/customers, /customers/{id}, /customers/{id}/activity and /customers/{id}/export,
and DELETE /customers/{id} (conversions/customers_api.py), with the search's bound both name."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from campaigns.models import Suppression
from customers.models import Customer, CustomerActivity
from lftrack.openapi import PAGE_PARAMETERS, error_responses, page_of
from lftrack.pagination import PAGE_ERRORS

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


CUSTOMER_LIST = {
    "operation_id": "customer_list",
    "summary": "List or find customers",
    "description": "The workspace's customers, newest first, a page at a time (pass `next` as `cursor`). "
    "`email` finds one by address in any letter case, `external_id` by your own id, `search` matches a part "
    "of the email, name or external id. A test token reads test contacts only, a live token live ones only. "
    "Limits: 600 requests a minute per token and per client address.",
    "tags": ["customers"],
    "parameters": [
        OpenApiParameter("email", str, description="The address, in any letter case."),
        OpenApiParameter("external_id", str, description="Your own id of the customer."),
        OpenApiParameter(
            "search",
            str,
            description=f"A part of the email, name or external id (at most {SEARCH_MAX} characters).",
        ),
        *PAGE_PARAMETERS,
    ],
    "responses": {
        200: OpenApiResponse(CustomerPageOut, description="A page of customers."),
        **error_responses(400, 401, 403, 422, 429, 500, 503, e422=["search is too long", *PAGE_ERRORS]),
    },
}

CUSTOMER_ACTIVITY = {
    "operation_id": "customer_activity",
    "summary": "A customer's timeline",
    "description": "What happened to the customer, newest first, a page at a time (pass `next` as `cursor`): "
    "creation, an email added, an external id moved in from or out to another customer, suppression, their "
    "leads and sales, their enrollments.",
    "tags": ["customers"],
    "parameters": [
        OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`."),
        *PAGE_PARAMETERS,
    ],
    "responses": {
        200: OpenApiResponse(ActivityPageOut, description="A page of the timeline."),
        **error_responses(400, 401, 403, 404, 422, 429, 500, 503, e404=["unknown customer"], e422=PAGE_ERRORS),
    },
}

CUSTOMER_RETRIEVE = {
    "operation_id": "customer_retrieve",
    "summary": "Read a customer",
    "description": "By our id, or by yours as `ext_<external_id>`. Another workspace's customer is 404, as one "
    "that does not exist.",
    "tags": ["customers"],
    "parameters": [
        OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`.")
    ],
    "responses": {
        200: OpenApiResponse(CustomerOut, description="The customer."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=["unknown customer"]),
    },
}


@extend_schema_serializer(component_name="CustomerExport")
class CustomerExportOut(serializers.Serializer):
    customer = serializers.DictField(
        help_text="Their identity: id, email, name, avatar_url, external_id, source, test, created_at, updated_at."
    )
    activity = serializers.ListField(child=serializers.DictField(), help_text="Their identity timeline, oldest first.")
    conversions = serializers.ListField(child=serializers.DictField(), help_text="Their leads and sales, with `meta`.")
    clicks = serializers.ListField(
        child=serializers.DictField(),
        help_text="The clicks they came by: user agent, referrer, device, browser, OS, country, city (null unless "
        "the operator set GEOIP_PATH), UTM source, medium and campaign.",
    )
    refunds = serializers.ListField(child=serializers.DictField(), help_text="The refunds of their sales.")
    enrollments = serializers.ListField(child=serializers.DictField(), help_text="Their campaign enrollments.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Their tags.")
    emails = serializers.ListField(child=serializers.DictField(), help_text="The campaign emails sent to them.")
    broadcasts = serializers.ListField(
        child=serializers.DictField(), help_text="The broadcasts they were a recipient of, and what became of each."
    )
    suppressions = serializers.ListField(child=serializers.DictField(), help_text="Their address's suppression.")
    payment_references = serializers.ListField(
        child=serializers.DictField(), help_text="The payment provider's ids that stand for them."
    )
    payment_events = serializers.ListField(
        child=serializers.DictField(), help_text="The payment provider's events about them, with their bodies."
    )


CUSTOMER_EXPORT = {
    "operation_id": "customer_export",
    "summary": "Export everything known of a customer",
    "description": "Everything lftrack holds of the person, as one JSON object (GDPR article 15; docs/privacy.md): "
    "their identity, timeline, conversions with `meta`, the clicks they came by, refunds, enrollments, the emails "
    "sent to them, their suppression, and the payment provider's ids and events about them. Needs the "
    "`customers:read` scope (or a token without scopes). Limits: as the read API.",
    "tags": ["customers"],
    "parameters": [
        OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`.")
    ],
    "responses": {
        200: OpenApiResponse(CustomerExportOut, description="Everything known of the customer."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=["unknown customer"]),
    },
}

CUSTOMER_ERASE = {
    "operation_id": "customer_erase",
    "summary": "Erase a customer",
    "description": 'Erases the person (GDPR article 17; docs/privacy.md, "Erasing a person"): their email, name, '
    "avatar, external id, the user agents and referrers of the clicks they came by, what their conversions and "
    "refunds said of them, the addresses of the emails sent to them and the provider's data about them are "
    "removed; their address stays only as a suppression digest, so they are never emailed again, even if they "
    "come back as a new lead; their conversions stay counted in every number without pointing to them. A "
    "`customer.erased` webhook event carries the id. Cannot be undone; the customer is 404 from then on. Needs "
    "the `customers:write` scope (or a token without scopes). Limits: 60 a minute per token, and the read API's "
    "per client address.",
    "tags": ["customers"],
    "parameters": [
        OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`.")
    ],
    "responses": {
        204: OpenApiResponse(description="Erased."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=["unknown customer"]),
    },
}
