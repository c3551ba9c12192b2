"""POST /api/v1/email-events: bounces and complaints, and the campaign pause complaints trigger; pause/resume CLI."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.complaints import complaint_threshold_reached
from campaigns.models import Campaign, EmailSend, Enrollment, Suppression
from campaigns.sending import run_pass
from campaigns.services import campaign_lead_add
from customers.models import CustomerActivity
from tests.campaigns.conftest import NOW
from tests.conftest import assert_api_error
from tests.factories import CampaignEmailFactory, CampaignFactory, EmailSendFactory, EnrollmentFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/email-events"


@pytest.fixture
def spring(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=60)
    return campaign


def sends(campaign, count: int, *, sent_at=NOW, prefix="r") -> list[EmailSend]:
    """`count` sends of the campaign, to distinct recipients, on one enrollment."""
    enrollment = EnrollmentFactory(campaign=campaign, state="completed")
    return EmailSend.objects.bulk_create(
        EmailSend(
            workspace_id=campaign.workspace_id,
            campaign=campaign,
            enrollment=enrollment,
            position=i,
            to_email=f"{prefix}{i}@example.com",
            status="sent",
            sent_at=sent_at,
        )
        for i in range(1, count + 1)
    )


def complain(api, token, email):
    return api.post(URL, {"type": "complaint", "email": email}, token=token)


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue())


# --- the endpoint --------------------------------------------------------------------------


def test_a_bounce_suppresses_the_address_and_stops_its_enrollments(api, acme_token, acme, spring, clock):
    enrollment = campaign_lead_add(campaign=spring, email="Ada@Example.com").enrollment
    response = api.post(URL, {"type": "bounce", "email": "ADA@example.com"}, token=acme_token)
    assert response.status_code == 200
    assert response.json() == {"email": "ada@example.com", "reason": "bounced", "suppressed": True}
    enrollment.refresh_from_db()
    assert enrollment.state == "stopped"
    activity = CustomerActivity.objects.get(kind="suppressed")
    assert (activity.channel, activity.detail) == ("api", {"reason": "bounced"})


def test_a_complaint_suppresses_and_marks_the_latest_email_sent_to_the_address(
    api, acme_token, acme, spring, clock, mailoutbox
):
    enrollment = campaign_lead_add(campaign=spring, email="Ada@Example.com", name="Ada").enrollment
    run_pass()
    clock.shift(timedelta(minutes=60))
    run_pass()
    clock.shift(timedelta(days=2))

    response = complain(api, acme_token, "ada@example.com")  # reported in another case than sent
    assert response.status_code == 200
    assert response.json() == {"email": "ada@example.com", "reason": "complained", "suppressed": True}
    first, second = EmailSend.objects.filter(enrollment=enrollment).order_by("position")
    assert (first.complained_at, second.complained_at) == (None, NOW + timedelta(days=2, minutes=60))
    assert Suppression.objects.get().reason == "complained"

    clock.shift(timedelta(hours=1))  # the provider retries its webhook: nothing changes
    assert complain(api, acme_token, "Ada@Example.com").status_code == 200
    second.refresh_from_db()
    assert second.complained_at == NOW + timedelta(days=2, minutes=60)
    assert EmailSend.objects.filter(complained_at__isnull=False).count() == 1


def test_a_complaint_naming_the_message_id_marks_that_email(api, acme_token, acme, spring, clock, mailoutbox):
    enrollment = campaign_lead_add(campaign=spring, email="ada@example.com", name="Ada").enrollment
    run_pass()
    clock.shift(timedelta(minutes=60))
    run_pass()
    first, second = EmailSend.objects.filter(enrollment=enrollment).order_by("position")
    body = {"type": "complaint", "email": "ada@example.com", "message_id": first.message_id.strip("<>")}
    assert api.post("/api/v1/email-events", body, token=acme_token).status_code == 200
    first.refresh_from_db(), second.refresh_from_db()
    assert first.complained_at is not None and second.complained_at is None


def test_a_complaint_about_an_address_never_mailed_only_suppresses(api, acme_token, acme):
    response = complain(api, acme_token, "stranger@example.com")
    assert response.json() == {"email": "stranger@example.com", "reason": "complained", "suppressed": True}
    assert Suppression.objects.get().workspace == acme


def test_an_address_already_suppressed_keeps_its_first_reason(api, acme_token, acme):
    api.post(URL, {"type": "bounce", "email": "ada@example.com"}, token=acme_token)
    response = complain(api, acme_token, "ada@example.com")
    assert response.json() == {"email": "ada@example.com", "reason": "bounced", "suppressed": True}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "invalid type"),
        ({"email": "ada@example.com"}, "invalid type"),
        ({"type": "open", "email": "ada@example.com"}, "invalid type"),
        ({"type": None, "email": "ada@example.com"}, "invalid type"),
        ({"type": ["bounce"], "email": "ada@example.com"}, "invalid type"),
        ({"type": "Bounce", "email": "ada@example.com"}, "invalid type"),
        ({"type": "bounce"}, "email is required"),
        ({"type": "bounce", "email": ""}, "email is required"),
        ({"type": "complaint", "email": None}, "email is required"),
        ({"type": "bounce", "email": "not-an-email"}, "invalid email"),
        ({"type": "bounce", "email": 42}, "email must be a string"),
        ({"type": "bounce", "email": "a" * 250 + "@example.com"}, "email is too long"),
    ],
)
def test_bad_events_are_422_and_change_nothing(api, acme_token, body, message):
    assert_api_error(api.post(URL, body, token=acme_token), 422, message)
    assert not Suppression.objects.exists()


def test_the_endpoint_needs_a_token_and_json(api, acme_token):
    assert_api_error(api.post(URL, {"type": "bounce", "email": "a@example.com"}), 401, "unauthorized")
    assert_api_error(api.post(URL, raw="{", token=acme_token), 400, "invalid JSON")
    assert_api_error(api.post(URL, raw="[]", token=acme_token), 400, "invalid JSON")
    assert_api_error(
        api.post(URL, raw="type=bounce", token=acme_token, content_type="application/x-www-form-urlencoded"),
        415,
        "unsupported media type",
    )
    assert_api_error(api.get(URL, token=acme_token), 405, "method not allowed")
    assert not Suppression.objects.exists()


def test_another_workspaces_event_touches_only_its_own_list(api, globex_token, acme, globex, spring, clock, mailoutbox):
    campaign_lead_add(campaign=spring, email="ada@example.com")
    run_pass()
    assert complain(api, globex_token, "ada@example.com").status_code == 200
    assert list(Suppression.objects.values_list("workspace", flat=True)) == [globex.pk]
    assert not EmailSend.objects.filter(complained_at__isnull=False).exists()
    assert Campaign.objects.get(pk=spring.pk).status == "active"
    assert Enrollment.objects.get().state == "active"


# --- the complaint pause ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "complaints", "paused"),
    [
        (0, 0, False),
        (1, 1, True),
        (333, 1, True),
        (334, 1, False),
        (334, 0, False),
        (1000, 2, False),
        (1000, 3, True),
        (100_000, 300, True),
        (100_000, 299, False),
    ],
)
def test_the_default_threshold(sent, complaints, paused):
    assert complaint_threshold_reached(sends=sent, complaints=complaints) is paused


def test_the_threshold_and_the_minimum_come_from_the_settings(settings):
    settings.COMPLAINT_PAUSE_PERCENT = 5
    settings.COMPLAINT_PAUSE_MIN_SENDS = 50
    assert complaint_threshold_reached(sends=49, complaints=1) is True  # under the minimum: any complaint
    assert complaint_threshold_reached(sends=50, complaints=1) is False  # 2%
    assert complaint_threshold_reached(sends=1000, complaints=49) is False
    assert complaint_threshold_reached(sends=1000, complaints=50) is True


def test_any_complaint_pauses_a_campaign_with_fewer_than_334_sends(api, acme_token, acme, spring, clock, mailoutbox):
    sends(spring, 332)
    waiting = campaign_lead_add(campaign=spring, email="ada@example.com").enrollment
    run_pass()  # the 333rd send
    assert len(mailoutbox) == 1

    assert complain(api, acme_token, "r7@example.com").status_code == 200
    spring.refresh_from_db()
    assert (spring.status, spring.paused_at) == ("paused", NOW)

    clock.shift(timedelta(hours=2))  # Ada's second email falls due but waits
    assert run_pass().counts() == {"sent": 0, "deferred": 0, "skipped": 0}
    assert run(*["campaign", "resume", "acme", "spring"]) == {
        "id": spring.pk,
        "slug": "spring",
        "status": "active",
        "paused_at": None,
    }
    assert run_pass().sent == 1
    assert EmailSend.objects.filter(enrollment=waiting).count() == 2


def test_a_campaign_pauses_when_its_complaint_rate_reaches_the_threshold(api, acme_token, acme, spring, clock):
    sends(spring, 1000)
    for address in ("r1@example.com", "r2@example.com"):
        complain(api, acme_token, address)
    assert Campaign.objects.get(pk=spring.pk).status == "active"  # 2 in 1000: 0.2%
    complain(api, acme_token, "r3@example.com")
    spring.refresh_from_db()
    assert (spring.status, spring.paused_at) == ("paused", NOW)  # 3 in 1000: 0.3%


def test_only_the_last_30_days_of_sends_count(api, acme_token, acme, spring, clock):
    sends(spring, 700, sent_at=NOW - timedelta(days=31), prefix="old")
    sends(spring, 333)
    complain(api, acme_token, "r1@example.com")
    assert Campaign.objects.get(pk=spring.pk).status == "paused"  # 333 recent sends: under the minimum


def test_a_complaint_about_a_send_older_than_30_days_only_suppresses(api, acme_token, acme, spring, clock):
    sends(spring, 10, sent_at=NOW - timedelta(days=31))
    complain(api, acme_token, "r1@example.com")
    assert Campaign.objects.get(pk=spring.pk).status == "active"
    assert EmailSend.objects.filter(complained_at__isnull=False).count() == 1


def test_complaints_pause_only_their_own_campaign(api, acme_token, acme, spring, clock):
    other = CampaignFactory(workspace=acme, slug="autumn")
    sends(spring, 10)
    sends(other, 10, prefix="o")
    complain(api, acme_token, "r1@example.com")
    assert dict(Campaign.objects.values_list("slug", "status")) == {"spring": "paused", "autumn": "active"}


def test_an_unconfirmed_send_that_drew_a_complaint_counts(api, acme_token, acme, spring, clock):
    sends(spring, 500)
    EmailSendFactory(
        enrollment=EnrollmentFactory(campaign=spring), position=1, to_email="x@example.com", status="failed"
    )
    complain(api, acme_token, "x@example.com")  # 1 of 501: under 0.3%, so no pause
    assert Campaign.objects.get(pk=spring.pk).status == "active"
    assert EmailSend.objects.get(to_email="x@example.com").complained_at == NOW


# --- pause and resume from the CLI -----------------------------------------------------------


def test_campaign_pause_and_resume_commands(acme, spring, clock):
    assert run(*["campaign", "pause", "acme", "spring"]) == {
        "id": spring.pk,
        "slug": "spring",
        "status": "paused",
        "paused_at": "2026-03-02T09:00:00.000000Z",
    }
    assert run(*["campaign", "pause", "acme", "spring"])["paused_at"] == "2026-03-02T09:00:00.000000Z"  # unchanged
    assert run(*["campaign", "resume", "acme", "spring"])["status"] == "active"
    assert run(*["campaign", "resume", "acme", "spring"])["status"] == "active"  # resuming twice is fine
    with pytest.raises(CommandError, match=r"^unknown campaign: nope$"):
        run(*["campaign", "resume", "acme", "nope"])
    with pytest.raises(CommandError, match=r"^unknown workspace: nope$"):
        run(*["campaign", "resume", "nope", "spring"])
