"""POST and GET /api/v1/conversions (docs/api.md; described in conversions/openapi.py)."""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from conversions import openapi
from conversions.models import ConversionEvent
from conversions.openapi import CURRENCY_ERROR, CURRENCY_NOT_A_STRING, VALUE_CENTS_ERROR, VALUE_CENTS_TOO_LARGE
from conversions.selectors import conversions_page
from conversions.services import (
    Answer,
    InvoiceRecorded,
    conversion_record,
    idempotency_key_check,
    idempotent_answer,
    request_digest,
)
from lftrack.currencies import MONEY_MAX, currency_code
from lftrack.errors import ServiceError, Unprocessable
from lftrack.fields import (
    JSONObjectField,
    StrictCharField,
    StrictChoiceField,
    StrictEmailField,
    StrictIntegerField,
    StrictURLField,
    aware_utc,
    iso_utc,
    optional,
)
from lftrack.metrics import CONVERSIONS, labelled
from lftrack.openapi import PagedAutoSchema
from lftrack.pagination import page_out, page_position, query_int, query_time
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import READ_LIMITS, Limit, ip_key, rate_limit, token_key


@extend_schema_field(openapi.VALUE_CENTS)
class ValueCentsField(serializers.JSONField):
    """Taken as sent: `ConversionInput.validate` checks it on a sale only (docs/api.md)."""


@extend_schema_field(openapi.CURRENCY)
class CurrencyField(serializers.JSONField):
    """Taken as sent: `ConversionInput.validate` checks it on a sale only (docs/api.md)."""


