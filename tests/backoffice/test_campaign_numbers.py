"""Campaign numbers (enrollments by state, sends, unsubscribes, complaints) equal plain COUNTs through every
state change, before, between and after roll-ups; another workspace's campaigns stay invisible."""

from datetime import timedelta

import pytest
from django.db.models import Exists, OuterRef
from django.db.models.functions import Lower
from django.urls import reverse

from campaigns.complaints import email_event_record
from campaigns.models import Campaign, CampaignLead, EmailSend, Enrollment, Suppression
from campaigns.sending import run_pass
from campaigns.services import campaign_lead_add, enrollment_resume, enrollment_stop, suppression_add
from campaigns.unsubscribe import unsubscribe
from customers.models import Customer
from rollups.models import CampaignNumberDelta, CampaignTotals
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.campaigns.conftest import NOW
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    EmailSendFactory,
    EnrollmentFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

NAMES = ["leads", "enrollments", "active", "stopped", "completed", "sends", "unsubscribes", "complaints"]


def counted(campaign: Campaign) -> dict[str, int]:
    """The numbers the way plain queries over the source rows give them."""
    enrollments = Enrollment.objects.filter(campaign=campaign)
    sends = EmailSend.objects.filter(campaign=campaign)
    unsubscribed = Suppression.objects.filter(
        workspace=OuterRef("workspace"), email=Lower(OuterRef("customer__email")), reason="unsubscribed"
    )
    return {
        "leads": CampaignLead.objects.filter(campaign=campaign).count(),
        "enrollments": enrollments.count(),
        "active": enrollments.filter(state="active").count(),
        "stopped": enrollments.filter(state="stopped").count(),
        "completed": enrollments.filter(state="completed").count(),
        "sends": sends.filter(status="sent").count(),
        "unsubscribes": enrollments.filter(Exists(unsubscribed)).count(),
        "complaints": sends.filter(complained_at__isnull=False).count(),
    }


def shown(campaign) -> dict[str, int]:
    return {name: getattr(campaign, f"n_{name}") for name in NAMES}


def assert_exact(client, *campaigns: Campaign, but: str = "") -> dict[str, dict[str, int]]:
    """The list and each campaign page show the plain counts; only the client's workspace's campaigns are listed."""
    listed = {c.pk: c for c in client.get(reverse("admin:campaigns_campaign_changelist")).context["cl"].result_list}
    assert set(listed) == {campaign.pk for campaign in campaigns}
    numbers = {}
    for campaign in campaigns:
        expected = counted(campaign)
        page = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk])).context["original"]
        listed_numbers, page_numbers = shown(listed[campaign.pk]), shown(page)
        for each in (expected, listed_numbers, page_numbers):
            each.pop(but, None)
        assert listed_numbers == expected == page_numbers, campaign.slug
        numbers[campaign.slug] = expected
    return numbers


def sequence(workspace, slug: str, *delays: int) -> Campaign:
    campaign = CampaignFactory(workspace=workspace, slug=slug, name=slug.title())
    for position, delay in enumerate(delays, start=1):
        CampaignEmailFactory(campaign=campaign, position=position, delay_minutes=delay)
    return campaign


def test_numbers_stay_exact_through_every_state_change(as_bob, acme, globex, time_machine, mailoutbox):
    time_machine.move_to(NOW, tick=False)
    spring, autumn = sequence(acme, "spring", 0, 60), sequence(acme, "autumn", 0)
    theirs = sequence(globex, "theirs", 0)
    for name in ("ada", "bea", "cy", "dee"):
        campaign_lead_add(campaign=spring, email=f"{name}@example.com", name=name.title())
    campaign_lead_add(campaign=autumn, email="ada@example.com")
    campaign_lead_add(campaign=theirs, email="ada@example.com")  # globex's ada: never in acme's numbers
    assert assert_exact(as_bob, spring, autumn)["spring"]["active"] == 4  # all tail

    numbers_roll_up()
    assert_exact(as_bob, spring, autumn)  # all in the totals
    assert run_pass().sent == 6  # step 1 to everyone, the one-step campaigns complete
    assert_exact(as_bob, spring, autumn)

    bea = Enrollment.objects.get(campaign=spring, customer__email="bea@example.com")
    enrollment_stop(enrollment=bea)
    numbers_roll_up()  # a roll-up between two changes
    time_machine.move_to(NOW + timedelta(minutes=61), tick=False)
    assert run_pass().sent == 3  # step 2: ada, cy and dee complete
    assert assert_exact(as_bob, spring, autumn)["spring"] == {
        "leads": 4,
        "enrollments": 4,
        "active": 0,
        "stopped": 1,
        "completed": 3,
        "sends": 7,
        "unsubscribes": 0,
        "complaints": 0,
    }

    enrollment_resume(enrollment=bea)
    unsubscribe(workspace=acme, email="CY@example.com")  # completed: stays completed, counts as unsubscribed
    assert assert_exact(as_bob, spring, autumn)["spring"]["unsubscribes"] == 1
    numbers_roll_up()
    email_event_record(workspace=acme, event_type="complaint", email="dee@example.com")
    email_event_record(workspace=acme, event_type="bounce", email="ada@example.com")
    unsubscribe(workspace=acme, email="ada@example.com")  # already bounced: the first reason stays
    suppression_add(workspace=acme, email="bea@example.com", reason="unsubscribed", channel="manual")  # stops bea
    assert assert_exact(as_bob, spring, autumn)["spring"] == {
        "leads": 4,
        "enrollments": 4,
        "active": 0,
        "stopped": 1,
        "completed": 3,
        "sends": 7,
        "unsubscribes": 2,
        "complaints": 1,
    }
    assert campaign_lead_add(campaign=spring, email="bea@example.com").outcome == "suppressed"  # no change

    # Its enrollment and sends go too. So does its campaign lead, which the leads roll-up takes for append-only
    # (rows deleted only with their campaign): leads keep counting it until a --rebuild.
    Customer.objects.filter(workspace=acme, email="dee@example.com").delete()
    assert_exact(as_bob, spring, autumn, but="leads")
    numbers_roll_up()
    assert_exact(as_bob, spring, autumn, but="leads")
    totals = CampaignTotals.objects.get(campaign=spring)
    assert (
        totals.enrollments_active + totals.enrollments_stopped + totals.enrollments_completed,
        totals.sends,
        totals.unsubscribes,
        totals.complaints,
    ) == (3, 5, 2, 0)
    assert not CampaignNumberDelta.objects.exists()  # rolled up, then dropped from the log
    assert counted(theirs)["sends"] == CampaignTotals.objects.get(campaign=theirs).sends == 1


