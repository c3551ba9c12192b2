"""POST /api/v1/campaigns/<slug>/leads, GET /api/v1/campaigns/<slug>/enrollments and POST /api/v1/email-events
(bounces and complaints)."""

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from campaigns.complaints import EVENT_TYPES, email_event_record
from campaigns.models import Enrollment, Suppression
from campaigns.selectors import enrollments_page
from campaigns.services import LeadOutcome, LeadResult, campaign_get, campaign_lead_add
from lftrack.api import (
    PAGE_ERRORS,
    READ_LIMITS,
    StrictCharField,
    StrictChoiceField,
    StrictEmailField,
    iso_utc,
    optional,
    page_out,
    page_position,
    parse,
    request_json,
)
from lftrack.errors import Unprocessable
from lftrack.openapi import PAGE_PARAMETERS, PagedAutoSchema, error_responses, page_of, string_messages
from lftrack.ratelimit import Limit, ip_key, rate_limit, token_key

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


class EnrollmentOut(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=Enrollment.State.choices)
    enrolled_at = serializers.DateTimeField()
    next_send_at = serializers.DateTimeField(allow_null=True, help_text="Null while the campaign has no active email.")


class ContactOut(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField()
    name = serializers.CharField(allow_null=True)
    external_id = serializers.CharField(allow_null=True)


@extend_schema_serializer(component_name="CampaignLead")
class CampaignLeadOut(serializers.Serializer):
    """What `lead_out` builds: the outcome, the contact, and the enrollment (null when suppressed)."""

    outcome = serializers.ChoiceField(choices=LeadOutcome.choices)
    contact = ContactOut()
    enrollment = EnrollmentOut(allow_null=True)


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

    @extend_schema(
        operation_id="campaign_lead_create",
        summary="Enroll a contact in a campaign's sequence",
        description="For a person with no click to credit. The contact is matched by email (case-insensitively) and "
        "a sent `name` replaces the stored one. Idempotent: the same email again answers `already_enrolled`. "
        "A test token (`lf_test_`) enrolls a test contact, never a live one: its steps are recorded as `test` sends "
        "and nobody is mailed. Limit: 120 requests a minute per token, whatever their outcome.",
        tags=["campaigns"],
        request=CampaignLeadInput,
        responses={
            201: OpenApiResponse(
                CampaignLeadOut,
                description="`created` (a new contact) or `reused` (a known contact "
                "enrolled, or a stopped enrollment resumed).",
            ),
            200: OpenApiResponse(
                CampaignLeadOut,
                description="`already_enrolled` (enrollment untouched; name and "
                "external_id still applied) or `suppressed` (nothing enrolled, `enrollment` null).",
            ),
            **error_responses(
                400,
                401,
                403,
                404,
                413,
                415,
                422,
                429,
                500,
                503,
                e404=["unknown campaign"],
                e422=["email is required", "invalid email", *string_messages("email", "name", "external_id")],
            ),
        },
        examples=[
            OpenApiExample(
                "A new contact",
                request_only=True,
                value={"email": "ada@example.com", "name": "Ada Lovelace", "external_id": "user_42"},
            ),
            OpenApiExample(
                "Created",
                response_only=True,
                status_codes=[201],
                value={
                    "outcome": "created",
                    "contact": {"id": 12, "email": "ada@example.com", "name": "Ada Lovelace", "external_id": "user_42"},
                    "enrollment": {
                        "id": 5,
                        "state": "active",
                        "enrolled_at": "2026-11-21T22:53:54.057780Z",
                        "next_send_at": "2026-11-21T23:53:54.057780Z",
                    },
                },
            ),
            OpenApiExample(
                "Suppressed",
                response_only=True,
                status_codes=[200],
                value={
                    "outcome": "suppressed",
                    "contact": {"id": 12, "email": "ada@example.com", "name": "Ada Lovelace", "external_id": None},
                    "enrollment": None,
                },
            ),
        ],
    )
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


class RecipientContactOut(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True)
    external_id = serializers.CharField(allow_null=True)


@extend_schema_serializer(component_name="Recipient")
class RecipientOut(serializers.Serializer):
    """An enrollment as the read API shows it: who, in which state, what went last and what goes next."""

    id = serializers.IntegerField()
    contact = RecipientContactOut()
    state = serializers.ChoiceField(choices=Enrollment.State.choices)
    enrolled_at = serializers.DateTimeField()
    next_send_at = serializers.DateTimeField(allow_null=True)
    last_sent_position = serializers.IntegerField(help_text="The step sent last; 0 before the first.")
    last_sent_at = serializers.DateTimeField(allow_null=True)


RecipientPageOut = page_of(RecipientOut, "RecipientPage")


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

    @extend_schema(
        operation_id="campaign_enrollment_list",
        summary="List a campaign's recipients",
        description="Its enrollments, newest first, a page at a time (pass `next` as `cursor`), optionally in one "
        "`state`. A test token reads test contacts' enrollments only, a live token live ones only. "
        "Limits: 600 requests a minute per token and per client address.",
        tags=["campaigns"],
        parameters=[
            OpenApiParameter("state", str, enum=Enrollment.State.values, description="Only enrollments in this state."),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: OpenApiResponse(RecipientPageOut, description="A page of recipients."),
            **error_responses(
                400, 401, 403, 404, 422, 429, 500, 503, e404=["unknown campaign"], e422=["invalid state", *PAGE_ERRORS]
            ),
        },
    )
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


@extend_schema_serializer(component_name="EmailEvent")
class EmailEventOut(serializers.Serializer):
    """The address as now on the suppression list; `reason` is the first one it was suppressed for."""

    email = serializers.CharField()
    reason = serializers.ChoiceField(choices=Suppression.Reason.choices)
    suppressed = serializers.BooleanField()


class EmailEventViewSet(viewsets.ViewSet):
    """POST /api/v1/email-events: an email provider's bounce or complaint, relayed by a webhook."""

    required_scopes = {"create": "email_events:write"}  # workspaces/auth.py

    @extend_schema(
        operation_id="email_event_create",
        summary="Report a bounce or a complaint",
        description="A `bounce` suppresses the address as `bounced`; a `complaint` as `complained`, marks the email "
        "complained of (the one with `message_id`, else the latest sent to the address) and may pause its campaign. Either stops the address's active enrollments. Idempotent. "
        "A test token (`lf_test_`) suppresses the address in test mode only: its test contact's enrollments stop, no "
        "live contact or suppression changes, no email is marked and no campaign paused.",
        tags=["email events"],
        request=EmailEventInput,
        responses={
            200: OpenApiResponse(EmailEventOut, description="The address is suppressed."),
            **error_responses(
                400,
                401,
                403,
                413,
                415,
                422,
                429,
                500,
                503,
                e422=["invalid type", "email is required", "invalid email", *string_messages("email", "message_id")],
            ),
        },
        examples=[
            OpenApiExample("A complaint", request_only=True, value={"type": "complaint", "email": "ada@example.com"}),
            OpenApiExample(
                "Suppressed",
                response_only=True,
                status_codes=[200],
                value={"email": "ada@example.com", "reason": "complained", "suppressed": True},
            ),
        ],
    )
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
