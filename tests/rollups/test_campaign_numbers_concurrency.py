"""Campaign numbers under concurrent writers on PostgreSQL: unsubscribes racing enrollments of the same
address, roll-ups and rebuilds against open state changes, sender workers against both; every change counted once."""

import threading
from datetime import date

import pytest
from django.db import transaction

from campaigns.models import Campaign, Enrollment
from campaigns.sending import run_pass
from campaigns.services import campaign_lead_add, enrollment_resume, enrollment_stop
from campaigns.unsubscribe import unsubscribe
from lftrack.db import lift_timeouts
from rollups.selectors import campaign_step_sends, campaigns_with_numbers
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.backoffice.test_campaign_numbers import NAMES, counted
from tests.conftest import run_in_threads, start_threads
from tests.factories import CampaignEmailFactory, CampaignFactory, CustomerFactory

pytestmark = pytest.mark.django_db(transaction=True)
DELTAS = "rollups_campaignnumberdelta"


def assert_exact(campaign: Campaign) -> dict[str, int]:
    row = campaigns_with_numbers(campaigns=Campaign.objects.filter(pk=campaign.pk)).get()
    shown = {name: getattr(row, f"n_{name}") for name in NAMES}
    assert shown == counted(campaign)
    return shown


@pytest.fixture
def spring(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=60)
    return campaign


def held_open(write, release: threading.Event, written: threading.Event):
    """`write()` in a transaction that stays open until `release`."""

    def run(i: int) -> None:
        with transaction.atomic():
            write()
            written.set()
            release.wait(10)

    return run


def finishes_after_release(write, other) -> None:
    """`write` runs, and stays open, in a thread; `other` must wait for it and finish only after its commit."""
    written, release, finished = threading.Event(), threading.Event(), threading.Event()
    threads, _ = start_threads(1, held_open(write, release, written))
    assert written.wait(10)
    others, _ = start_threads(1, lambda i: (other(), finished.set()))
    assert not finished.wait(0.5)  # held by the address's lock until the first one commits
    release.set()
    for thread in threads + others:
        thread.join(10)
    assert finished.is_set()


def test_an_unsubscribe_waits_for_an_open_enrollment_of_its_address_and_counts_it(acme, spring):
    finishes_after_release(
        lambda: campaign_lead_add(campaign=spring, email="ada@example.com"),
        lambda: unsubscribe(workspace=acme, email="ADA@example.com"),
    )
    assert assert_exact(spring)["unsubscribes"] == 1


def test_an_enrollment_waits_for_an_open_unsubscribe_of_its_address_and_counts_it(acme, spring):
    CustomerFactory(workspace=acme, email="ada@example.com")
    finishes_after_release(
        lambda: unsubscribe(workspace=acme, email="ada@example.com"),
        lambda: campaign_lead_add(campaign=spring, email="ada@example.com"),  # did not see the suppression yet
    )
    assert Enrollment.objects.filter(campaign=spring).count() == 1
    assert assert_exact(spring)["unsubscribes"] == 1


def test_simultaneous_enrollments_and_unsubscribes_of_the_same_addresses(acme, spring):
    barrier = threading.Barrier(8)

    def write(i: int) -> None:
        email = f"person{i // 2}@example.com"
        barrier.wait(10)
        if i % 2:
            unsubscribe(workspace=acme, email=email)
        else:
            campaign_lead_add(campaign=spring, email=email)
        if i == 3:
            numbers_roll_up()

    run_in_threads(8, write)
    assert_exact(spring)
    numbers_roll_up()
    assert_exact(spring)


def test_an_open_state_change_holds_the_logs_watermark_back(acme, spring):
    ada = campaign_lead_add(campaign=spring, email="ada@example.com").enrollment
    numbers_roll_up()
    written, release = threading.Event(), threading.Event()
    threads, _ = start_threads(1, held_open(lambda: enrollment_stop(enrollment=ada), release, written))
    assert written.wait(10)
    campaign_lead_add(campaign=spring, email="bea@example.com")  # committed, with the higher id

    assert numbers_roll_up(wait_seconds=0.2)[DELTAS] is None  # skipped, not moved past the open one
    assert assert_exact(spring)["active"] == 2  # the stop is not committed yet
    release.set()
    threads[0].join(10)
    assert numbers_roll_up()[DELTAS] is not None
    assert assert_exact(spring)["stopped"] == 1


def test_a_rebuild_among_state_changes_counts_each_once(acme, spring):
    enrollments = [campaign_lead_add(campaign=spring, email=f"p{i}@example.com").enrollment for i in range(6)]

    def write(i: int) -> None:
        if i == 0:
            numbers_rebuild()
            return
        for _ in range(5):
            enrollment_stop(enrollment=enrollments[i])
            enrollment_resume(enrollment=enrollments[i])
        enrollment_stop(enrollment=enrollments[i])

    run_in_threads(6, write)
    assert assert_exact(spring)["stopped"] == 5
    numbers_roll_up()
    assert_exact(spring)


def test_sends_per_step_stay_exact_under_two_senders_roll_ups_and_a_rebuild(mailoutbox):
    from tests.backoffice.test_funnel_numbers import plain
    from tests.campaigns.test_sending_concurrency import seed

    campaign = seed(120, steps=2)

    def work(i: int) -> None:
        lift_timeouts()  # a slow host may hold a sender behind the rebuild's lock longer than the web's deadline
        if i < 2:  # two sender workers until nothing is due
            while not run_pass(batch_size=10).idle:
                pass
        elif i == 2:
            for _ in range(6):
                numbers_roll_up()
        else:
            numbers_rebuild()

    assert run_in_threads(4, work) == [None] * 4
    numbers = campaign_step_sends(campaign_id=campaign.pk, since=date.min)
    assert (numbers["steps"], numbers["days"]) == plain(campaign)
    assert numbers["steps"] == {1: {"sent": 120, "failed": 0}, 2: {"sent": 120, "failed": 0}}
    numbers_roll_up()
    numbers = campaign_step_sends(campaign_id=campaign.pk, since=date.min)
    assert (numbers["steps"], numbers["days"]) == plain(campaign)