def test_a_release_after_a_temporary_refusal_counts_no_send(as_bob, acme, time_machine, settings):
    time_machine.move_to(NOW, tick=False)
    settings.EMAIL_BACKEND = "tests.campaigns.mailbackends.TemporaryRefusalBackend"
    spring = sequence(acme, "spring", 0)
    campaign_lead_add(campaign=spring, email="ada@example.com")
    run_pass()
    assert assert_exact(as_bob, spring)["spring"]["sends"] == 0
    assert not EmailSend.objects.exists()


def test_rows_written_outside_the_services_are_counted_too(as_bob, acme):
    spring = sequence(acme, "spring", 0)
    ada = EnrollmentFactory(campaign=spring, customer__email="Ada@Example.com", state="completed")
    EnrollmentFactory(campaign=spring, customer__email="bea@example.com", state="stopped")
    EmailSendFactory(enrollment=ada, complained_at=NOW)
    EmailSendFactory(enrollment=ada, position=2, status="failed")
    SuppressionFactory(workspace=acme, email="ada@example.com", reason="unsubscribed")  # after the enrollment
    SuppressionFactory(workspace=acme, email="bea@example.com", reason="bounced")
    EnrollmentFactory(campaign=sequence(acme, "autumn", 0), customer=ada.customer)  # after the suppression
    autumn = Campaign.objects.get(slug="autumn")
    assert assert_exact(as_bob, spring, autumn)["spring"]["unsubscribes"] == 1
    assert counted(autumn)["unsubscribes"] == 1

    EmailSend.objects.filter(enrollment=ada).update(status="sent", complained_at=None)
    Enrollment.objects.filter(campaign=spring).update(state="active")
    numbers_roll_up()
    Suppression.objects.filter(email="ada@example.com").update(reason="complained")
    assert assert_exact(as_bob, spring, autumn)["spring"] == {
        "leads": 0,
        "enrollments": 2,
        "active": 2,
        "stopped": 0,
        "completed": 0,
        "sends": 2,
        "unsubscribes": 0,
        "complaints": 0,
    }
    Suppression.objects.filter(email="ada@example.com").delete()
    EmailSend.objects.all().delete()
    assert_exact(as_bob, spring, autumn)


def test_rebuild_recounts_from_the_source_tables(as_bob, acme):
    spring = sequence(acme, "spring", 0)
    for name in ("ada", "bea"):
        campaign_lead_add(campaign=spring, email=f"{name}@example.com")
    numbers_roll_up()
    CampaignTotals.objects.filter(campaign=spring).update(enrollments_active=40, sends=7)  # damaged by hand
    enrollment_stop(enrollment=Enrollment.objects.get(customer__email="bea@example.com"))  # a change in the tail
    assert counted(spring)["active"] == 1
    result = numbers_rebuild()
    assert result["rollups_campaignnumberdelta"] >= 1
    assert assert_exact(as_bob, spring)["spring"]["active"] == 1
    assert not CampaignNumberDelta.objects.exists()
    enrollment_resume(enrollment=Enrollment.objects.get(customer__email="bea@example.com"))
    assert assert_exact(as_bob, spring)["spring"]["active"] == 2  # changes after the rebuild: the tail again


def test_a_deleted_campaigns_logged_changes_are_skipped(acme):
    spring = sequence(acme, "spring", 0)
    campaign_lead_add(campaign=spring, email="ada@example.com")
    spring.delete()  # its enrollment's trigger logs a row for a campaign that no longer exists
    assert numbers_roll_up()["rollups_campaignnumberdelta"] is not None
    assert not CampaignTotals.objects.exists() and not CampaignNumberDelta.objects.exists()
