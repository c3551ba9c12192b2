"""POST /api/v1/campaigns/<slug>/leads (SPEC 4.2) and POST /api/v1/email-events (bounces and complaints)."""
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from campaigns.complaints import EVENT_TYPES, email_event_record
from campaigns.models import Enrollment
from campaigns.services import LeadOutcome, LeadResult, campaign_get, campaign_lead_add
from lftrack.api import StrictCharField, StrictChoiceField, StrictEmailField, iso_utc, optional, parse, request_json
from lftrack.ratelimit import Limit, rate_limit, token_key

# Every request counts, whatever its outcome (CONTRACT.md section 3).
LEADS_PER_TOKEN = Limit("campaign-leads-token", token_key, "RATELIMIT_CAMPAIGN_LEADS_TOKEN")
_STATUS = {LeadOutcome.CREATED: 201, LeadOutcome.REUSED: 201, LeadOutcome.ALREADY_ENROLLED: 200, LeadOutcome.SUPPRESSED: 200}


class CampaignLeadInput(serializers.Serializer):
    email = StrictEmailField(allow_blank=False)  # missing, null or "": "email is required"
    name = StrictCharField(max_length=200, required=False, allow_null=True)
    external_id = StrictCharField(max_length=255, required=False, allow_null=True)


def enrollment_out(enrollment: Enrollment) -> dict:
    return {
        "id": enrollment.pk,
        "state": enrollment.state,
        "enrolled_at": iso_utc(enrollment.enrolled_at),
        "next_send_at": iso_utc(enrollment.next_send_at) if enrollment.next_send_at else None,
    }


def lead_out(result: LeadResult) -> dict:
    contact = result.customer
    return {
        "outcome": result.outcome,
        "contact": {
            "id": contact.pk,
            "email": optional(contact.email),
            "name": optional(contact.name),
            "external_id": optional(contact.external_id),
        },
        "enrollment": None if result.enrollment is None else enrollment_out(result.enrollment),
    }


class CampaignLeadViewSet(viewsets.ViewSet):
    @rate_limit(LEADS_PER_TOKEN)
    def create(self, request, slug: str) -> Response:
        data = parse(CampaignLeadInput, request_json(request))
        campaign = campaign_get(workspace=request.auth.workspace, slug=slug)
        result = campaign_lead_add(
            campaign=campaign,
            email=data["email"],
            name=data.get("name") or "",
            external_id=data.get("external_id") or "",
            channel="api",
        )
        return Response(lead_out(result), status=_STATUS[result.outcome])


class EmailEventInput(serializers.Serializer):
    type = StrictChoiceField(
        choices=list(EVENT_TYPES),
        error_messages={"invalid": "invalid type", "required": "invalid type", "null": "invalid type"},
    )
    email = StrictEmailField(allow_blank=False)  # missing, null or "": "email is required"


class EmailEventViewSet(viewsets.ViewSet):
    """POST /api/v1/email-events: an email provider's bounce or complaint, relayed by a webhook."""

    def create(self, request) -> Response:
        data = parse(EmailEventInput, request_json(request))
        suppression = email_event_record(workspace=request.auth.workspace, event_type=data["type"], email=data["email"])
        return Response({"email": suppression.email, "reason": suppression.reason, "suppressed": True}, status=200)
