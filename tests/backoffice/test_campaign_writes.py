"""Owners' campaign writes, each through the campaigns service: stop and resume recipients, add and
activate sequence emails, create campaigns, suppress addresses. Editors and other workspaces cannot."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from campaigns.models import Campaign, CampaignEmail, CampaignLead, Enrollment, Suppression
from campaigns.services import campaign_lead_add
from customers.models import CustomerActivity
from tests.factories import CampaignEmailFactory, CampaignFactory, SuppressionFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RECIPIENTS = reverse("admin:campaigns_enrollment_changelist")


@pytest.fixture(autouse=True)
def clock(time_machine):
    time_machine.move_to(NOW, tick=False)
    return time_machine


@pytest.fixture
def spring(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring", name="Spring")
    CampaignEmailFactory(campaign=campaign, position=1, subject="Welcome", delay_minutes=60, active=True)
    return campaign


def enroll(campaign, email: str) -> Enrollment:
    return campaign_lead_add(campaign=campaign, email=email, name="", external_id="", channel="api").enrollment


def act(client, action: str, *enrollments, url=RECIPIENTS):
    return client.post(url, {"action": action, "_selected_action": [e.pk for e in enrollments]})


def fresh(enrollment) -> Enrollment:
    return Enrollment.objects.get(pk=enrollment.pk)


def test_owner_stops_and_resumes_recipients(as_alice, spring, clock):
    ada, bea = enroll(spring, "ada@example.com"), enroll(spring, "bea@example.com")
    assert fresh(ada).next_send_at == NOW + timedelta(minutes=60)
    response = act(as_alice, "stop_enrollments", ada)
    assert response.status_code == 302
    assert (fresh(ada).state, fresh(ada).next_send_at, fresh(bea).state) == ("stopped", None, "active")
    assert "Stopped 1 enrollment(s)." in as_alice.get(response.url).content.decode()
    later = NOW + timedelta(hours=5)
    clock.move_to(later, tick=False)
    response = act(as_alice, "resume_enrollments", ada, bea)  # bea is active: left as she is
    assert "Resumed 1 enrollment(s)." in as_alice.get(response.url).content.decode()
    resumed = fresh(ada)
    # Same enrollment, active again, its first step now counted from the resume; no new campaign lead.
    assert (resumed.pk, resumed.state, resumed.next_send_at) == (ada.pk, "active", later + timedelta(minutes=60))
    assert CampaignLead.objects.filter(enrollment=ada).count() == 1
    assert fresh(bea).next_send_at == NOW + timedelta(minutes=60)


def test_resume_leaves_a_suppressed_address_stopped(as_alice, acme, spring):
    ada = enroll(spring, "ada@example.com")
    act(as_alice, "stop_enrollments", ada)
    SuppressionFactory(workspace=acme, email="ada@example.com", reason="bounced")
    response = act(as_alice, "resume_enrollments", ada)
    assert fresh(ada).state == "stopped"
    assert "Resumed 0 enrollment(s); 1 left stopped: address suppressed." in as_alice.get(response.url).content.decode()


def test_stop_with_foreign_ids_touches_only_own_enrollments(as_alice, spring, globex):
    theirs = enroll(CampaignFactory(workspace=globex, slug="winter"), "gina@example.com")
    ours = enroll(spring, "ada@example.com")
    act(as_alice, "stop_enrollments", ours, theirs)
    assert (fresh(ours).state, fresh(theirs).state) == ("stopped", "active")


def test_editors_cannot_stop_or_resume(as_bob, spring):
    ada = enroll(spring, "ada@example.com")
    page = as_bob.get(RECIPIENTS).content.decode()
    assert "stop_enrollments" not in page
    act(as_bob, "stop_enrollments", ada)
    assert fresh(ada).state == "active"


def inline_data(campaign, rows: list[dict], name=None) -> dict:
    data = {
        "name": name or campaign.name,
        "emails-TOTAL_FORMS": len(rows),
        "emails-INITIAL_FORMS": sum(1 for row in rows if row.get("id")),
        "emails-MIN_NUM_FORMS": 0,
        "emails-MAX_NUM_FORMS": 1000,
    }
    for i, row in enumerate(rows):
        for key, value in row.items():
            if key == "active" and not value:
                continue
            data[f"emails-{i}-{key}"] = "on" if value is True else value
        data[f"emails-{i}-campaign"] = campaign.pk
    return data


def existing(step: CampaignEmail, **changes) -> dict:
    row = {
        "id": step.pk,
        "subject": step.subject,
        "body": step.body,
        "delay_minutes": step.delay_minutes,
        "active": step.active,
    }
    return {**row, **changes}


def test_owner_adds_a_step_and_activates_it_which_schedules_waiting_recipients(as_alice, acme):
    campaign = CampaignFactory(workspace=acme, slug="quiet", name="Quiet")
    draft = CampaignEmailFactory(campaign=campaign, position=1, subject="Hello", delay_minutes=30, active=False)
    waiting = enroll(campaign, "ada@example.com")
    assert fresh(waiting).next_send_at is None  # no active step yet
    url = reverse("admin:campaigns_campaign_change", args=[campaign.pk])
    new_step = {"subject": "Tips", "body": "Some tips", "delay_minutes": 1440, "active": False}
    response = as_alice.post(url, inline_data(campaign, [existing(draft, subject="Hello there"), new_step]))
    assert response.status_code == 302, response.content.decode()[:2000]
    steps = list(
        CampaignEmail.objects.filter(campaign=campaign)
        .order_by("position")
        .values_list("position", "subject", "active", "workspace_id")
    )
    assert steps == [(1, "Hello there", False, acme.pk), (2, "Tips", False, acme.pk)]
    assert fresh(waiting).next_send_at is None
    draft.refresh_from_db()
    response = as_alice.post(
        url, inline_data(campaign, [existing(draft, active=True), existing(CampaignEmail.objects.get(position=2))])
    )
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.active
    assert fresh(waiting).next_send_at == NOW + timedelta(minutes=30)


def test_a_live_step_keeps_its_delay_and_stays_live(as_alice, spring):
    step = spring.emails.get()
    url = reverse("admin:campaigns_campaign_change", args=[spring.pk])
    as_alice.post(url, inline_data(spring, [existing(step, delay_minutes=5, active=False, subject="New subject")]))
    step.refresh_from_db()
    assert (step.subject, step.delay_minutes, step.active) == ("New subject", 60, True)


def test_editors_cannot_change_the_sequence(as_bob, spring):
    step = spring.emails.get()
    url = reverse("admin:campaigns_campaign_change", args=[spring.pk])
    assert as_bob.post(url, inline_data(spring, [existing(step, subject="Hijacked")])).status_code == 403
    step.refresh_from_db()
    assert step.subject == "Welcome"


def test_owner_creates_a_campaign_through_the_service(as_alice, as_bob, acme, globex):
    add = reverse("admin:campaigns_campaign_add")
    assert as_bob.post(add, {"workspace": acme.pk, "name": "X", "slug": "x"}).status_code == 403
    response = as_alice.post(add, {"workspace": acme.pk, "name": "Autumn sale", "slug": "autumn"})
    campaign = Campaign.objects.get(workspace=acme, slug="autumn")
    assert response.status_code == 302 and campaign.name == "Autumn sale"
    response = as_alice.post(add, {"workspace": acme.pk, "name": "Bad", "slug": "Bad_Slug"}, follow=True)
    assert "slug must be lowercase letters, digits and hyphens" in response.content.decode().lower()
    response = as_alice.post(add, {"workspace": globex.pk, "name": "Theirs", "slug": "theirs"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert set(Campaign.objects.values_list("slug", flat=True)) == {"autumn"}


def test_owner_suppresses_an_address_which_stops_its_enrollments(as_alice, as_bob, acme, spring):
    ada = enroll(spring, "Ada@Example.com")
    add = reverse("admin:campaigns_suppression_add")
    assert as_bob.post(add, {"workspace": acme.pk, "email": "ada@example.com", "reason": "bounced"}).status_code == 403
    response = as_alice.post(add, {"workspace": acme.pk, "email": "ADA@example.com", "reason": "bounced"})
    assert response.status_code == 302
    assert list(Suppression.objects.values_list("email", "reason")) == [("ada@example.com", "bounced")]
    assert fresh(ada).state == "stopped"
    page = as_alice.get(reverse("admin:customers_customer_change", args=[ada.customer_id])).content.decode()
    assert "Suppressed: bounced" in page


def test_suppress_contacts_action_is_for_owners_and_their_own_contacts(as_alice, as_bob, acme, globex, spring):
    ada = enroll(spring, "ada@example.com")
    theirs = enroll(CampaignFactory(workspace=globex, slug="w"), "gina@example.com")
    contacts = reverse("admin:customers_customer_changelist")
    data = {"action": "suppress_contacts", "_selected_action": [ada.customer_id, theirs.customer_id]}
    as_bob.post(contacts, data)
    assert not Suppression.objects.exists()
    response = as_alice.post(contacts, data)
    assert response.status_code == 302
    assert list(Suppression.objects.values_list("workspace_id", "email", "reason")) == [
        (acme.pk, "ada@example.com", "unsubscribed")
    ]
    assert (fresh(ada).state, fresh(theirs).state) == ("stopped", "active")
    assert CustomerActivity.objects.filter(customer_id=ada.customer_id, kind="suppressed", channel="manual").exists()


CAMPAIGNS = reverse("admin:campaigns_campaign_changelist")


def test_owner_resumes_a_paused_campaign_and_only_their_own(as_alice, spring, globex):
    spring.status, spring.paused_at = Campaign.Status.PAUSED, NOW
    spring.save()
    foreign = CampaignFactory(workspace=globex, status=Campaign.Status.PAUSED, paused_at=NOW)
    resp = as_alice.post(CAMPAIGNS, {"action": "resume_campaigns", "_selected_action": [spring.pk, foreign.pk]})
    assert resp.status_code == 302
    spring.refresh_from_db()
    foreign.refresh_from_db()
    assert (spring.status, spring.paused_at) == (Campaign.Status.ACTIVE, None)
    assert foreign.status == Campaign.Status.PAUSED


def test_owner_pauses_an_active_campaign_and_only_their_own(as_alice, spring, globex):
    foreign = CampaignFactory(workspace=globex)
    resp = as_alice.post(CAMPAIGNS, {"action": "pause_campaigns", "_selected_action": [spring.pk, foreign.pk]})
    assert resp.status_code == 302
    spring.refresh_from_db()
    foreign.refresh_from_db()
    assert spring.status == Campaign.Status.PAUSED and spring.paused_at is not None
    assert foreign.status == Campaign.Status.ACTIVE


def test_editors_cannot_pause_campaigns(as_bob, spring):
    assert b"pause_campaigns" not in as_bob.get(CAMPAIGNS).content
    as_bob.post(CAMPAIGNS, {"action": "pause_campaigns", "_selected_action": [spring.pk]})
    spring.refresh_from_db()
    assert spring.status == Campaign.Status.ACTIVE


def test_editors_cannot_resume_campaigns(as_bob, spring):
    spring.status = Campaign.Status.PAUSED
    spring.save()
    resp = as_bob.get(CAMPAIGNS)
    assert resp.status_code == 200 and b"resume_campaigns" not in resp.content
    as_bob.post(CAMPAIGNS, {"action": "resume_campaigns", "_selected_action": [spring.pk]})
    spring.refresh_from_db()
    assert spring.status == Campaign.Status.PAUSED


def test_the_campaign_page_pauses_and_resumes_it(as_alice, spring):
    page = reverse("admin:campaigns_campaign_change", args=[spring.pk])
    switch = reverse("admin:campaigns_campaign_switch", args=[spring.pk])
    assert "Pause sending" in as_alice.get(page).content.decode()
    done = as_alice.post(switch, follow=True)
    spring.refresh_from_db()
    assert spring.status == Campaign.Status.PAUSED and "Resume sending" in done.content.decode()
    assert f"Paused {spring.name}" in done.content.decode()
    as_alice.post(switch)
    spring.refresh_from_db()
    assert (spring.status, spring.paused_at) == (Campaign.Status.ACTIVE, None)


def test_only_owners_of_the_campaign_switch_it_and_only_by_post(as_alice, as_bob, as_charlie, spring):
    switch = reverse("admin:campaigns_campaign_switch", args=[spring.pk])
    assert (
        "Pause sending" not in as_bob.get(reverse("admin:campaigns_campaign_change", args=[spring.pk])).content.decode()
    )
    assert as_bob.post(switch).status_code == 403
    assert as_charlie.post(switch).status_code == 403
    assert as_alice.get(switch).status_code == 403
    spring.refresh_from_db()
    assert spring.status == Campaign.Status.ACTIVE
