"""Campaign recipients and the campaign page: enrolled contacts, states, sends, the campaign's numbers."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    CampaignLeadFactory,
    EmailSendFactory,
    EnrollmentFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

RECIPIENTS = reverse("admin:campaigns_enrollment_changelist")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def spring(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring", name="Spring")
    step1 = CampaignEmailFactory(campaign=campaign, position=1, subject="Welcome")
    step2 = CampaignEmailFactory(campaign=campaign, position=2, subject="Tips for you, {{ name }}")
    ada = EnrollmentFactory(
        campaign=campaign,
        customer__email="ada@example.com",
        customer__name="Ada",
        enrolled_at=T0,
        next_send_at=T0 + timedelta(days=2),
    )
    bea = EnrollmentFactory(campaign=campaign, customer__email="bea@example.com", state="stopped", enrolled_at=T0)
    cy = EnrollmentFactory(campaign=campaign, customer__email="cy@example.com", state="completed", enrolled_at=T0)
    for enrollment in (ada, bea, cy):
        CampaignLeadFactory(enrollment=enrollment)
    CampaignLeadFactory(enrollment=bea, outcome="reused")
    EmailSendFactory(enrollment=ada, campaign_email=step1, position=1, sent_at=T0 + timedelta(hours=1))
    EmailSendFactory(enrollment=ada, campaign_email=step2, position=2, sent_at=T0 + timedelta(days=1))
    EmailSendFactory(enrollment=cy, campaign_email=step1, position=1, sent_at=T0, complained_at=T0 + timedelta(hours=3))
    EmailSendFactory(enrollment=bea, campaign_email=step1, position=1, sent_at=T0, status="failed")
    SuppressionFactory(workspace=acme, email="bea@example.com", reason="unsubscribed")
    other = CampaignFactory(workspace=acme, slug="autumn", name="Autumn")
    EnrollmentFactory(campaign=other, customer__email="zed@example.com")
    return campaign


def rows(response) -> dict[str, object]:
    assert response.status_code == 200
    return {e.customer.email: e for e in response.context["cl"].result_list}


def test_recipients_of_a_campaign_with_state_dates_and_last_email(as_bob, spring):
    response = as_bob.get(RECIPIENTS, {"campaign__id__exact": spring.pk})
    listed = rows(response)
    assert set(listed) == {"ada@example.com", "bea@example.com", "cy@example.com"}
    page = response.content.decode()
    assert "Recipients of Spring" in page
    for text in (
        "Active",
        "Stopped",
        "Completed",
        "2026-03-03 09:00",  # next_send_at
        "#2 Tips for you, Ada, 2026-03-02 09:00",
        "#1 Welcome, 2026-03-01 09:00",
    ):
        assert text in page, text
    assert listed["bea@example.com"].last_send_at is None  # a failed send is not an email sent
    assert "{{ name }}" not in page  # the subject as its recipient read it


@pytest.mark.parametrize(
    ("state", "expected"),
    [("active", {"ada@example.com"}), ("stopped", {"bea@example.com"}), ("completed", {"cy@example.com"})],
)
def test_recipients_filter_by_state(as_bob, spring, state, expected):
    assert set(rows(as_bob.get(RECIPIENTS, {"campaign__id__exact": spring.pk, "state__exact": state}))) == expected


def test_recipients_search_by_contact(as_bob, spring):
    assert set(rows(as_bob.get(RECIPIENTS, {"q": "bea@"}))) == {"bea@example.com"}


def test_campaign_page_shows_its_numbers_and_links_to_recipients(as_bob, spring):
    response = as_bob.get(reverse("admin:campaigns_campaign_change", args=[spring.pk]))
    assert response.status_code == 200
    campaign = response.context["original"]
    assert (
        campaign.n_leads,
        campaign.n_enrollments,
        campaign.n_active,
        campaign.n_stopped,
        campaign.n_completed,
        campaign.n_sends,
        campaign.n_unsubscribes,
        campaign.n_complaints,
    ) == (4, 3, 1, 1, 1, 3, 1, 1)
    page = response.content.decode()
    assert f"{RECIPIENTS}?campaign__id__exact={spring.pk}" in page
    assert "(1 active, 1 stopped, 1 completed)" in page
    listing = as_bob.get(reverse("admin:campaigns_campaign_changelist"))
    numbers = {c.slug: (c.n_leads, c.n_sends, c.n_complaints) for c in listing.context["cl"].result_list}
    assert numbers == {"spring": (4, 3, 1), "autumn": (0, 0, 0)}


def test_editor_sees_the_sequence_but_cannot_edit_it(as_bob, spring):
    response = as_bob.get(reverse("admin:campaigns_campaign_change", args=[spring.pk]))
    page = response.content.decode()
    assert "Welcome" in page and "Tips" in page
    assert 'name="emails-0-subject"' not in page
