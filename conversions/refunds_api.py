"""POST /api/v1/conversions/{id}/refunds: refund a sale, in part or in full (docs/api.md, "Refunds")."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from conversions import refunds_openapi
from conversions.api import CONVERSION_LIMITS, sale_money_out
from conversions.refunds import AMOUNT_TOO_LARGE, RefundResult, refund_record
from conversions.refunds_openapi import AMOUNT_ERROR
from conversions.services import Answer, idempotency_key_check, idempotent_answer, request_digest
from lftrack.currencies import MONEY_MAX
from lftrack.db import as_id
from lftrack.errors import NotFound
from lftrack.fields import StrictCharField, StrictIntegerField, iso_utc, optional
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import rate_limit


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


class RefundViewSet(viewsets.ViewSet):
    required_scopes = {"create": "conversions:write"}  # workspaces/auth.py

    @extend_schema(request=RefundInput, **refunds_openapi.REFUND_CREATE)
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
