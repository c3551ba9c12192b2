"""next_send_at (docs/enrollment.md), with the clock moved by time_machine."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns.models import Enrollment
from campaigns.schedule import enrollment_next_send_at, next_send_at_expression
from campaigns.services import (
    campaign_email_activate,
    campaign_email_add,
    campaign_lead_add,
    enrollment_resume,
    enrollment_stop,
)
from tests.campaigns.conftest import NOW
from tests.factories import CampaignEmailFactory, CampaignFactory, EnrollmentFactory

pytestmark = pytest.mark.django_db

MIN = timedelta(minutes=1)


def enroll(campaign, email="ada@example.com") -> Enrollment:
    return campaign_lead_add(campaign=campaign, email=email).enrollment


def sent(enrollment: Enrollment, position: int, at) -> Enrollment:
    """What the sender records after mailing a step, then asks the rule for the next one."""
    enrollment.last_sent_position = position
    enrollment.last_sent_at = at
    enrollment.next_send_at = enrollment_next_send_at(enrollment=enrollment)
    enrollment.save()
    return enrollment


def test_first_email_is_due_its_delay_after_enrollment(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=90)
    assert enroll(campaign).next_send_at == NOW + 90 * MIN


def test_no_active_email_means_null(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    assert enroll(campaign, "a@example.com").next_send_at is None
    CampaignEmailFactory(campaign=campaign, position=1, active=False)
    assert enroll(campaign, "b@example.com").next_send_at is None


def test_inactive_steps_are_skipped(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0, active=False)
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=30, active=True)
    enrollment = enroll(campaign)
    assert enrollment.next_send_at == NOW + 30 * MIN
    CampaignEmailFactory(campaign=campaign, position=3, delay_minutes=5, active=False)
    CampaignEmailFactory(campaign=campaign, position=4, delay_minutes=120, active=True)
    clock.move_to(NOW + 31 * MIN)
    sent(enrollment, 2, NOW + 31 * MIN)
    assert enrollment.next_send_at == NOW + 31 * MIN + 120 * MIN  # step 4, from the previous send


def test_after_the_last_active_step_nothing_is_due(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=10, active=False)
    enrollment = sent(enroll(campaign), 1, NOW)
    assert enrollment.next_send_at is None


def test_activation_schedules_every_waiting_enrollment_in_one_update(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    step = CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=45, active=False)
    early = enroll(campaign, "early@example.com")
    clock.move_to(NOW + 20 * MIN)
    late = enroll(campaign, "late@example.com")
    stopped = enrollment_stop(enrollment=enroll(campaign, "stopped@example.com"))
    other_campaign = EnrollmentFactory(campaign=CampaignFactory(workspace=acme), enrolled_at=NOW)
    assert early.next_send_at is None and late.next_send_at is None
    clock.move_to(NOW + 3 * 60 * MIN)

    with CaptureQueriesContext(connection) as queries:
        campaign_email_activate(campaign_email=step)

    enrollment_writes = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "campaigns_enrollment"')]
    assert len(enrollment_writes) == 1
    # due its delay after enrollment, even when that moment has passed: the sender sends it now
    assert Enrollment.objects.get(pk=early.pk).next_send_at == NOW + 45 * MIN
    assert Enrollment.objects.get(pk=late.pk).next_send_at == NOW + 20 * MIN + 45 * MIN
    assert Enrollment.objects.get(pk=stopped.pk).next_send_at is None
    assert Enrollment.objects.get(pk=other_campaign.pk).next_send_at is None
    step.refresh_from_db()
    assert step.active


def test_activating_an_active_email_changes_nothing(acme, campaign, clock):
    step = campaign.emails.get()
    enrollment = enroll(campaign)
    Enrollment.objects.filter(pk=enrollment.pk).update(next_send_at=None)  # would be rescheduled if it ran
    with CaptureQueriesContext(connection) as queries:
        assert campaign_email_activate(campaign_email=step).active
    assert not any(q["sql"].startswith("UPDATE") for q in queries)


def test_activating_an_earlier_step_reschedules_those_it_now_comes_first_for(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    middle = CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=10, active=False)
    CampaignEmailFactory(campaign=campaign, position=3, delay_minutes=600)
    before_step_1 = enroll(campaign, "a@example.com")
    after_step_1 = sent(enroll(campaign, "b@example.com"), 1, NOW + 1 * MIN)
    after_step_3 = sent(enroll(campaign, "c@example.com"), 3, NOW + 2 * MIN)
    assert after_step_1.next_send_at == NOW + 1 * MIN + 600 * MIN

    campaign_email_activate(campaign_email=middle)

    assert Enrollment.objects.get(pk=before_step_1.pk).next_send_at == NOW  # step 1 still comes first
    assert Enrollment.objects.get(pk=after_step_1.pk).next_send_at == NOW + 1 * MIN + 10 * MIN
    assert Enrollment.objects.get(pk=after_step_3.pk).next_send_at is None


def test_adding_an_active_email_schedules_waiting_enrollments(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    enrollment = enroll(campaign)
    clock.move_to(NOW + 60 * MIN)
    campaign_email_add(campaign=campaign, subject="Hi", body="Hello", delay_minutes=15)
    assert Enrollment.objects.get(pk=enrollment.pk).next_send_at == NOW + 15 * MIN


def test_adding_an_inactive_email_schedules_nothing(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    enrollment = enroll(campaign)
    campaign_email_add(campaign=campaign, subject="Hi", body="Hello", delay_minutes=15, active=False)
    assert Enrollment.objects.get(pk=enrollment.pk).next_send_at is None


def test_after_a_resume_the_delay_counts_from_the_resume(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=24 * 60)
    enrollment = sent(enroll(campaign), 1, NOW)
    clock.move_to(NOW + 60 * MIN)
    enrollment = enrollment_stop(enrollment=enrollment)
    assert enrollment.next_send_at is None
    clock.move_to(NOW + 10 * 24 * 60 * MIN)

    resumed = enrollment_resume(enrollment=enrollment)

    assert resumed.pk == enrollment.pk and resumed.state == "active"
    assert resumed.last_sent_position == 1  # continues with step 2, the next unsent
    assert resumed.next_send_at == NOW + 10 * 24 * 60 * MIN + 24 * 60 * MIN
    # once step 2 goes out after the resume, the following step counts from that send again
    CampaignEmailFactory(campaign=campaign, position=3, delay_minutes=5)
    sent(resumed, 2, NOW + 12 * 24 * 60 * MIN)
    assert resumed.next_send_at == NOW + 12 * 24 * 60 * MIN + 5 * MIN


def test_activation_after_a_resume_counts_from_the_resume(acme, clock):
    campaign = CampaignFactory(workspace=acme)
    step = CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=30, active=False)
    enrollment = enrollment_stop(enrollment=enroll(campaign))
    clock.move_to(NOW + 5 * 60 * MIN)
    enrollment_resume(enrollment=enrollment)
    campaign_email_activate(campaign_email=step)
    assert Enrollment.objects.get(pk=enrollment.pk).next_send_at == NOW + 5 * 60 * MIN + 30 * MIN


@pytest.mark.parametrize("microsecond", [0, 250_000])
def test_the_sql_rule_agrees_with_the_python_rule(acme, microsecond):
    """The activation UPDATE and enrollment_next_send_at are the same rule; check them on varied rows."""
    base = NOW.replace(microsecond=microsecond)
    campaign = CampaignFactory(workspace=acme)
    for position, delay, active in [(1, 0, True), (2, 7, False), (3, 61, True), (4, 1440, True)]:
        CampaignEmailFactory(campaign=campaign, position=position, delay_minutes=delay, active=active)
    rows = [
        {"enrolled_at": base},
        {"enrolled_at": base, "resumed_at": base + 3 * MIN},
        {"enrolled_at": base, "last_sent_position": 1, "last_sent_at": base + timedelta(seconds=1)},
        {"enrolled_at": base, "last_sent_position": 1, "last_sent_at": base + MIN, "resumed_at": base + 9 * MIN},
        {"enrolled_at": base, "last_sent_position": 3, "last_sent_at": base + 2 * MIN, "resumed_at": base + MIN},
        {"enrolled_at": base, "last_sent_position": 4, "last_sent_at": base + 5 * MIN},
    ]
    enrollments = [EnrollmentFactory(campaign=campaign, **row) for row in rows]

    annotated = dict(
        Enrollment.objects.filter(campaign=campaign).annotate(due=next_send_at_expression()).values_list("pk", "due")
    )

    expected = {e.pk: enrollment_next_send_at(enrollment=e) for e in enrollments}
    assert annotated == expected
    assert expected[enrollments[0].pk] == base
    assert expected[enrollments[1].pk] == base + 3 * MIN
    assert expected[enrollments[2].pk] == base + timedelta(seconds=1) + 61 * MIN
    assert expected[enrollments[3].pk] == base + 9 * MIN + 61 * MIN
    assert expected[enrollments[4].pk] == base + 2 * MIN + 1440 * MIN
    assert expected[enrollments[5].pk] is None
