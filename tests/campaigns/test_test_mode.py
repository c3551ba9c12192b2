"""Test mode in campaigns: a test token's leads are test contacts, enrolled with the usual outcomes; the sender
records their steps as `test` sends and mails nobody; they count in no number, reach no live webhook, are read
back by test tokens only, and "Delete test data" removes them, leaving live data alone."""

from datetime import timedelta

import pytest

from campaigns.models import Campaign, CampaignLead, EmailSend, Enrollment, Suppression
from campaigns.sending import run_pass
from conversions.testdata import workspace_test_data_delete
from customers.models import Customer, CustomerActivity
from rollups.selectors import campaign_step_sends, campaigns_with_numbers
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.campaigns.conftest import NOW
from tests.campaigns.test_sending import sequence
from tests.conftest import run_in_threads
from tests.factories import EndpointFactory
from webhooks.models import Event
from webhooks.outbox import events_dispatch
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db
LEADS = "/api/v1/campaigns/spring/leads"
EVENTS = "/api/v1/email-events"
NUMBERS = ["n_leads", "n_active", "n_stopped", "n_completed", "n_sends", "n_unsubscribes", "n_complaints"]


@pytest.fixture
def test_token(acme):
    return api_token_create(workspace=acme, name="trying the API", test=True).secret


def numbers(campaign) -> dict:
    return campaigns_with_numbers(campaigns=Campaign.objects.filter(pk=campaign.pk)).values(*NUMBERS).get()


def test_a_test_lead_is_enrolled_its_steps_recorded_as_test_sends_and_nobody_mailed(
    api, acme, test_token, clock, mailoutbox
):
    campaign = sequence(acme, 0, 60)
    created = api.post(LEADS, {"email": "ada@example.com", "name": "Ada"}, token=test_token)
    assert created.status_code == 201 and created.json()["outcome"] == "created"
    enrollment = created.json()["enrollment"]
    assert enrollment["state"] == "active" and enrollment["next_send_at"] == "2026-03-02T09:00:00.000000Z"
    again = api.post(LEADS, {"email": "ADA@example.com"}, token=test_token)
    assert again.status_code == 200 and again.json()["outcome"] == "already_enrolled"

    assert run_pass().test == 1
    clock.shift(timedelta(minutes=60))
    assert run_pass().test == 1
    assert mailoutbox == []
    sends = EmailSend.objects.order_by("position")
    assert [(s.position, s.status, s.to_email, s.sent_at) for s in sends] == [
        (1, "test", "ada@example.com", NOW),
        (2, "test", "ada@example.com", NOW + timedelta(minutes=60)),
    ]
    # The integrator sees the sequence progress, as a live recipient's would.
    page = api.get("/api/v1/campaigns/spring/enrollments", token=test_token).json()["data"]
    assert [(r["id"], r["state"], r["last_sent_position"]) for r in page] == [(enrollment["id"], "completed", 2)]
    assert not CampaignLead.objects.exists()
    for count_again in (numbers_roll_up, numbers_rebuild, lambda: None):  # the live tail, rolled up, recounted
        count_again()
        assert numbers(campaign) == dict.fromkeys(NUMBERS, 0)
        assert campaign_step_sends(campaign_id=campaign.pk, since=NOW.date()) == {"steps": {}, "days": {}}


def test_test_sends_use_none_of_the_daily_limit(api, acme, acme_token, test_token, clock, mailoutbox):
    sequence(acme, 0)
    acme.daily_send_limit = 1
    acme.save(update_fields=["daily_send_limit"])
    for email in ("t1@example.com", "t2@example.com"):
        api.post(LEADS, {"email": email}, token=test_token)
    api.post(LEADS, {"email": "ada@example.com"}, token=acme_token)
    result = run_pass()
    assert (result.test, result.sent, result.deferred) == (2, 1, 0)
    assert [m.to for m in mailoutbox] == [["ada@example.com"]]


def test_a_test_lead_never_touches_the_live_contact_of_its_address(api, acme, acme_token, test_token, clock):
    campaign = sequence(acme, 0)
    live = api.post(LEADS, {"email": "ada@example.com", "name": "Ada", "external_id": "u1"}, token=acme_token).json()
    tried = api.post(LEADS, {"email": "Ada@example.com", "name": "Tester", "external_id": "u1"}, token=test_token)
    assert tried.status_code == 201 and tried.json()["outcome"] == "created"  # a test contact of its own
    assert tried.json()["contact"]["id"] != live["contact"]["id"]
    ada = Customer.objects.get(pk=live["contact"]["id"])
    assert (ada.name, ada.external_id, ada.is_test) == ("Ada", "u1", False)
    assert Enrollment.objects.get(customer=ada).state == "active"
    assert [
        r["contact"]["id"] for r in api.get("/api/v1/campaigns/spring/enrollments", token=acme_token).json()["data"]
    ] == [ada.pk]
    assert [c["id"] for c in api.get("/api/v1/customers", token=test_token).json()["data"]] == [
        tried.json()["contact"]["id"]
    ]
    assert numbers(campaign)["n_leads"] == 1 and numbers(campaign)["n_active"] == 1


