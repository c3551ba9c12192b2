"""POST /api/v1/campaigns/<slug>/leads: the outcomes table of docs/enrollment.md, statuses and body, errors, limits."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from campaigns.models import CampaignLead, Enrollment
from campaigns.services import enrollment_stop, suppression_add
from customers.models import Customer
from tests.campaigns.conftest import NOW
from tests.conftest import assert_api_error
from tests.factories import (
    ApiTokenFactory,
    CampaignFactory,
    CustomerFactory,
    EnrollmentFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/campaigns/spring/leads"
NOW_Z = "2026-03-02T09:00:00.000000Z"
IN_AN_HOUR_Z = "2026-03-02T10:00:00.000000Z"


def post(api, token, data, url=URL):
    return api.post(url, data, token=token)


# --- the outcomes table, one test per row -------------------------------------------------------


def test_unknown_email_creates_the_contact_and_enrolls_it(api, acme_token, campaign, clock):
    resp = post(api, acme_token, {"email": "Ada@Example.com", "name": "Ada Lovelace", "external_id": "user_42"})

    assert resp.status_code == 201
    customer = Customer.objects.get()
    enrollment = Enrollment.objects.get()
    assert resp.json() == {
        "outcome": "created",
        "contact": {"id": customer.pk, "email": "Ada@Example.com", "name": "Ada Lovelace", "external_id": "user_42"},
        "enrollment": {"id": enrollment.pk, "state": "active", "enrolled_at": NOW_Z, "next_send_at": IN_AN_HOUR_Z},
    }
    assert customer.workspace == campaign.workspace
    assert customer.source == "api" and customer.get_source_display() == "API"
    lead = CampaignLead.objects.get()
    assert (lead.campaign, lead.customer, lead.enrollment, lead.outcome, lead.channel, lead.conversion_id) == (
        campaign,
        customer,
        enrollment,
        "created",
        "api",
        None,
    )


def test_known_contact_not_enrolled_is_reused_and_its_name_overwritten(api, acme_token, campaign, clock):
    known = CustomerFactory(workspace=campaign.workspace, email="ada@example.com", name="A. L.", source="manual")

    resp = post(api, acme_token, {"email": "ADA@example.com", "name": "Ada Lovelace"})

    assert resp.status_code == 201
    enrollment = Enrollment.objects.get()
    assert resp.json() == {
        "outcome": "reused",
        "contact": {"id": known.pk, "email": "ada@example.com", "name": "Ada Lovelace", "external_id": None},
        "enrollment": {"id": enrollment.pk, "state": "active", "enrolled_at": NOW_Z, "next_send_at": IN_AN_HOUR_Z},
    }
    assert Customer.objects.count() == 1
    assert CampaignLead.objects.get().outcome == "reused"


def test_stopped_enrollment_is_resumed_without_a_new_lead(api, acme_token, campaign, clock):
    first = post(api, acme_token, {"email": "ada@example.com"}).json()
    enrollment = Enrollment.objects.get()
    clock.move_to(NOW + timedelta(minutes=10))
    enrollment_stop(enrollment=enrollment)
    clock.move_to(NOW + timedelta(days=1))

    resp = post(api, acme_token, {"email": "ada@example.com"})

    assert resp.status_code == 201
    assert resp.json() == {
        "outcome": "reused",
        "contact": first["contact"],
        "enrollment": {
            "id": enrollment.pk,  # the same enrollment, not a new one
            "state": "active",
            "enrolled_at": NOW_Z,
            "next_send_at": "2026-03-03T10:00:00.000000Z",  # the unsent first email, an hour after the resume
        },
    }
    enrollment.refresh_from_db()
    assert enrollment.resumed_at == NOW + timedelta(days=1)
    assert CampaignLead.objects.count() == 1


def test_active_enrollment_is_untouched_but_name_and_external_id_are_applied(api, acme_token, campaign, clock):
    first = post(api, acme_token, {"email": "ada@example.com", "name": "Ada"}).json()
    clock.move_to(NOW + timedelta(minutes=5))

    resp = post(api, acme_token, {"email": "ada@example.com", "name": "Ada Lovelace", "external_id": "crm-7"})

    assert resp.status_code == 200
    assert resp.json() == {
        "outcome": "already_enrolled",
        "contact": {
            "id": first["contact"]["id"],
            "email": "ada@example.com",
            "name": "Ada Lovelace",
            "external_id": "crm-7",
        },
        "enrollment": first["enrollment"],
    }
    customer = Customer.objects.get()
    assert (customer.name, customer.external_id) == ("Ada Lovelace", "crm-7")
    assert Enrollment.objects.count() == 1 and CampaignLead.objects.count() == 1


def test_the_same_email_twice_is_already_enrolled_the_second_time(api, acme_token, campaign, clock):
    first = post(api, acme_token, {"email": "ada@example.com"})
    second = post(api, acme_token, {"email": "ada@example.com"})
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json()["outcome"] == "already_enrolled"
    assert second.json()["enrollment"] == first.json()["enrollment"]


def test_completed_enrollment_is_already_enrolled_and_not_restarted(api, acme_token, campaign, clock):
    customer = CustomerFactory(workspace=campaign.workspace, email="ada@example.com")
    enrollment = EnrollmentFactory(campaign=campaign, customer=customer, state="completed", last_sent_position=1)
    resp = post(api, acme_token, {"email": "ada@example.com"})
    assert resp.status_code == 200
    assert resp.json()["outcome"] == "already_enrolled"
    assert resp.json()["enrollment"]["state"] == "completed"
    enrollment.refresh_from_db()
    assert enrollment.state == "completed" and enrollment.last_sent_position == 1


@pytest.mark.parametrize("reason", ["unsubscribed", "bounced", "complained"])
def test_suppressed_address_is_not_enrolled(api, acme_token, campaign, clock, reason):
    SuppressionFactory(workspace=campaign.workspace, email="ada@example.com", reason=reason)

    resp = post(api, acme_token, {"email": "Ada@Example.com", "name": "Ada"})

    assert resp.status_code == 200
    customer = Customer.objects.get()
    assert resp.json() == {
        "outcome": "suppressed",
        "contact": {"id": customer.pk, "email": "Ada@Example.com", "name": "Ada", "external_id": None},
        "enrollment": None,
    }
    assert not Enrollment.objects.exists()
    assert not CampaignLead.objects.exists()


def test_suppressed_address_with_a_stopped_enrollment_is_not_resumed(api, acme_token, campaign, clock):
    post(api, acme_token, {"email": "ada@example.com"})
    suppression_add(workspace=campaign.workspace, email="ada@example.com", reason="unsubscribed", channel="email")

    resp = post(api, acme_token, {"email": "ada@example.com"})

    assert resp.status_code == 200 and resp.json()["outcome"] == "suppressed"
    assert resp.json()["enrollment"] is None
    assert Enrollment.objects.get().state == "stopped"


def test_campaign_without_an_active_email_accepts_contacts_who_wait(api, acme_token, acme, clock):
    CampaignFactory(workspace=acme, slug="drafts")
    resp = post(api, acme_token, {"email": "ada@example.com"}, url="/api/v1/campaigns/drafts/leads")
    assert resp.status_code == 201
    assert resp.json()["enrollment"]["next_send_at"] is None
    assert resp.json()["enrollment"]["state"] == "active"


def test_campaign_leads_count_only_created_and_reused(api, acme_token, campaign, clock):
    post(api, acme_token, {"email": "new@example.com"})  # created
    post(api, acme_token, {"email": "new@example.com"})  # already_enrolled
    CustomerFactory(workspace=campaign.workspace, email="known@example.com")
    post(api, acme_token, {"email": "known@example.com"})  # reused
    enrollment_stop(enrollment=Enrollment.objects.get(customer__email="known@example.com"))
    post(api, acme_token, {"email": "known@example.com"})  # reused by resume: no new lead
    SuppressionFactory(workspace=campaign.workspace, email="gone@example.com")
    post(api, acme_token, {"email": "gone@example.com"})  # suppressed

    assert sorted(campaign.leads.values_list("outcome", "customer__email")) == [
        ("created", "new@example.com"),
        ("reused", "known@example.com"),
    ]
    assert campaign.enrollments.count() == 2


# --- workspace isolation -------------------------------------------------------------------


def test_another_workspaces_campaign_is_unknown(api, acme_token, globex_campaign):
    resp = post(api, acme_token, {"email": "a@example.com"}, url=f"/api/v1/campaigns/{globex_campaign.slug}/leads")
    assert_api_error(resp, 404, "unknown campaign")
    assert not Customer.objects.exists() and not Enrollment.objects.exists()


def test_the_same_slug_in_two_workspaces_resolves_to_the_tokens_own(api, acme_token, globex_token, campaign, globex):
    globex_spring = CampaignFactory(workspace=globex, slug="spring")
    globex_ada = CustomerFactory(workspace=globex, email="ada@example.com", name="Globex Ada")

    resp = post(api, acme_token, {"email": "ada@example.com", "name": "Acme Ada"})

    assert resp.json()["outcome"] == "created"
    assert Enrollment.objects.get().campaign == campaign
    assert not globex_spring.enrollments.exists()
    globex_ada.refresh_from_db()
    assert globex_ada.name == "Globex Ada"
    # and globex's token sees its own campaign, reusing its own contact
    resp = post(api, globex_token, {"email": "ada@example.com"})
    assert resp.status_code == 201 and resp.json()["contact"]["id"] == globex_ada.pk


def test_suppression_in_another_workspace_does_not_apply(api, acme_token, campaign, globex):
    SuppressionFactory(workspace=globex, email="ada@example.com")
    assert post(api, acme_token, {"email": "ada@example.com"}).json()["outcome"] == "created"


# --- errors (docs/api.md) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "email is required"),
        ({"email": None}, "email is required"),
        ({"email": ""}, "email is required"),
        ({"name": "Ada"}, "email is required"),
        ({"email": "not-an-address"}, "invalid email"),
        ({"email": "ada@"}, "invalid email"),
        ({"email": 42}, "email must be a string"),
        ({"email": ["ada@example.com"]}, "email must be a string"),
        ({"email": "a" * 250 + "@example.com"}, "email is too long"),
        ({"email": "ada@example.com", "name": 7}, "name must be a string"),
        ({"email": "ada@example.com", "name": "x" * 201}, "name is too long"),
        ({"email": "ada@example.com", "external_id": 42}, "external_id must be a string"),
        ({"email": "ada@example.com", "external_id": "x" * 256}, "external_id is too long"),
    ],
)
def test_invalid_input_is_422_and_changes_nothing(api, acme_token, campaign, body, message):
    assert_api_error(post(api, acme_token, body), 422, message)
    assert not Customer.objects.exists() and not Enrollment.objects.exists()


def test_null_name_and_external_id_are_absent(api, acme_token, campaign):
    resp = post(api, acme_token, {"email": "ada@example.com", "name": None, "external_id": None})
    assert resp.status_code == 201
    assert resp.json()["contact"]["name"] is None and resp.json()["contact"]["external_id"] is None


@pytest.mark.parametrize("slug", ["nope", "SPRING", "spr.ing", "x" * 300])
def test_unknown_campaign_is_404(api, acme_token, campaign, slug):
    resp = post(api, acme_token, {"email": "ada@example.com"}, url=f"/api/v1/campaigns/{slug}/leads")
    assert_api_error(resp, 404, "unknown campaign")
    assert not Customer.objects.exists()


def test_nul_in_the_slug_is_refused_before_any_lookup(api, acme_token, campaign):
    resp = post(api, acme_token, {"email": "ada@example.com"}, url="/api/v1/campaigns/sp%00ring/leads")
    assert_api_error(resp, 400, "bad request")
    assert not Customer.objects.exists()


@pytest.mark.parametrize("authorization", [None, "Bearer nope", "Basic abc", "Bearer "])
def test_missing_or_bad_token_is_401(api, campaign, authorization):
    extra = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    resp = api.post(URL, {"email": "ada@example.com"}, **extra)
    assert_api_error(resp, 401, "unauthorized")


def test_revoked_token_is_401(api, acme_token, campaign):
    acme_token.revoked_at = timezone.now()
    acme_token.save()
    assert_api_error(post(api, acme_token, {"email": "ada@example.com"}), 401, "unauthorized")


@pytest.mark.parametrize("raw", ["{", "[]", "", '{"email": "\\u0000@x.com"}'])
def test_bad_json_is_400(api, acme_token, campaign, raw):
    assert_api_error(api.post(URL, raw=raw, token=acme_token), 400, "invalid JSON")


def test_other_media_type_is_415(api, acme_token, campaign):
    resp = api.post(URL, raw='{"email": "ada@example.com"}', content_type="text/plain", token=acme_token)
    assert_api_error(resp, 415, "unsupported media type")


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_other_methods_are_405(api, acme_token, campaign, method):
    resp = getattr(api, method)(URL, HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert_api_error(resp, 405, "method not allowed")


# --- rate limit ----------------------------------------------------------------------------


@override_settings(RATELIMIT_CAMPAIGN_LEADS_TOKEN="4/m")
def test_rate_limit_counts_every_request_per_token(api, acme_token, campaign, acme, clock):
    # Four requests of four outcomes all count: created, already_enrolled, a 422 and a 404.
    assert post(api, acme_token, {"email": "ada@example.com"}).status_code == 201
    assert post(api, acme_token, {"email": "ada@example.com"}).status_code == 200
    assert post(api, acme_token, {}).status_code == 422
    assert post(api, acme_token, {"email": "a@example.com"}, url="/api/v1/campaigns/nope/leads").status_code == 404

    resp = post(api, acme_token, {"email": "bob@example.com"})

    assert_api_error(resp, 429, "rate_limited")
    assert 1 <= int(resp["Retry-After"]) <= 60
    assert not Customer.objects.filter(email="bob@example.com").exists()
    # another token of the same workspace has its own budget
    other = ApiTokenFactory(workspace=acme)
    assert post(api, other, {"email": "bob@example.com"}).status_code == 201
    # and the window passes
    clock.move_to(NOW + timedelta(minutes=1, seconds=1))
    assert post(api, acme_token, {"email": "carol@example.com"}).status_code == 201


def test_default_limit_is_120_per_minute(api, acme_token, campaign, settings):
    assert settings.RATELIMIT_CAMPAIGN_LEADS_TOKEN == "120/m"
    resp = post(api, acme_token, {"email": "ada@example.com"})
    assert resp["X-RateLimit-Limit"] == "120" and resp["X-RateLimit-Remaining"] == "119"
