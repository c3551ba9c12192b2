"""A conversion on a link whose post is in a campaign enrolls the customer (docs/enrollment.md)."""

from datetime import timedelta

import pytest

from campaigns.confirmation import enrollment_confirm
from campaigns.models import CampaignLead, Enrollment
from campaigns.services import enrollment_stop
from conversions.models import ConversionEvent
from conversions.services import conversion_enroll, conversion_record
from tests.campaigns.conftest import NOW
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    CustomerFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def click(campaign):
    return ClickFactory(link__post__workspace=campaign.workspace, link__post__campaign=campaign)


def record(click, event="lead", channel="api", **customer):
    return conversion_record(
        workspace=click.workspace,
        channel=channel,
        event=event,
        click_id=click.click_id,
        value_cents=49000 if event == "sale" else None,
        customer=customer or None,
    )


@pytest.mark.parametrize("event", ["lead", "sale"])
def test_conversion_of_a_new_customer_enrolls_them(campaign, click, clock, event):
    conversion = record(click, event, email="Ada@Example.com", external_id="user_42")

    enrollment = Enrollment.objects.get()
    assert (enrollment.campaign, enrollment.customer, enrollment.state) == (campaign, conversion.customer, "active")
    assert enrollment.next_send_at == NOW + timedelta(minutes=60)
    lead = CampaignLead.objects.get()
    assert (lead.outcome, lead.channel, lead.conversion_id, lead.enrollment) == (
        "created",
        "api",
        conversion.pk,
        enrollment,
    )


def test_conversions_through_the_api_enroll_too(api, acme_token, campaign, click):
    resp = api.post(
        "/api/v1/conversions",
        {"event": "sale", "click_id": click.click_id, "value_cents": 100, "customer": {"email": "ada@example.com"}},
        token=acme_token,
    )
    assert resp.status_code == 201
    assert Enrollment.objects.get().customer_id == resp.json()["customer"]["id"]
    assert CampaignLead.objects.get().conversion_id == resp.json()["id"]


def test_a_pixel_conversion_enrolls_pending_confirmation_and_counts_a_lead_once_confirmed(campaign, click):
    record(click, channel="pixel", email="ada@example.com")
    enrollment = Enrollment.objects.get()
    assert (enrollment.state, enrollment.next_send_at) == ("pending", None)
    assert not CampaignLead.objects.exists()
    enrollment_confirm(enrollment_id=enrollment.pk)
    assert CampaignLead.objects.get().channel == "pixel"


def test_known_customer_is_reused(campaign, click):
    CustomerFactory(workspace=campaign.workspace, email="ada@example.com", source="manual")
    record(click, email="ada@example.com")
    assert CampaignLead.objects.get().outcome == "reused"


def test_customer_who_converted_before_is_reused(campaign, click, acme):
    elsewhere = ClickFactory(link__post__workspace=acme)  # a post outside any campaign
    record(elsewhere, email="ada@example.com")
    assert not Enrollment.objects.exists()
    record(click, event="sale", email="ada@example.com")
    assert CampaignLead.objects.get().outcome == "reused"


def test_second_conversion_does_not_enroll_twice(campaign, click):
    record(click, email="ada@example.com")
    conversion = record(click, event="sale", email="ada@example.com")
    result = conversion_enroll(conversion=conversion, campaign_id=campaign.pk)  # as conversion_record already did
    assert result.outcome == "already_enrolled"
    assert Enrollment.objects.count() == 1 and CampaignLead.objects.count() == 1


def test_stopped_enrollment_is_resumed_without_a_new_lead(campaign, click, clock):
    record(click, email="ada@example.com")
    enrollment = enrollment_stop(enrollment=Enrollment.objects.get())
    clock.move_to(NOW + timedelta(days=3))

    record(click, event="sale", email="ada@example.com")

    resumed = Enrollment.objects.get()
    assert (resumed.pk, resumed.state, resumed.resumed_at) == (enrollment.pk, "active", NOW + timedelta(days=3))
    assert resumed.next_send_at == NOW + timedelta(days=3, minutes=60)
    assert CampaignLead.objects.count() == 1


def test_suppressed_customer_is_not_enrolled(campaign, click):
    SuppressionFactory(workspace=campaign.workspace, email="ada@example.com", reason="bounced")
    conversion = record(click, email="ADA@example.com")
    assert ConversionEvent.objects.count() == 1  # the conversion itself is recorded
    assert not Enrollment.objects.exists() and not CampaignLead.objects.exists()
    assert conversion_enroll(conversion=conversion, campaign_id=campaign.pk).outcome == "suppressed"


def test_customer_without_email_is_not_enrolled(campaign, click):
    conversion = record(click, external_id="user_42")
    assert conversion.customer.email == ""
    assert not Enrollment.objects.exists()
    assert conversion_enroll(conversion=conversion, campaign_id=campaign.pk) is None


def test_conversion_without_customer_enrolls_nobody(campaign, click):
    conversion = record(click)
    assert not Enrollment.objects.exists()
    assert conversion_enroll(conversion=conversion, campaign_id=campaign.pk) is None


def test_post_outside_any_campaign_enrolls_nobody(acme, campaign):
    plain = ClickFactory(link__post__workspace=acme)
    record(plain, email="ada@example.com")
    assert not Enrollment.objects.exists()


def test_a_post_pointing_at_another_workspaces_campaign_enrolls_nobody(acme, globex):
    foreign = CampaignFactory(workspace=globex)
    click = ClickFactory(link__post__workspace=acme, link__post__campaign=foreign)
    record(click, email="ada@example.com")
    assert not Enrollment.objects.exists()


def test_campaign_without_active_email_enrolls_to_wait(acme, clock):
    waiting = CampaignFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme, link__post__campaign=waiting)
    record(click, email="ada@example.com")
    enrollment = Enrollment.objects.get()
    assert enrollment.campaign == waiting and enrollment.next_send_at is None


def test_conversion_without_customer_costs_no_query(campaign, django_assert_num_queries):
    conversion = ConversionEventFactory(customer=None)
    with django_assert_num_queries(0):
        assert conversion_enroll(conversion=conversion, campaign_id=campaign.pk) is None
