"""Double opt-in for enrollments the public pixel makes: a flood of strangers' addresses mails no campaign,
each address gets one confirmation, and confirming starts the sequence."""

import json
from datetime import timedelta

import pytest
import time_machine
from django.core import mail

from campaigns.confirmation import confirm_token
from campaigns.models import CampaignLead, EmailSend, Enrollment
from campaigns.sending import run_pass
from conversions.models import ConversionEvent
from customers.models import Customer
from tests.campaigns.conftest import NOW
from tests.factories import CampaignFactory, ClickFactory, CustomerFactory, SuppressionFactory

pytestmark = pytest.mark.django_db
SHOP = "https://shop.example.com"
EVIL = "URGENT: your account is locked, verify at https://evil.example/login"


@pytest.fixture
def shop(acme):
    acme.allowed_origins = SHOP
    acme.save()
    return acme


def pixel(api, workspace, click, email, name=""):
    body = {
        "key": workspace.tracking_key,
        "event": "lead",
        "click_id": click.click_id,
        "customer": {"email": email, "name": name},
    }
    return api.post(
        "/api/v1/browser/conversions",
        raw=json.dumps(body),
        content_type="application/json",
        HTTP_ORIGIN=SHOP,
        REMOTE_ADDR="203.0.113.66",
    )


def campaign_click(campaign):
    return ClickFactory(link__post__workspace=campaign.workspace, link__post__campaign=campaign)


def test_a_flood_of_strangers_addresses_mails_no_campaign_and_one_confirmation_each(api, shop, campaign, clock):
    for n in range(30):
        assert pixel(api, shop, campaign_click(campaign), f"victim{n}@example.com", EVIL).status_code == 201
    assert set(Enrollment.objects.values_list("state", flat=True)) == {"pending"}
    clock.move_to(NOW + timedelta(days=2))  # long past the step's delay
    for _ in range(3):
        run_pass()
    assert not EmailSend.objects.exists()  # no campaign email, nothing against the daily limit
    assert len(mail.outbox) == 30
    assert sorted(message.to[0] for message in mail.outbox) == sorted(f"victim{n}@example.com" for n in range(30))
    for message in mail.outbox:  # fixed wording: nothing the attacker typed
        assert message.subject == "Confirm your subscription to Acme"
        assert "evil" not in message.body.lower() and "URGENT" not in message.body
    assert not Customer.objects.exclude(name="").exists()
    assert not CampaignLead.objects.exists()


def test_an_address_gets_one_confirmation_a_day_whatever_the_campaigns(api, shop, campaign, clock):
    other = CampaignFactory(workspace=shop, slug="autumn")
    pixel(api, shop, campaign_click(campaign), "ada@example.com")
    pixel(api, shop, campaign_click(other), "ada@example.com")
    run_pass()
    assert len(mail.outbox) == 1
    clock.move_to(NOW + timedelta(hours=2))
    pixel(api, shop, campaign_click(other), "ada@example.com")
    run_pass()
    assert len(mail.outbox) == 1


def test_a_suppressed_address_gets_no_confirmation(api, shop, campaign):
    SuppressionFactory(workspace=shop, email="gone@example.com", reason="complained")
    pixel(api, shop, campaign_click(campaign), "gone@example.com")
    run_pass()
    assert mail.outbox == [] and not Enrollment.objects.exists()


def test_confirming_activates_schedules_and_gives_the_held_name(client, api, shop, campaign, clock):
    pixel(api, shop, campaign_click(campaign), "ada@example.com", "Ada Lovelace")
    run_pass()
    (message,) = mail.outbox
    enrollment = Enrollment.objects.get()
    url = f"/c/{confirm_token(enrollment.pk)}"
    assert url in message.body
    page = client.get(url)  # a link scanner opening it changes nothing
    assert page.status_code == 200 and b"Confirm your subscription to Acme" in page.content
    assert Enrollment.objects.get().state == "pending"
    clock.move_to(NOW + timedelta(minutes=5))
    done = client.post(url)
    assert done.status_code == 200 and b"You are subscribed" in done.content
    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.next_send_at) == ("active", NOW + timedelta(minutes=65))
    assert Customer.objects.get().name == "Ada Lovelace"
    assert CampaignLead.objects.get().channel == "pixel"
    assert client.post(url).status_code == 200 and CampaignLead.objects.count() == 1  # twice changes nothing
    clock.move_to(NOW + timedelta(minutes=66))
    run_pass()
    assert EmailSend.objects.get().status == "sent"
    assert mail.outbox[-1].subject != message.subject  # the campaign's own first step


def test_the_held_name_never_replaces_a_name(client, api, shop, campaign):
    CustomerFactory(workspace=shop, email="ada@example.com", name="Ada Lovelace")
    pixel(api, shop, campaign_click(campaign), "ada@example.com", "Mallory")
    run_pass()
    client.post(f"/c/{confirm_token(Enrollment.objects.get().pk)}")
    assert Customer.objects.get().name == "Ada Lovelace"


@pytest.mark.parametrize("name", [EVIL, "see www.evil.example", "evil.example/login", "Ada\r\nBcc: x@y.z", "Ada\x07"])
def test_a_name_with_a_link_or_control_characters_is_not_held(api, shop, campaign, name):
    pixel(api, shop, campaign_click(campaign), "ada@example.com", name)
    assert Enrollment.objects.get().held_name == ""


def test_an_unconfirmed_enrollment_expires_and_its_link_stops_working(client, api, shop, campaign):
    with time_machine.travel(NOW, tick=False):
        pixel(api, shop, campaign_click(campaign), "ada@example.com")
        run_pass()
    token = confirm_token(Enrollment.objects.get().pk)
    with time_machine.travel(NOW + timedelta(days=8), tick=False):
        run_pass()
        assert not Enrollment.objects.exists()
        assert client.post(f"/c/{token}").status_code == 400


def test_a_workspace_sends_at_most_its_daily_number_of_confirmations(api, shop, campaign, settings):
    settings.CONFIRMATIONS_PER_DAY = 2
    for n in range(3):
        pixel(api, shop, campaign_click(campaign), f"p{n}@example.com")
    run_pass()
    run_pass()
    assert len(mail.outbox) == 2
    waiting = Enrollment.objects.get(confirmation_sent_at__isnull=True)
    assert waiting.state == "pending"  # a later day, while it has not expired


def test_one_click_yields_at_most_three_pixel_leads(api, shop, campaign):
    click = campaign_click(campaign)
    answers = [pixel(api, shop, click, f"n{n}@example.com") for n in range(5)]
    assert [resp.status_code for resp in answers] == [201, 201, 201, 200, 200]
    assert answers[3].json()["id"] == answers[4].json()["id"] == answers[2].json()["id"]
    assert ConversionEvent.objects.count() == 3 and Enrollment.objects.count() == 3


def test_server_side_enrollments_stay_single_opt_in(api, acme_token, campaign):
    resp = api.post("/api/v1/campaigns/spring/leads", {"email": "ada@example.com"}, token=acme_token)
    assert resp.status_code == 201 and resp.json()["enrollment"]["state"] == "active"
