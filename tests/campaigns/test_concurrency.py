"""Simultaneous requests against PostgreSQL: the database's uniqueness and locks settle every race."""

from collections import Counter

import pytest
from django.test import Client

from campaigns.models import CampaignEmail, CampaignLead, Enrollment
from campaigns.services import campaign_email_activate, campaign_email_add, campaign_lead_add
from conversions.services import conversion_record
from customers.models import Customer
from tests.conftest import run_in_threads
from tests.factories import (
    ApiTokenFactory,
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    CustomerFactory,
    WorkspaceFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("known_contact", [False, True], ids=["new-email", "known-contact"])
def test_sixteen_simultaneous_posts_of_one_email_enroll_once(known_contact):
    workspace = WorkspaceFactory(slug="acme")
    token = ApiTokenFactory(workspace=workspace)
    campaign = CampaignFactory(workspace=workspace, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1)
    body = {"email": "Ada@Example.com", "name": "Ada"}
    if known_contact:
        # Then every request may read "not enrolled" and the unique index decides. No name: updating
        # it would lock the contact's row and queue the requests one behind another.
        CustomerFactory(workspace=workspace, email="ada@example.com")
        del body["name"]
    first = (201, "reused") if known_contact else (201, "created")

    def post(i: int):
        resp = Client().post(
            "/api/v1/campaigns/spring/leads",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token.secret}",
        )
        return resp.status_code, resp.json()

    results = run_in_threads(16, post)

    assert all(isinstance(result, tuple) for result in results), results
    outcomes = Counter((status, body["outcome"]) for status, body in results)
    assert outcomes == {first: 1, (200, "already_enrolled"): 15}
    assert Customer.objects.count() == 1
    assert Enrollment.objects.count() == 1
    assert CampaignLead.objects.count() == 1
    assert {body["enrollment"]["id"] for _, body in results} == {Enrollment.objects.get().pk}


def test_simultaneous_conversions_of_one_new_customer_enroll_once():
    workspace = WorkspaceFactory(slug="acme")
    campaign = CampaignFactory(workspace=workspace)
    CampaignEmailFactory(campaign=campaign, position=1)
    clicks = [ClickFactory(link__post__workspace=workspace, link__post__campaign=campaign) for _ in range(8)]

    def convert(i: int):
        return conversion_record(
            workspace=workspace,
            channel="api",
            event="lead",
            click_id=clicks[i].click_id,
            customer={"email": "ada@example.com"},
        )

    results = run_in_threads(8, convert)

    assert not [r for r in results if isinstance(r, Exception)], results
    assert Enrollment.objects.count() == 1
    lead = CampaignLead.objects.get()
    assert lead.outcome == "created" and lead.conversion_id in {r.pk for r in results}


def test_enrollments_racing_an_activation_are_all_scheduled():
    # The share lock on the campaign row: no enrollment may commit "no active email" after the
    # activation's UPDATE has run, or it would wait with a null next_send_at for ever.
    workspace = WorkspaceFactory(slug="acme")
    campaign = CampaignFactory(workspace=workspace)
    step = CampaignEmailFactory(campaign=campaign, position=1, active=False)

    def work(i: int):
        if i == 0:
            return campaign_email_activate(campaign_email=step)
        return campaign_lead_add(campaign=campaign, email=f"person{i}@example.com")

    results = run_in_threads(12, work)

    assert not [r for r in results if isinstance(r, Exception)], results
    assert Enrollment.objects.count() == 11
    assert not Enrollment.objects.filter(next_send_at__isnull=True).exists()


def test_simultaneous_steps_get_distinct_positions():
    campaign = CampaignFactory(workspace=WorkspaceFactory(slug="acme"))

    results = run_in_threads(
        6, lambda i: campaign_email_add(campaign=campaign, subject=f"Step {i}", body="B", delay_minutes=i)
    )

    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(CampaignEmail.objects.values_list("position", flat=True)) == [1, 2, 3, 4, 5, 6]
