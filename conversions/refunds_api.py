"""POST /api/v1/conversions/{id}/refunds: refund a sale, in part or in full (docs/api.md, "Refunds")."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from conversions.api import (
    CONVERSION_LIMITS,
    IDEMPOTENCY_KEY,
    IDEMPOTENCY_KEY_INVALID,
    IDEMPOTENCY_KEY_LONG,
    IDEMPOTENCY_KEY_REUSED,
    sale_money_out,
)
from conversions.refunds import (
    AMOUNT_TOO_LARGE,
    NOT_A_SALE,
    REFUND_EXCEEDS,
    REFUND_ID_REUSED,
    RefundResult,
    refund_record,
)
from conversions.services import Answer, idempotency_key_check, idempotent_answer, request_digest
from lftrack.currencies import MONEY_MAX
from lftrack.db import as_id
from lftrack.errors import NotFound
from lftrack.fields import StrictCharField, StrictIntegerField, iso_utc, optional
from lftrack.openapi import error_responses, string_messages
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import rate_limit

AMOUNT_ERROR = "amount_cents must be a positive integer"


class RefundInput(serializers.Serializer):
    amount_cents = StrictIntegerField(
        min_value=1,
        max_value=MONEY_MAX,
        required=False,
        allow_null=True,
        error_messages={"invalid": AMOUNT_ERROR, "too_large": AMOUNT_TOO_LARGE},
        help_text="How much, in the minor unit of the sale's currency, at most 2^53 - 1; absent: all that is left of "
        "the sale.",
    )
    reason = StrictCharField(max_length=500, required=False, allow_null=True)
    refund_id = StrictCharField(
        max_length=255,
        required=False,
        allow_null=True,
        help_text="The refund's id at your payment provider: a second refund with it, of the same sale and amount (or "
        "none), stores nothing and answers 200 with the first (`Idempotent-Replayed: true`), forever; of another sale "
        "or amount, 422.",
    )


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


def refund_out(result: RefundResult) -> dict:
    refund, sale = result.refund, result.sale
    return {
        "id": refund.pk,
        "conversion_id": sale.pk,
        "amount_cents": refund.amount_cents,
        "currency": refund.currency,
        "reason": optional(refund.reason),
        "refund_id": optional(refund.refund_id),
        "created_at": iso_utc(refund.created_at),
        "sale": {"id": sale.pk, "value_cents": sale.value_cents, **sale_money_out(sale)},
    }


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


class RefundViewSet(viewsets.ViewSet):
    required_scopes = {"create": "conversions:write"}  # workspaces/auth.py

    @extend_schema(
        operation_id="refund_create",
        summary="Refund a sale, in part or in full",
        description="Records a refund of the sale: `amount_cents` (in the minor unit of the sale's currency; absent: "
        "what is left of it). Refunds never add up to more than the sale, also when sent at the same moment (422 "
        "`refund exceeds the sale`); a lead cannot be refunded. The sale's net revenue follows everywhere, on the day "
        "of the sale. Limits: those of recording conversions.",
        tags=["conversions"],
        request=RefundInput,
        parameters=[
            OpenApiParameter("conversion_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The sale's id."),
            IDEMPOTENCY_KEY,
        ],
        responses={
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
        examples=[
            OpenApiExample(
                "A partial refund",
                request_only=True,
                value={"amount_cents": 4900, "reason": "damaged in transit", "refund_id": "re_3PQx9zLkdIwHu7ix"},
            ),
        ],
    )
    @rate_limit(*CONVERSION_LIMITS)
    def create(self, request, conversion_id: str) -> Response:
        data = parse(RefundInput, request_json(request))
        key = idempotency_key_check(request.META.get("HTTP_IDEMPOTENCY_KEY"))
        sale_id = as_id(conversion_id)
        if sale_id is None:
            raise NotFound("unknown conversion")
        workspace = request.auth.workspace

        def record() -> Answer:
            result = refund_record(
                workspace=workspace,
                sale_id=sale_id,
                amount_cents=data.get("amount_cents"),
                reason=data.get("reason") or "",
                refund_id=data.get("refund_id") or "",
                test=request.auth.is_test,
            )
            return Answer(status=201 if result.created else 200, body=refund_out(result), replayed=not result.created)

        # The key names this request on this sale: the same body on another sale is another request.
        digest = request_digest({"refund_of": sale_id, **request.data}) if key else ""
        answer = idempotent_answer(
            workspace=workspace, key=key, digest=digest, answer=record, test=request.auth.is_test
        )
        headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
        return Response(answer.body, status=answer.status, headers=headers)
