"""The funnel's sends per step (sent, failed) and per step and UTC day equal plain counts of the sends through every
state change the sender and the rest make (reserved -> sent, failed, released, moved, deleted), before, between
and after roll-ups and after a rebuild; the page shows the same numbers."""

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
from django.urls import reverse

from campaigns.complaints import email_event_record
from campaigns.models import Campaign, EmailSend
from campaigns.sending import RETRY_DELAY, run_pass
from campaigns.services import campaign_lead_add
from customers.models import Customer
from rollups.models import DailyStepSends
from rollups.selectors import campaign_step_sends
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.factories import CampaignEmailFactory, CampaignFactory, EmailSendFactory, EnrollmentFactory

pytestmark = pytest.mark.django_db

# Half a minute before midnight (UTC): the first step goes on one day, the second on the next.
NOW = datetime(2026, 3, 2, 23, 59, 30, tzinfo=UTC)
TODAY, TOMORROW = NOW.date(), NOW.date() + timedelta(days=1)


def plain(campaign: Campaign, since: date = date.min) -> tuple[dict, dict]:
    """Sent and failed per step of all time, sent per (UTC day, step) from `since` on, counted over the sends."""
    steps: dict[int, dict[str, int]] = {}
    days: Counter = Counter()
    for position, status, sent_at in EmailSend.objects.filter(campaign=campaign).values_list(
        "position", "status", "sent_at"
    ):
        if status in ("sent", "failed"):
            steps.setdefault(position, {"sent": 0, "failed": 0})[status] += 1
        day = sent_at.astimezone(UTC).date()
        if status == "sent" and day >= since:
            days[(day, position)] += 1
    return steps, dict(days)


def found(campaign: Campaign, since: date = date.min) -> tuple[dict, dict]:
    numbers = campaign_step_sends(campaign_id=campaign.pk, since=since)
    return {p: step for p, step in numbers["steps"].items() if step["sent"] or step["failed"]}, numbers["days"]


def assert_exact(client, *campaigns: Campaign) -> dict:
    """Each campaign's step numbers equal the plain counts, from any day on, and its page shows them."""
    for campaign in campaigns:
        steps, days = plain(campaign)
        assert found(campaign) == (steps, days), campaign.slug
        assert found(campaign, since=TOMORROW) == plain(campaign, since=TOMORROW)
        funnel = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk])).context["funnel"]
        positions = list(campaign.emails.order_by("position").values_list("position", flat=True))
        shown = [(stage["count"], stage["note"]) for stage in funnel["stages"][1:-1]]
        assert shown == [
            (steps.get(p, {}).get("sent", 0), f"{steps[p]['failed']} failed" if steps.get(p, {}).get("failed") else "")
            for p in positions
        ]
        labels = [date.fromisoformat(label) for label in funnel["chart"]["labels"]]
        assert [step["data"] for step in funnel["chart"]["steps"]] == [
            [days.get((day, p), 0) for day in labels] for p in positions
        ]
    return plain(campaigns[0])[0]


@pytest.fixture
def spring(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring", name="Spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0, subject="Welcome")
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=1, subject="Tips")
    return campaign


