"""OpenAPI description of POST /api/v1/conversions/{id}/refunds (conversions/refunds_api.py)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from conversions.openapi import IDEMPOTENCY_KEY, IDEMPOTENCY_KEY_INVALID, IDEMPOTENCY_KEY_LONG, IDEMPOTENCY_KEY_REUSED
from conversions.refunds import AMOUNT_TOO_LARGE, NOT_A_SALE, REFUND_EXCEEDS, REFUND_ID_REUSED
from lftrack.openapi import error_responses, string_messages

AMOUNT_ERROR = "amount_cents must be a positive integer"


class RefundSaleOut(serializers.Serializer):
    id = serializers.IntegerField()
    currency = serializers.CharField()
    value_cents = serializers.IntegerField(allow_null=True)
    refunded_cents = serializers.IntegerField(help_text="All its refunds so far, this one included.")
    net_cents = serializers.IntegerField()


@extend_schema_serializer(component_name="Refund")
class RefundOut(serializers.Serializer):
    id = serializers.IntegerField()
    conversion_id = serializers.IntegerField()
    amount_cents = serializers.IntegerField()
    currency = serializers.CharField()
    reason = serializers.CharField(allow_null=True)
    refund_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    sale = RefundSaleOut(help_text="The sale refunded, with what is refunded and what is left of it now.")


REFUND_ERRORS = [
    AMOUNT_ERROR,
    AMOUNT_TOO_LARGE,
    REFUND_EXCEEDS,
    NOT_A_SALE,
    REFUND_ID_REUSED,
    IDEMPOTENCY_KEY_LONG,
    IDEMPOTENCY_KEY_INVALID,
    IDEMPOTENCY_KEY_REUSED,
    *string_messages("reason", "refund_id"),
]


REFUND_CREATE = {
    "operation_id": "refund_create",
    "summary": "Refund a sale, in part or in full",
    "description": "Records a refund of the sale: `amount_cents` (in the minor unit of the sale's currency; absent: "
    "what is left of it). Refunds never add up to more than the sale, also when sent at the same moment (422 "
    "`refund exceeds the sale`); a lead cannot be refunded. The sale's net revenue follows everywhere, on the day "
    "of the sale. Limits: those of recording conversions.",
    "tags": ["conversions"],
    "parameters": [
        OpenApiParameter("conversion_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The sale's id."),
        IDEMPOTENCY_KEY,
    ],
    "responses": {
        201: OpenApiResponse(
            RefundOut,
            description="Stored; or, with `Idempotent-Replayed: true`, the answer first given to this "
            "`Idempotency-Key`, nothing stored again.",
        ),
        200: OpenApiResponse(
            RefundOut,
            description="A `refund_id` the workspace has refunded before, of the same sale and amount (or "
            "none): that first refund, with `Idempotent-Replayed: true`; nothing stored.",
        ),
        **error_responses(
            400, 401, 403, 404, 413, 415, 422, 429, 500, 503, e404=["unknown conversion"], e422=REFUND_ERRORS
        ),
    },
    "examples": [
        OpenApiExample(
            "A partial refund",
            request_only=True,
            value={"amount_cents": 4900, "reason": "damaged in transit", "refund_id": "re_3PQx9zLkdIwHu7ix"},
        ),
    ],
}
