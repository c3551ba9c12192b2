"""Campaign services: campaigns and steps, stop and resume, suppression."""

from datetime import timedelta

import pytest

from campaigns.models import CampaignLead, Enrollment, Suppression
from campaigns.services import (
    campaign_create,
    campaign_email_add,
    campaign_get,
    campaign_lead_add,
    enrollment_resume,
    enrollment_stop,
    suppression_add,
)
from customers.models import CustomerActivity
from lftrack.errors import NotFound, Unprocessable
from tests.campaigns.conftest import NOW
from tests.factories import CampaignEmailFactory, CampaignFactory, CustomerFactory

pytestmark = pytest.mark.django_db


# --- campaigns and their steps -------------------------------------------------------------


def test_campaign_get_finds_only_the_workspaces_own(acme, globex, campaign, globex_campaign):
    assert campaign_get(workspace=acme, slug="spring") == campaign
    for workspace, slug in [(acme, globex_campaign.slug), (globex, "spring"), (acme, "nope"), (acme, "")]:
        with pytest.raises(NotFound, match=r"^unknown campaign$"):
            campaign_get(workspace=workspace, slug=slug)


def test_campaign_create(acme, globex):
    campaign = campaign_create(workspace=acme, slug="spring-2026", name="Spring")
    assert (campaign.workspace, campaign.slug, campaign.name, campaign.status) == (
        acme,
        "spring-2026",
        "Spring",
        "active",
    )
    assert campaign_create(workspace=acme, slug="bare").name == "bare"
    assert campaign_create(workspace=globex, slug="spring-2026").workspace == globex  # slugs are per workspace


@pytest.mark.parametrize(
    ("slug", "name", "message"),
    [
        ("Spring", "", "slug must be lowercase letters, digits and hyphens"),
        ("-spring", "", "slug must be lowercase letters, digits and hyphens"),
        ("", "", "slug must be lowercase letters, digits and hyphens"),
        ("a" * 101, "", "slug must be lowercase letters, digits and hyphens"),
        ("spring", "x" * 201, "name is too long"),
        ("taken", "", "campaign already exists: taken"),
    ],
)
def test_campaign_create_refuses_bad_input(acme, slug, name, message):
    CampaignFactory(workspace=acme, slug="taken")
    with pytest.raises(Unprocessable, match=f"^{message}$"):
        campaign_create(workspace=acme, slug=slug, name=name)


def test_steps_take_the_next_position(acme):
    campaign = CampaignFactory(workspace=acme)
    first = campaign_email_add(campaign=campaign, subject="One", body="1", delay_minutes=0)
    second = campaign_email_add(campaign=campaign, subject="Two", body="2", delay_minutes=60, active=False)
    assert [(first.position, first.active), (second.position, second.active)] == [(1, True), (2, False)]
    assert second.workspace == acme and second.delay_minutes == 60
    other = campaign_email_add(campaign=CampaignFactory(workspace=acme), subject="One", body="1", delay_minutes=0)
    assert other.position == 1


@pytest.mark.parametrize(
    ("subject", "body", "delay", "message"),
    [
        ("", "b", 0, "subject is required"),
        ("s" * 256, "b", 0, "subject is too long"),
        ("s", "", 0, "body is required"),
        ("s", "b", -1, "delay_minutes must be a non-negative integer"),
        ("s", "b", 2**31, "delay_minutes must be a non-negative integer"),
        ("s", "b", True, "delay_minutes must be a non-negative integer"),
    ],
)
def test_step_validation(acme, subject, body, delay, message):
    campaign = CampaignFactory(workspace=acme)
    with pytest.raises(Unprocessable, match=f"^{message}$"):
        campaign_email_add(campaign=campaign, subject=subject, body=body, delay_minutes=delay)
    assert not campaign.emails.exists()


# --- stop and resume -----------------------------------------------------------------------


def test_stop_clears_the_schedule_and_is_idempotent(campaign, clock):
    enrollment = campaign_lead_add(campaign=campaign, email="ada@example.com").enrollment
    clock.move_to(NOW + timedelta(minutes=5))
    stopped = enrollment_stop(enrollment=enrollment)
    assert (stopped.state, stopped.stopped_at, stopped.next_send_at) == ("stopped", NOW + timedelta(minutes=5), None)
    clock.move_to(NOW + timedelta(minutes=9))
    assert enrollment_stop(enrollment=enrollment).stopped_at == NOW + timedelta(minutes=5)


def test_resume_continues_from_the_next_unsent_email_without_a_new_lead(campaign, clock):
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=30)
    CampaignEmailFactory(campaign=campaign, position=3, delay_minutes=10)
    enrollment = campaign_lead_add(campaign=campaign, email="ada@example.com").enrollment
    Enrollment.objects.filter(pk=enrollment.pk).update(last_sent_position=2, last_sent_at=NOW + timedelta(hours=2))
    clock.move_to(NOW + timedelta(hours=3))
    enrollment_stop(enrollment=enrollment)
    clock.move_to(NOW + timedelta(days=2))

    result = campaign_lead_add(campaign=campaign, email="ada@example.com")

    assert result.outcome == "reused"
    resumed = Enrollment.objects.get()
    assert resumed.pk == enrollment.pk and resumed.state == "active"
    assert resumed.resumed_at == NOW + timedelta(days=2)
    assert resumed.last_sent_position == 2
    assert resumed.next_send_at == NOW + timedelta(days=2, minutes=10)  # step 3's delay from the resume
    assert CampaignLead.objects.count() == 1