def test_a_test_tokens_email_events_suppress_test_contacts_only(api, acme, acme_token, test_token, clock):
    campaign = sequence(acme, 60)
    live = api.post(LEADS, {"email": "ada@example.com"}, token=acme_token).json()
    api.post(LEADS, {"email": "ada@example.com"}, token=test_token)
    complaint = api.post(EVENTS, {"type": "complaint", "email": "ADA@example.com"}, token=test_token)
    assert complaint.status_code == 200
    assert complaint.json() == {"email": "ada@example.com", "reason": "complained", "suppressed": True}
    assert list(Suppression.objects.values_list("email", "is_test")) == [("ada@example.com", True)]
    states = dict(Enrollment.objects.values_list("is_test", "state"))
    assert states == {False: "active", True: "stopped"}
    assert Campaign.objects.get(pk=campaign.pk).status == "active"  # no campaign paused for a test complaint
    assert api.post(LEADS, {"email": "ada@example.com"}, token=test_token).json()["outcome"] == "suppressed"
    assert api.post(LEADS, {"email": "ada@example.com"}, token=acme_token).json()["outcome"] == "already_enrolled"
    assert api.get(f"/api/v1/customers/{live['contact']['id']}", token=acme_token).json()["suppressed"] is None
    test_ada = api.get("/api/v1/customers", {"email": "ada@example.com"}, token=test_token).json()["data"][0]
    assert test_ada["suppressed"]["reason"] == "complained"
    # A live suppression, likewise, is the live identity space's: a test lead of that address still enrolls.
    api.post(EVENTS, {"type": "bounce", "email": "bea@example.com"}, token=acme_token)
    assert api.post(LEADS, {"email": "bea@example.com"}, token=test_token).json()["outcome"] == "created"
    assert numbers(campaign)["n_stopped"] == 0


def test_test_mode_changes_reach_test_endpoints_only(api, acme, test_token, clock):
    sequence(acme, 0)
    live = EndpointFactory(workspace=acme)
    api.post(LEADS, {"email": "ada@example.com"}, token=test_token)
    run_pass()
    assert not Event.objects.filter(test=False).exists()
    EndpointFactory(workspace=acme, test=True)
    api.post(LEADS, {"email": "bea@example.com"}, token=test_token)
    assert set(Event.objects.values_list("type", "test")) == {("customer.created", True), ("enrollment.created", True)}
    events_dispatch(event_ids=list(Event.objects.values_list("pk", flat=True)))
    created = Event.objects.get(type="customer.created")
    assert created.data["email"] == "bea@example.com" and created.deliveries.get().endpoint.test
    assert live.deliveries.count() == 0


def test_deleting_test_data_removes_test_contacts_enrollments_and_sends_and_nothing_live(
    api, acme, globex, acme_token, test_token, clock
):
    campaign = sequence(acme, 0)
    live = api.post(LEADS, {"email": "ada@example.com"}, token=acme_token).json()
    api.post(LEADS, {"email": "ada@example.com"}, token=test_token)
    api.post(LEADS, {"email": "bea@example.com"}, token=test_token)
    api.post(EVENTS, {"type": "bounce", "email": "bea@example.com"}, token=test_token)
    run_pass()
    theirs = api_token_create(workspace=globex, name="t", test=True).secret
    sequence(globex, 0)
    api.post(LEADS, {"email": "ada@example.com"}, token=theirs)
    before = numbers(campaign)

    assert workspace_test_data_delete(workspace=acme) == {
        "refunds": 0,
        "conversions": 0,
        "sends": 1,
        "enrollments": 2,
        "suppressions": 1,
        "customers": 2,
        "webhook events": 0,
    }
    assert list(Customer.objects.filter(workspace=acme).values_list("pk", flat=True)) == [live["contact"]["id"]]
    assert list(Enrollment.objects.filter(workspace=acme).values_list("pk", flat=True)) == [live["enrollment"]["id"]]
    assert list(EmailSend.objects.filter(workspace=acme).values_list("status", flat=True)) == ["sent"]
    assert not Suppression.objects.filter(workspace=acme).exists()
    assert not CustomerActivity.objects.filter(workspace=acme, customer__is_test=True).exists()
    assert Customer.objects.filter(workspace=globex, is_test=True).count() == 1  # another workspace's: kept
    assert numbers(campaign) == before == {**dict.fromkeys(NUMBERS, 0), "n_leads": 1, "n_completed": 1, "n_sends": 1}


@pytest.mark.django_db(transaction=True)
def test_concurrent_live_and_test_leads_of_one_address_make_one_contact_in_each_mode(acme):
    from campaigns.services import campaign_lead_add

    campaign = sequence(acme, 0)
    results = run_in_threads(
        16, lambda i: campaign_lead_add(campaign=campaign, email="ada@example.com", test=i % 2 == 1)
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(Customer.objects.values_list("is_test", flat=True)) == [False, True]
    assert sorted(Enrollment.objects.values_list("is_test", flat=True)) == [False, True]
    assert sorted(r.outcome for r in results) == ["already_enrolled"] * 14 + ["created"] * 2
    assert CampaignLead.objects.count() == 1  # the live one's
