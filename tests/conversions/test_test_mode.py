"""Test tokens (lf_test_...): what they record is flagged as test, left out of every number, read back only by test
tokens, refunded only by them, and deleted in one go; live tokens never see it. Their contacts are test contacts,
apart from the live ones (tests/campaigns/test_test_mode.py: enrollment, sending, email events)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from campaigns.models import CampaignLead, EmailSend, Enrollment
from campaigns.sending import run_pass
from conversions.models import ConversionEvent, Refund
from conversions.testdata import workspace_test_data_delete
from customers.models import Customer
from rollups.selectors import daily_numbers, money_of
from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import CampaignEmailFactory, CampaignFactory, ClickFactory, EndpointFactory, PostFactory
from webhooks.models import Delivery, Event
from webhooks.outbox import events_dispatch
from workspaces.models import ApiToken
from workspaces.tokens import api_token_authenticate, api_token_create

pytestmark = pytest.mark.django_db
URL = "/api/v1/conversions"


@pytest.fixture
def test_token(acme):
    return api_token_create(workspace=acme, name="trying the API", test=True).secret


def test_cli_makes_a_test_token_that_authenticates_as_test(acme):
    out = StringIO()
    call_command("token", "create", "acme", "--test", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["token"].startswith("lf_test_") and len(printed["token"]) == len("lf_test_") + 43
    token = api_token_authenticate(printed["token"])
    assert token.is_test and ApiToken.objects.get(pk=printed["id"]).shown.startswith("lf_test_")
    live = api_token_create(workspace=acme, name="live")
    assert not api_token_authenticate(live.secret).is_test
    assert api_token_authenticate("lf_test_" + live.secret[3:]) is None  # the mode is part of the secret


def test_test_conversions_are_flagged_and_counted_nowhere(api, acme, acme_token, test_token):
    click = ClickFactory(link__post__workspace=acme)
    sale = {"event": "sale", "click_id": click.click_id, "value_cents": 5000, "currency": "EUR"}
    assert api.post(URL, sale, token=test_token).status_code == 201
    assert api.post(URL, {"event": "lead", "click_id": click.click_id}, token=test_token).status_code == 201
    assert set(ConversionEvent.objects.values_list("is_test", flat=True)) == {True}
    today = ConversionEvent.objects.first().occurred_at.date()
    for _ in range(2):  # live tail, then rolled up
        assert daily_numbers(workspace_id=acme.pk, since=today, until=today)["total"] == {
            "clicks": 1,
            "leads": 0,
            "sales": 0,
            "revenue": [],
        }
        assert money_of(group="link", link_ids=[click.link_id]).get(click.link_id, []) == []
        numbers_roll_up()


def test_each_mode_reads_back_its_own_conversions_and_refunds_only_its_own_sales(api, acme, acme_token, test_token):
    click = ClickFactory(link__post__workspace=acme)
    sale = {"event": "sale", "click_id": click.click_id, "value_cents": 5000}
    live_id = api.post(URL, sale, token=acme_token).json()["id"]
    test_id = api.post(URL, sale, token=test_token).json()["id"]
    assert [item["id"] for item in api.get(URL, token=acme_token).json()["data"]] == [live_id]
    assert [item["id"] for item in api.get(URL, token=test_token).json()["data"]] == [test_id]
    assert_api_error(api.post(f"{URL}/{live_id}/refunds", {}, token=test_token), 404, "unknown conversion")
    assert_api_error(api.post(f"{URL}/{test_id}/refunds", {}, token=acme_token), 404, "unknown conversion")
    assert api.post(f"{URL}/{test_id}/refunds", {"amount_cents": 100}, token=test_token).status_code == 201
    assert Refund.objects.get().is_test


def test_deleting_test_data_leaves_live_data_alone(api, acme, globex, acme_token, test_token, globex_token):
    click = ClickFactory(link__post__workspace=acme)
    sale = {"event": "sale", "click_id": click.click_id, "value_cents": 5000}
    live_id = api.post(URL, sale, token=acme_token).json()["id"]
    test_id = api.post(URL, sale, token=test_token).json()["id"]
    api.post(f"{URL}/{test_id}/refunds", {}, token=test_token)
    their_test = api_token_create(workspace=globex, name="t", test=True).secret
    api.post(URL, {**sale, "click_id": ClickFactory(link__post__workspace=globex).click_id}, token=their_test)
    assert workspace_test_data_delete(workspace=acme) == {
        "refunds": 1,
        "conversions": 1,
        "sends": 0,
        "enrollments": 0,
        "suppressions": 0,
        "customers": 0,
        "webhook events": 0,
    }
    assert list(ConversionEvent.objects.filter(workspace=acme).values_list("pk", flat=True)) == [live_id]
    assert ConversionEvent.objects.filter(workspace=globex, is_test=True).count() == 1


def test_a_test_conversion_on_a_campaign_post_enrolls_a_test_contact_and_mails_nobody(
    api, acme, test_token, mailoutbox
):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, delay_minutes=0)
    click = ClickFactory(link__post=PostFactory(workspace=acme, campaign=campaign))
    body = {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com", "external_id": "u1"}}
    resp = api.post(URL, body, token=test_token)
    assert resp.status_code == 201
    ada = Customer.objects.get()
    assert resp.json()["customer"] == {"id": ada.pk, "external_id": "u1"}  # shown as a live one is
    assert ada.is_test and Enrollment.objects.get().customer == ada and Enrollment.objects.get().is_test
    assert not CampaignLead.objects.exists()  # counted in no campaign number
    assert run_pass().test == 1
    assert mailoutbox == []
    assert list(EmailSend.objects.values_list("status", "to_email")) == [("test", "ada@example.com")]
    assert Enrollment.objects.get().state == "completed"


def test_a_test_conversion_never_touches_the_live_contact_of_its_email(api, acme, acme_token, test_token):
    click = ClickFactory(link__post__workspace=acme)
    live = {
        "event": "lead",
        "click_id": click.click_id,
        "customer": {"email": "ada@example.com", "external_id": "u1", "name": "Ada"},
    }
    live_ada = api.post(URL, live, token=acme_token).json()["customer"]
    tried = {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": 100,
        "customer": {"email": "ADA@example.com", "external_id": "u2", "name": "Test Ada"},
    }
    test_ada = api.post(URL, tried, token=test_token).json()["customer"]
    assert test_ada["id"] != live_ada["id"] and test_ada["external_id"] == "u2"
    assert Customer.objects.get(pk=test_ada["id"]).email == "ADA@example.com"
    # The live contact keeps its id, name and external_id; it was not moved, merged or filled.
    assert api.get(f"/api/v1/customers/{live_ada['id']}", token=acme_token).json()["external_id"] == "u1"
    # Taking a live contact's external_id in test mode moves nothing either.
    taking = {**tried, "customer": {"email": "eve@example.com", "external_id": "u1"}}
    assert api.post(URL, taking, token=test_token).status_code == 201
    assert Customer.objects.get(pk=live_ada["id"]).external_id == "u1"
    assert [c["id"] for c in api.get("/api/v1/customers", token=acme_token).json()["data"]] == [live_ada["id"]]
    assert api.get(f"/api/v1/customers/{live_ada['id']}", token=test_token).status_code == 404
    assert api.get(f"/api/v1/customers/{test_ada['id']}/activity", token=acme_token).status_code == 404
    read = api.get(f"/api/v1/customers/{test_ada['id']}", token=test_token).json()
    assert read["totals"]["sales"] == 1  # its own test-mode events, read back in test mode
    assert api.get(f"/api/v1/customers/{live_ada['id']}", token=acme_token).json()["totals"] == {
        "leads": 1,
        "sales": 0,
        "revenue": [],
    }


def test_invoice_and_refund_ids_are_per_mode(api, acme, acme_token, test_token):
    click = ClickFactory(link__post__workspace=acme)
    sale = {"event": "sale", "click_id": click.click_id, "value_cents": 5000, "invoice_id": "in_1"}
    tried = api.post(URL, sale, token=test_token)
    live = api.post(URL, sale, token=acme_token)
    assert (tried.status_code, live.status_code) == (201, 201)  # the test run never swallows the live sale
    again = api.post(URL, sale, token=acme_token)
    assert again.status_code == 200 and again.json()["id"] == live.json()["id"]
    refund = {"amount_cents": 100, "refund_id": "re_1"}
    assert api.post(f"{URL}/{tried.json()['id']}/refunds", refund, token=test_token).status_code == 201
    assert api.post(f"{URL}/{live.json()['id']}/refunds", refund, token=acme_token).status_code == 201
    assert Refund.objects.count() == 2


def test_deleting_test_data_takes_the_events_of_test_endpoints_and_their_deliveries(api, acme, acme_token, test_token):
    EndpointFactory(workspace=acme, test=True)
    EndpointFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme)
    for token in (acme_token, test_token):
        assert (
            api.post(
                URL,
                {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}},
                token=token,
            ).status_code
            == 201
        )
    events_dispatch(event_ids=list(Event.objects.values_list("pk", flat=True)))  # what the worker's job does
    assert set(Event.objects.values_list("test", flat=True)) == {False, True}
    live = set(Event.objects.filter(test=False).values_list("pk", flat=True))
    assert Delivery.objects.filter(event__test=True).exists()
    deleted = workspace_test_data_delete(workspace=acme)
    assert deleted["webhook events"] == 2 and deleted["customers"] == 1  # customer.created and lead.created
    assert set(Event.objects.values_list("pk", flat=True)) == live
    assert not Delivery.objects.filter(event__test=True).exists() and Delivery.objects.exists()
