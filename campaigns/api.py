"""POST /api/v1/campaigns/<slug>/leads, GET /api/v1/campaigns/<slug>/enrollments and POST /api/v1/email-events
(bounces and complaints); described in campaigns/openapi.py."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from campaigns import openapi
from campaigns.complaints import EVENT_TYPES, email_event_record
from campaigns.models import Enrollment
from campaigns.selectors import enrollments_page
from campaigns.services import LeadOutcome, LeadResult, campaign_get, campaign_lead_add
from lftrack.errors import Unprocessable
from lftrack.fields import StrictCharField, StrictChoiceField, StrictEmailField, iso_utc, optional
from lftrack.openapi import PagedAutoSchema
from lftrack.pagination import page_out, page_position
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import READ_LIMITS, Limit, ip_key, rate_limit, token_key

# Every request counts, whatever its outcome (docs/api.md, "Rate limits").
LEADS_PER_TOKEN = Limit("campaign-leads-token", token_key, "RATELIMIT_CAMPAIGN_LEADS_TOKEN")
LEADS_PER_IP = Limit("campaign-leads-ip", ip_key, "RATELIMIT_CAMPAIGN_LEADS_IP")
EVENTS_PER_TOKEN = Limit("email-events-token", token_key, "RATELIMIT_EMAIL_EVENTS_TOKEN")
EVENTS_PER_IP = Limit("email-events-ip", ip_key, "RATELIMIT_EMAIL_EVENTS_IP")
_STATUS = {
    LeadOutcome.CREATED: 201,
    LeadOutcome.REUSED: 201,
    LeadOutcome.ALREADY_ENROLLED: 200,
    LeadOutcome.SUPPRESSED: 200,
}


class CampaignLeadInput(serializers.Serializer):
    email = StrictEmailField(allow_blank=False)  # missing, null or "": "email is required"
    # The Message-ID header of the email complained of, as the provider reports it (with or without <>).
    message_id = StrictCharField(max_length=998, required=False)
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
    required_scopes = {"create": "leads:write"}  # workspaces/auth.py

    @extend_schema(request=CampaignLeadInput, **openapi.CAMPAIGN_LEAD_CREATE)
    @rate_limit(LEADS_PER_TOKEN, LEADS_PER_IP)
    def create(self, request, slug: str) -> Response:
        data = parse(CampaignLeadInput, request_json(request))
        campaign = campaign_get(workspace=request.auth.workspace, slug=slug)
        result = campaign_lead_add(
            campaign=campaign,
            email=data["email"],
            name=data.get("name") or "",
            external_id=data.get("external_id") or "",
            channel="api",
            test=request.auth.is_test,
        )
        return Response(lead_out(result), status=_STATUS[result.outcome])


def recipient_out(enrollment: Enrollment) -> dict:
    contact = enrollment.customer
    return {
        **enrollment_out(enrollment),
        "contact": {
            "id": contact.pk,
            "email": optional(contact.email),
            "name": optional(contact.name),
            "external_id": optional(contact.external_id),
        },
        "last_sent_position": enrollment.last_sent_position,
        "last_sent_at": iso_utc(enrollment.last_sent_at) if enrollment.last_sent_at else None,
    }


class CampaignEnrollmentViewSet(viewsets.ViewSet):
    """GET /api/v1/campaigns/<slug>/enrollments: a campaign's recipients, newest first."""

    required_scopes = {"list": "read"}  # workspaces/auth.py
    schema = PagedAutoSchema()

    @extend_schema(**openapi.CAMPAIGN_ENROLLMENT_LIST)
    @rate_limit(*READ_LIMITS)
    def list(self, request, slug: str) -> Response:
        state = request.query_params.get("state")
        if state is not None and state not in Enrollment.State.values:
            raise Unprocessable("invalid state")
        limit, after = page_position(request.query_params)
        campaign = campaign_get(workspace=request.auth.workspace, slug=slug)
        rows = enrollments_page(campaign=campaign, state=state, after=after, limit=limit + 1, test=request.auth.is_test)
        return Response(page_out(rows, limit, recipient_out, at=lambda e: e.enrolled_at))


class EmailEventInput(serializers.Serializer):
    type = StrictChoiceField(
        choices=list(EVENT_TYPES),
        error_messages={"invalid": "invalid type", "required": "invalid type", "null": "invalid type"},
    )
    email = StrictEmailField(allow_blank=False)  # missing, null or "": "email is required"
    # The Message-ID header of the email complained of, as the provider reports it (with or without <>).
    message_id = StrictCharField(max_length=998, required=False)


class EmailEventViewSet(viewsets.ViewSet):
    """POST /api/v1/email-events: an email provider's bounce or complaint, relayed by a webhook."""

    required_scopes = {"create": "email_events:write"}  # workspaces/auth.py

    @extend_schema(request=EmailEventInput, **openapi.EMAIL_EVENT_CREATE)
    @rate_limit(EVENTS_PER_TOKEN, EVENTS_PER_IP)
    def create(self, request) -> Response:
        data = parse(EmailEventInput, request_json(request))
        suppression = email_event_record(
            workspace=request.auth.workspace,
            event_type=data["type"],
            email=data["email"],
            message_ids=(data.get("message_id") or "",),
            test=request.auth.is_test,
        )
        return Response({"email": suppression.email, "reason": suppression.reason, "suppressed": True}, status=200)