def test_resume_of_an_active_or_completed_enrollment_changes_nothing(campaign, clock):
    enrollment = campaign_lead_add(campaign=campaign, email="ada@example.com").enrollment
    assert enrollment_resume(enrollment=enrollment).resumed_at is None
    Enrollment.objects.filter(pk=enrollment.pk).update(state="completed")
    assert enrollment_resume(enrollment=enrollment).state == "completed"


def test_a_suppressed_address_cannot_be_resumed(campaign):
    enrollment = campaign_lead_add(campaign=campaign, email="ada@example.com").enrollment
    suppression_add(workspace=campaign.workspace, email="ada@example.com", reason="bounced", channel="email")
    with pytest.raises(Unprocessable, match=r"^email is suppressed$"):
        enrollment_resume(enrollment=enrollment)
    assert Enrollment.objects.get().state == "stopped"


# --- suppression ---------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["unsubscribed", "bounced", "complained"])
def test_suppression_stops_the_addresss_enrollments_and_notes_the_reason(acme, globex, campaign, reason, clock):
    ada = campaign_lead_add(campaign=campaign, email="Ada@Example.com").customer
    second = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=second, position=1)
    campaign_lead_add(campaign=second, email="ada@example.com")
    bob = campaign_lead_add(campaign=campaign, email="bob@example.com").enrollment
    globex_spring = CampaignFactory(workspace=globex)
    CampaignEmailFactory(campaign=globex_spring, position=1)
    globex_ada = campaign_lead_add(campaign=globex_spring, email="ada@example.com").enrollment

    suppression = suppression_add(workspace=acme, email="ADA@example.COM", reason=reason, channel="email")

    assert (suppression.workspace, suppression.email, suppression.reason) == (acme, "ada@example.com", reason)
    assert set(Enrollment.objects.filter(customer=ada).values_list("state", "next_send_at", "stopped_at")) == {
        ("stopped", None, NOW)
    }
    assert Enrollment.objects.get(pk=bob.pk).state == "active"
    assert Enrollment.objects.get(pk=globex_ada.pk).state == "active"
    activity = CustomerActivity.objects.get(customer=ada, kind="suppressed")
    assert (activity.workspace, activity.channel, activity.detail) == (acme, "email", {"reason": reason})
    # and the address can no longer be enrolled in this workspace
    result = campaign_lead_add(campaign=campaign, email="ada@example.com")
    assert (result.outcome, result.enrollment) == ("suppressed", None)


def test_suppression_is_idempotent_per_lowercased_email(acme, campaign):
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    first = suppression_add(workspace=acme, email="ada@example.com", reason="unsubscribed", channel="email")
    again = suppression_add(workspace=acme, email="ADA@EXAMPLE.COM", reason="bounced", channel="api")
    assert again.pk == first.pk and again.reason == "unsubscribed"
    assert Suppression.objects.count() == 1
    assert CustomerActivity.objects.filter(customer=ada, kind="suppressed").count() == 1


def test_suppressing_an_address_without_a_contact(acme):
    suppression = suppression_add(workspace=acme, email="Nobody@Example.com", reason="complained", channel="manual")
    assert suppression.email == "nobody@example.com"
    assert not CustomerActivity.objects.exists()


@pytest.mark.parametrize(
    ("email", "reason", "channel", "message"),
    [
        ("", "bounced", "email", "email is required"),
        ("not-an-address", "bounced", "email", "invalid email"),
        ("a" * 250 + "@example.com", "bounced", "email", "email is too long"),
        ("ada@example.com", "spam", "email", "reason must be unsubscribed, bounced or complained"),
        ("ada@example.com", "bounced", "carrier-pigeon", "invalid channel"),
    ],
)
def test_suppression_refuses_bad_input(acme, email, reason, channel, message):
    with pytest.raises(Unprocessable, match=f"^{message}$"):
        suppression_add(workspace=acme, email=email, reason=reason, channel=channel)
    assert not Suppression.objects.exists()


def test_an_insert_that_loses_the_race_answers_with_the_winners_enrollment(campaign):
    """The second half of a race, made deterministic: the contact looked new, yet the unique index
    finds them enrolled (a concurrent request won). No IntegrityError, no second lead."""
    from campaigns.services import campaign_enroll

    winner = campaign_lead_add(campaign=campaign, email="ada@example.com")
    loser = campaign_enroll(campaign=campaign, customer=winner.customer, created=True, channel="api")
    assert (loser.outcome, loser.enrollment.pk) == ("already_enrolled", winner.enrollment.pk)
    assert CampaignLead.objects.count() == 1
