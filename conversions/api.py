"""POST /api/v1/conversions (SPEC 4.1)."""
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from conversions.models import ConversionEvent
from conversions.services import (
    Answer,
    conversion_record,
    idempotency_key_check,
    idempotent_answer,
    request_digest,
)
from lftrack.api import (
    JSONObjectField,
    StrictCharField,
    StrictChoiceField,
    StrictEmailField,
    StrictIntegerField,
    StrictURLField,
    iso_utc,
    optional,
    parse,
    request_json,
)
from lftrack.ratelimit import Limit, ip_key, rate_limit, token_key

VALUE_CENTS_ERROR = "value_cents must be a non-negative integer"


class CustomerInput(serializers.Serializer):
    external_id = StrictCharField(max_length=255, required=False, allow_null=True)
    email = StrictEmailField(required=False, allow_null=True)
    name = StrictCharField(max_length=200, required=False, allow_null=True)
    avatar_url = StrictURLField(max_length=2048, required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        present = {field: value for field, value in attrs.items() if value}
        if not present.get("email") and not present.get("external_id"):
            raise serializers.ValidationError("customer needs email or external_id")
        return present


class ConversionInput(serializers.Serializer):
    event = StrictChoiceField(choices=["lead", "sale"], error_messages={"invalid": "invalid event", "required": "invalid event", "null": "invalid event"})
    click_id = StrictCharField(max_length=64, allow_blank=False, error_messages={"required": "click_id is required", "blank": "click_id is required", "null": "click_id is required"})
    # Validated only for sales: on a lead it is ignored, whatever it holds (CONTRACT.md section 3).
    value_cents = serializers.JSONField(required=False, allow_null=True)
    event_name = StrictCharField(max_length=255, required=False, allow_null=True)
    customer = CustomerInput(required=False, allow_null=True, error_messages={"invalid": "customer must be an object"})
    meta = JSONObjectField(max_bytes=16 * 1024, required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        value = attrs.get("value_cents")
        if attrs["event"] == ConversionEvent.Event.SALE and value is not None:
            attrs["value_cents"] = _strict_value_cents.run_validation(value)
        else:
            attrs["value_cents"] = None
        return attrs


_strict_value_cents = StrictIntegerField(error_messages={"invalid": VALUE_CENTS_ERROR})
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


class ConversionViewSet(viewsets.ViewSet):
    @rate_limit(
        Limit("conversions-token", token_key, "RATELIMIT_CONVERSIONS_TOKEN"),
        Limit("conversions-ip", ip_key, "RATELIMIT_CONVERSIONS_IP"),
    )
    def create(self, request) -> Response:
        data = parse(ConversionInput, request_json(request))
        # META, not request.headers: that would build a dict of every header first.
        key = idempotency_key_check(request.META.get("HTTP_IDEMPOTENCY_KEY"))
        workspace = request.auth.workspace

        def record() -> Answer:
            conversion = conversion_record(
                workspace=workspace,
                channel="api",
                event=data["event"],
                click_id=data["click_id"],
                value_cents=data["value_cents"],
                event_name=data.get("event_name") or "",
                meta=data.get("meta"),
                customer=data.get("customer"),
            )
            return Answer(status=201, body=conversion_out(conversion, data["click_id"]))

        answer = idempotent_answer(
            workspace=workspace, key=key, digest=request_digest(request.data) if key else "", answer=record
        )
        headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
        return Response(answer.body, status=answer.status, headers=headers)