def test_sends_per_step_and_day_stay_exact_through_every_state_change(
    as_bob, acme, globex, spring, time_machine, settings
):
    time_machine.move_to(NOW, tick=False)
    settings.EMAIL_BACKEND = "tests.campaigns.mailbackends.PickyBackend"
    autumn = CampaignFactory(workspace=acme, slug="autumn")
    CampaignEmailFactory(campaign=autumn, position=1, delay_minutes=0)
    theirs = CampaignFactory(workspace=globex, slug="theirs")
    CampaignEmailFactory(campaign=theirs, position=1, delay_minutes=0)
    for name in ("ada", "bea", "cy", "gone", "later"):
        campaign_lead_add(campaign=spring, email=f"{name}@example.com")
    campaign_lead_add(campaign=autumn, email="ada@example.com")
    campaign_lead_add(campaign=theirs, email="ada@example.com")
    assert assert_exact(as_bob, spring, autumn) == {}

    assert run_pass().sent == 5  # step 1: ada, bea, cy here, ada in autumn and theirs; gone fails, later waits
    assert assert_exact(as_bob, spring, autumn) == {1: {"sent": 3, "failed": 1}}  # all in the live tail
    numbers_roll_up()
    assert DailyStepSends.objects.filter(campaign=spring).exists()
    assert assert_exact(as_bob, spring, autumn) == {1: {"sent": 3, "failed": 1}}  # all rolled up

    time_machine.move_to(NOW + timedelta(minutes=1), tick=False)  # the next UTC day
    assert run_pass().sent == 3  # step 2 to ada, bea and cy, on the second day
    assert assert_exact(as_bob, spring) == {1: {"sent": 3, "failed": 1}, 2: {"sent": 3, "failed": 0}}
    numbers_roll_up()  # a roll-up between changes
    time_machine.move_to(NOW + RETRY_DELAY, tick=False)
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert run_pass().sent == 1  # later's first step, retried on the second day
    email_event_record(workspace=acme, event_type="complaint", email="ada@example.com")  # complaints: not steps
    assert assert_exact(as_bob, spring)[1] == {"sent": 4, "failed": 1}

    # A reservation counts nowhere until the sender says how it went: sent, or failed (unconfirmed).
    dee, eve = (EnrollmentFactory(campaign=spring, customer__email=f"{name}@example.com") for name in ("dee", "eve"))
    for enrollment in (dee, eve):
        EmailSendFactory(enrollment=enrollment, position=1, status="reserved", sent_at=NOW)
    assert assert_exact(as_bob, spring)[1] == {"sent": 4, "failed": 1}
    numbers_roll_up()
    EmailSend.objects.filter(enrollment=dee).update(status="sent", reserved_by=None)
    EmailSend.objects.filter(enrollment=eve).update(status="failed", error="unconfirmed", reserved_by=None)
    assert assert_exact(as_bob, spring)[1] == {"sent": 5, "failed": 2}
    numbers_roll_up()
    EmailSend.objects.filter(enrollment=eve).update(status="sent")  # failed -> sent
    EmailSend.objects.filter(enrollment=dee).update(sent_at=NOW - timedelta(days=3))  # to another day
    EmailSend.objects.filter(enrollment=dee, position=1).delete()  # a released reservation's row
    assert assert_exact(as_bob, spring)[1] == {"sent": 5, "failed": 1}

    # A contact deleted takes its sends: on days already rolled up and in the tail.
    Customer.objects.filter(workspace=acme, email="bea@example.com").delete()
    assert assert_exact(as_bob, spring, autumn) == {1: {"sent": 4, "failed": 1}, 2: {"sent": 2, "failed": 0}}
    numbers_roll_up()
    assert assert_exact(as_bob, spring, autumn) == {1: {"sent": 4, "failed": 1}, 2: {"sent": 2, "failed": 0}}
    assert found(theirs) == plain(theirs) == ({1: {"sent": 1, "failed": 0}}, {(TODAY, 1): 1})

    DailyStepSends.objects.filter(campaign=spring).update(sent=40)  # damaged by hand
    EmailSend.objects.filter(campaign=spring, status="failed").update(status="sent")  # a change in the tail
    numbers_rebuild()
    assert assert_exact(as_bob, spring, autumn) == {1: {"sent": 5, "failed": 0}, 2: {"sent": 2, "failed": 0}}
    EmailSend.objects.filter(campaign=spring, position=2).delete()  # changes after the rebuild: the tail again
    assert assert_exact(as_bob, spring) == {1: {"sent": 5, "failed": 0}}


def test_a_deleted_campaigns_step_sends_go_with_it(acme, spring, time_machine):
    time_machine.move_to(NOW, tick=False)
    campaign_lead_add(campaign=spring, email="ada@example.com")
    run_pass()
    numbers_roll_up()
    EmailSend.objects.update(status="failed")  # logged for a campaign about to go
    spring.delete()
    assert numbers_roll_up()["rollups_campaignnumberdelta"] is not None
    assert not DailyStepSends.objects.exists()
