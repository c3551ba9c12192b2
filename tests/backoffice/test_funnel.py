"""A campaign's funnel on its page: enrolled, each step sent, completed; unsubscribes, bounces, complaints; each
step's sends per day, equal to plain counts of the sends."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from rollups.services import numbers_roll_up
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    EmailSendFactory,
    EnrollmentFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)


@pytest.fixture
def spring(acme, globex):
    with time_machine.travel(NOW, tick=False):
        campaign = CampaignFactory(workspace=acme, name="Spring")
        one = CampaignEmailFactory(campaign=campaign, position=1, subject="Welcome, {{ name }}")
        two = CampaignEmailFactory(campaign=campaign, position=2, subject="Tips")
        CampaignEmailFactory(campaign=campaign, position=3, subject="Draft", active=False)
        people = [
            EnrollmentFactory(
                campaign=campaign, customer__email=f"p{i}@example.com", state="completed" if i < 2 else "active"
            )
            for i in range(6)
        ]
        for i, enrollment in enumerate(people):
            EmailSendFactory(
                enrollment=enrollment,
                campaign_email=one,
                position=1,
                sent_at=NOW - timedelta(days=i % 3),
                complained_at=NOW if i == 5 else None,
            )
            if i < 3:
                EmailSendFactory(
                    enrollment=enrollment,
                    campaign_email=two,
                    position=2,
                    sent_at=NOW - timedelta(days=1),
                    status="sent" if i < 2 else "failed",
                )
        SuppressionFactory(workspace=acme, email="p3@example.com", reason="bounced")
        SuppressionFactory(workspace=acme, email="p4@example.com", reason="unsubscribed")
        SuppressionFactory(workspace=globex, email="p4@example.com", reason="bounced")  # another workspace's list
        numbers_roll_up(wait_seconds=1)
        yield campaign


def test_the_funnel_from_enrolled_to_completed(as_bob, spring):
    with time_machine.travel(NOW, tick=False):
        response = as_bob.get(reverse("admin:campaigns_campaign_change", args=[spring.pk]))
    funnel = response.context["funnel"]
    assert [(s["name"], s["count"], s["share"], s["note"]) for s in funnel["stages"]] == [
        ("Enrolled", 6, 100, ""),
        ("#1 Welcome, ‹name› sent", 6, 100, ""),
        ("#2 Tips sent", 2, 33, "1 failed"),
        ("#3 Draft sent", 0, 0, "draft, not sending"),
        ("Completed", 2, 33, ""),
    ]
    assert funnel["exits"] == [("Unsubscribed", 1), ("Bounced", 1), ("Marked as spam", 1)]
    chart = funnel["chart"]
    assert chart["labels"][-1] == "2026-11-20" and len(chart["labels"]) == 30
    assert [step["data"][-3:] for step in chart["steps"]] == [[2, 2, 2], [0, 2, 0], [0, 0, 0]]
    assert 'id="chart-steps"' in response.content.decode()


def test_the_funnel_is_of_this_campaign_only(as_bob, acme, spring):
    other = CampaignFactory(workspace=acme)
    response = as_bob.get(reverse("admin:campaigns_campaign_change", args=[other.pk]))
    assert [s["count"] for s in response.context["funnel"]["stages"]] == [0, 0]
    assert response.context["funnel"]["exits"] == [("Unsubscribed", 0), ("Bounced", 0), ("Marked as spam", 0)]
