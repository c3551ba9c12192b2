"""OpenAPI description of the campaigns endpoints (campaigns/api.py): the answers' shapes (the views build them
by hand) and the operations' texts, examples and errors."""

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from campaigns.models import Enrollment, Suppression
from campaigns.services import LeadOutcome
from lftrack.openapi import PAGE_PARAMETERS, error_responses, page_of, string_messages
from lftrack.pagination import PAGE_ERRORS


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


CAMPAIGN_LEAD_CREATE = {
    "operation_id": "campaign_lead_create",
    "summary": "Enroll a contact in a campaign's sequence",
    "description": "For a person with no click to credit. The contact is matched by email (case-insensitively) and "
    "a sent `name` replaces the stored one. Idempotent: the same email again answers `already_enrolled`. "
    "A test token (`lf_test_`) enrolls a test contact, never a live one: its steps are recorded as `test` sends "
    "and nobody is mailed. Limit: 120 requests a minute per token, whatever their outcome.",
    "tags": ["campaigns"],
    "responses": {
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
    "examples": [
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
}


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


CAMPAIGN_ENROLLMENT_LIST = {
    "operation_id": "campaign_enrollment_list",
    "summary": "List a campaign's recipients",
    "description": "Its enrollments, newest first, a page at a time (pass `next` as `cursor`), optionally in one "
    "`state`. A test token reads test contacts' enrollments only, a live token live ones only. "
    "Limits: 600 requests a minute per token and per client address.",
    "tags": ["campaigns"],
    "parameters": [
        OpenApiParameter("state", str, enum=Enrollment.State.values, description="Only enrollments in this state."),
        *PAGE_PARAMETERS,
    ],
    "responses": {
        200: OpenApiResponse(RecipientPageOut, description="A page of recipients."),
        **error_responses(
            400, 401, 403, 404, 422, 429, 500, 503, e404=["unknown campaign"], e422=["invalid state", *PAGE_ERRORS]
        ),
    },
}


@extend_schema_serializer(component_name="EmailEvent")
class EmailEventOut(serializers.Serializer):
    """The address as now on the suppression list; `reason` is the first one it was suppressed for."""

    email = serializers.CharField()
    reason = serializers.ChoiceField(choices=Suppression.Reason.choices)
    suppressed = serializers.BooleanField()


EMAIL_EVENT_CREATE = {
    "operation_id": "email_event_create",
    "summary": "Report a bounce or a complaint",
    "description": "A `bounce` suppresses the address as `bounced`; a `complaint` as `complained`, marks the email "
    "complained of (the one with `message_id`, else the latest sent to the address) and may pause its campaign. Either stops the address's active enrollments. Idempotent. "
    "A test token (`lf_test_`) suppresses the address in test mode only: its test contact's enrollments stop, no "
    "live contact or suppression changes, no email is marked and no campaign paused.",
    "tags": ["email events"],
    "responses": {
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
    "examples": [
        OpenApiExample("A complaint", request_only=True, value={"type": "complaint", "email": "ada@example.com"}),
        OpenApiExample(
            "Suppressed",
            response_only=True,
            status_codes=[200],
            value={"email": "ada@example.com", "reason": "complained", "suppressed": True},
        ),
    ],
}