class CustomerInput(serializers.Serializer):
    """The customer the event belongs to: a non-empty `email` or `external_id` (or both) is required."""

    external_id = StrictCharField(max_length=255, required=False, allow_null=True)
    email = StrictEmailField(required=False, allow_null=True)
    name = StrictCharField(max_length=200, required=False, allow_null=True)
    avatar_url = StrictURLField(max_length=2048, required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        present = {field: value for field, value in attrs.items() if value}
        if not present.get("email") and not present.get("external_id"):
            raise serializers.ValidationError("customer needs email or external_id")
        return present


# A sender's clock may run a little ahead of ours.
CLOCK_SKEW = timedelta(minutes=5)


def backdated(raw: str) -> datetime:
    """`occurred_at` as sent: an aware time (in UTC) within BACKDATE_WINDOW_DAYS, not in the future."""
    moment = aware_utc(raw)
    if moment is None:
        raise serializers.ValidationError("occurred_at must be an ISO 8601 time with an offset")
    now = timezone.now()
    if moment > now + CLOCK_SKEW:
        raise serializers.ValidationError("occurred_at is in the future")
    if moment < now - timedelta(days=settings.BACKDATE_WINDOW_DAYS):
        raise serializers.ValidationError(f"occurred_at is more than {settings.BACKDATE_WINDOW_DAYS} days ago")
    return moment


class ConversionInput(serializers.Serializer):
    event = StrictChoiceField(
        choices=["lead", "sale"],
        error_messages={"invalid": "invalid event", "required": "invalid event", "null": "invalid event"},
    )
    click_id = StrictCharField(
        max_length=64,
        allow_blank=False,
        error_messages={
            "required": "click_id is required",
            "blank": "click_id is required",
            "null": "click_id is required",
        },
    )
    # Validated only for sales: on a lead it is ignored, whatever it holds (docs/api.md).
    value_cents = ValueCentsField(required=False, allow_null=True)
    event_name = StrictCharField(max_length=255, required=False, allow_null=True)
    customer = CustomerInput(required=False, allow_null=True, error_messages={"invalid": "customer must be an object"})
    meta = JSONObjectField(max_bytes=16 * 1024, required=False, allow_null=True)
    occurred_at = StrictCharField(
        max_length=64,
        required=False,
        allow_null=True,
        help_text="When it happened, for a backfill: ISO 8601 with an offset, at most BACKDATE_WINDOW_DAYS (90) ago and "
        "not in the future; the click must have existed by then. Absent: now.",
    )
    invoice_id = StrictCharField(
        max_length=255,
        required=False,
        allow_null=True,
        help_text="A sale's charge or invoice id at your payment provider: a second sale with it stores nothing and "
        "answers 200 with the first (`Idempotent-Replayed: true`), forever. Ignored on a lead.",
    )
    # Like value_cents: validated only for sales, ignored on a lead whatever it holds (docs/api.md).
    currency = CurrencyField(required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        if attrs.get("occurred_at"):
            attrs["occurred_at"] = backdated(attrs["occurred_at"])
        value = attrs.get("value_cents")
        if attrs["event"] == ConversionEvent.Event.SALE and value is not None:
            attrs["value_cents"] = _strict_value_cents.run_validation(value)
        else:
            attrs["value_cents"] = None
        currency = attrs.get("currency")
        if attrs["event"] == ConversionEvent.Event.SALE and currency is not None:
            if not isinstance(currency, str):
                raise serializers.ValidationError(CURRENCY_NOT_A_STRING)
            attrs["currency"] = currency_code(currency)
            if attrs["currency"] is None:
                raise serializers.ValidationError(CURRENCY_ERROR)
        else:
            attrs["currency"] = None
        return attrs


_strict_value_cents = StrictIntegerField(
    max_value=MONEY_MAX, error_messages={"invalid": VALUE_CENTS_ERROR, "too_large": VALUE_CENTS_TOO_LARGE}
)
_strict_value_cents.bind("value_cents", None)


def conversion_out(conversion: ConversionEvent, click_id: str) -> dict:
    customer = conversion.customer
    return {
        "id": conversion.pk,
        "event": conversion.event,
        "click_id": click_id,
        "link_id": conversion.link_id,
        "customer": None if customer is None else {"id": customer.pk, "external_id": optional(customer.external_id)},
        "occurred_at": iso_utc(conversion.occurred_at),
    }


def conversion_read_out(conversion: ConversionEvent) -> dict:
    return {
        **conversion_out(conversion, conversion.click_key),
        "value_cents": conversion.value_cents,
        "event_name": optional(conversion.event_name),
        "meta": conversion.meta,
        "channel": conversion.channel,
        "invoice_id": optional(conversion.invoice_id),
        **sale_money_out(conversion),
    }


def sale_money_out(conversion: ConversionEvent) -> dict:
    """A sale's currency, refunded and net amounts (`refunded_cents` annotated or set by the caller); nulls on a lead."""
    if conversion.event != ConversionEvent.Event.SALE:
        return {"currency": None, "refunded_cents": None, "net_cents": None}
    return {
        "currency": conversion.currency,
        "refunded_cents": conversion.refunded_cents,
        "net_cents": (conversion.value_cents or 0) - conversion.refunded_cents,
    }


CONVERSION_LIMITS = (
    Limit("conversions-token", token_key, "RATELIMIT_CONVERSIONS_TOKEN"),
    Limit("conversions-ip", ip_key, "RATELIMIT_CONVERSIONS_IP"),
)


class ConversionViewSet(viewsets.ViewSet):
    required_scopes = {"create": "conversions:write", "list": "read"}  # workspaces/auth.py
    schema = PagedAutoSchema()

    @extend_schema(**openapi.CONVERSION_LIST)
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        params = request.query_params
        event = params.get("event")
        if event is not None and event not in ("lead", "sale"):
            raise Unprocessable("invalid event")
        filters = {
            "event": event,
            "link_id": query_int(params, "link_id"),
            "customer_id": query_int(params, "customer_id"),
            "since": query_time(params, "since"),
            "until": query_time(params, "until"),
        }
        # As GET /api/v1/analytics says it: an empty range is a mistake, not an empty page.
        if filters["since"] is not None and filters["until"] is not None and filters["since"] > filters["until"]:
            raise Unprocessable("since is after until")
        limit, after = page_position(params)
        page = conversions_page(
            workspace_id=request.auth.workspace_id,
            filters=filters,
            after=after,
            limit=limit + 1,
            test=request.auth.is_test,
        )
        return Response(page_out(page, limit, conversion_read_out, at=lambda c: c.occurred_at))

    @extend_schema(request=ConversionInput, **openapi.CONVERSION_CREATE)
    @rate_limit(*CONVERSION_LIMITS)
    def create(self, request) -> Response:
        data = parse(ConversionInput, request_json(request))
        # META, not request.headers: that would build a dict of every header first.
        key = idempotency_key_check(request.META.get("HTTP_IDEMPOTENCY_KEY"))
        workspace = request.auth.workspace

        def record() -> Answer:
            try:
                conversion = conversion_record(
                    workspace=workspace,
                    channel="api",
                    event=data["event"],
                    click_id=data["click_id"],
                    value_cents=data["value_cents"],
                    event_name=data.get("event_name") or "",
                    meta=data.get("meta"),
                    customer=data.get("customer"),
                    invoice_id=data.get("invoice_id") or "",
                    occurred_at=data.get("occurred_at"),
                    currency=data["currency"],
                    test=request.auth.is_test,
                )
            except InvoiceRecorded as recorded:  # the invoice's first sale, whatever this body says
                return Answer(status=200, body=conversion_out(recorded.sale, recorded.sale.click_key), replayed=True)
            return Answer(status=201, body=conversion_out(conversion, data["click_id"]))

        try:
            answer = idempotent_answer(
                workspace=workspace,
                key=key,
                digest=request_digest(request.data) if key else "",
                answer=record,
                test=request.auth.is_test,
            )
        except ServiceError:
            labelled(CONVERSIONS, "api", data["event"], "refused").inc()
            raise
        labelled(CONVERSIONS, "api", data["event"], "replayed" if answer.replayed else "recorded").inc()
        headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
        return Response(answer.body, status=answer.status, headers=headers)
