"""The sender (campaigns/sending.py): sequences on schedule, exactly the due steps, suppression, pause, limits."""

from datetime import timedelta

import pytest
from django.test import Client

from campaigns.models import Campaign, EmailSend, Enrollment
from campaigns.schedule import enrollment_next_send_at
from campaigns.sending import UNCONFIRMED, run_pass
from campaigns.services import (
    campaign_email_activate,
    campaign_lead_add,
    campaign_pause,
    campaign_resume,
    enrollment_stop,
    suppression_add,
)
from tests.campaigns.conftest import NOW
from tests.campaigns.mailbackends import WorkerDied
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    CustomerFactory,
    EmailSendFactory,
    EnrollmentFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

NOTHING = {"sent": 0, "deferred": 0, "skipped": 0}


def sequence(workspace, *delays, inactive=(), slug="spring"):
    """A campaign whose steps have these delays (minutes); positions in `inactive` are switched off."""
    campaign = CampaignFactory(workspace=workspace, slug=slug, name=slug.title())
    for position, delay in enumerate(delays, start=1):
        CampaignEmailFactory(
            campaign=campaign,
            position=position,
            delay_minutes=delay,
            active=position not in inactive,
            subject=f"Step {position} for {{{{ name }}}}",
            body=f"Hello {{{{name}}}}, this is step {position}, sent to {{{{ email }}}}.",
        )
    return campaign


def enroll(campaign, email="ada@example.com", name="Ada") -> Enrollment:
    return campaign_lead_add(campaign=campaign, email=email, name=name).enrollment


def positions(enrollment) -> list[int]:
    return list(EmailSend.objects.filter(enrollment=enrollment).order_by("position").values_list("position", flat=True))


def test_three_step_sequence_goes_out_on_schedule_and_completes(acme, clock, mailoutbox):
    campaign = sequence(acme, 0, 60, 1440)
    enrollment = enroll(campaign)

    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}
    assert [m.subject for m in mailoutbox] == ["Step 1 for Ada"]
    assert mailoutbox[0].to == ["ada@example.com"]
    assert mailoutbox[0].body.startswith("Hello Ada, this is step 1, sent to ada@example.com.\n")
    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.last_sent_position, enrollment.last_sent_at) == ("active", 1, NOW)
    assert enrollment.next_send_at == NOW + timedelta(minutes=60)
    assert enrollment.next_send_at == enrollment_next_send_at(enrollment=enrollment)  # the one rule

    clock.shift(timedelta(minutes=59, seconds=59))
    assert run_pass().counts() == NOTHING
    clock.shift(timedelta(seconds=1))
    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}
    enrollment.refresh_from_db()
    assert (
        enrollment.next_send_at == NOW + timedelta(minutes=60 + 1440) == enrollment_next_send_at(enrollment=enrollment)
    )

    clock.shift(timedelta(minutes=1439))
    assert run_pass().counts() == NOTHING
    clock.shift(timedelta(minutes=1))
    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}
    assert [m.subject for m in mailoutbox] == ["Step 1 for Ada", "Step 2 for Ada", "Step 3 for Ada"]

    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.next_send_at, enrollment.last_sent_position) == ("completed", None, 3)
    assert enrollment.completed_at == NOW + timedelta(minutes=1500)
    sends = list(EmailSend.objects.filter(enrollment=enrollment).order_by("position"))
    assert [(s.position, s.status, s.error, s.to_email) for s in sends] == [
        (1, "sent", "", "ada@example.com"),
        (2, "sent", "", "ada@example.com"),
        (3, "sent", "", "ada@example.com"),
    ]
    assert [s.sent_at for s in sends] == [NOW, NOW + timedelta(minutes=60), NOW + timedelta(minutes=1500)]
    assert [s.campaign_email.position for s in sends] == [1, 2, 3]
    assert [m.extra_headers["Message-ID"] for m in mailoutbox] == [s.message_id for s in sends]
    assert len({s.message_id for s in sends}) == 3

    clock.shift(timedelta(days=30))
    assert run_pass().counts() == NOTHING
    assert len(mailoutbox) == 3


def test_steps_with_no_delay_go_out_in_one_pass(acme, clock, mailoutbox):
    enrollment = enroll(sequence(acme, 0, 0, 0))
    assert run_pass(batch_size=1).counts() == {"sent": 3, "deferred": 0, "skipped": 0}
    assert positions(enrollment) == [1, 2, 3]


def test_inactive_steps_are_skipped(acme, clock, mailoutbox):
    enrollment = enroll(sequence(acme, 0, 60, 120, inactive={2}))
    run_pass()
    enrollment.refresh_from_db()
    # Step 3's delay counts from the previous send; step 2 is never sent.
    assert enrollment.next_send_at == NOW + timedelta(minutes=120)
    clock.shift(timedelta(minutes=120))
    assert run_pass().sent == 1
    enrollment.refresh_from_db()
    assert enrollment.state == "completed"
    assert positions(enrollment) == [1, 3]
    assert [m.subject for m in mailoutbox] == ["Step 1 for Ada", "Step 3 for Ada"]


def test_a_trailing_inactive_step_keeps_the_enrollment_waiting_for_its_activation(acme, clock, mailoutbox):
    campaign = sequence(acme, 0, 30, inactive={2})
    enrollment = enroll(campaign)
    run_pass()
    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.next_send_at) == ("active", None)

    clock.shift(timedelta(hours=2))
    campaign_email_activate(campaign_email=campaign.emails.get(position=2))
    enrollment.refresh_from_db()
    assert enrollment.next_send_at == NOW + timedelta(minutes=30)  # from the previous send: already due
    assert run_pass().sent == 1
    enrollment.refresh_from_db()
    assert enrollment.state == "completed"
    assert positions(enrollment) == [1, 2]


def test_activation_after_enrollment_schedules_the_first_send(acme, clock, mailoutbox):
    campaign = sequence(acme, 45, inactive={1})
    enrollment = enroll(campaign)
    assert enrollment.next_send_at is None
    clock.shift(timedelta(days=1))
    assert run_pass().counts() == NOTHING

    campaign_email_activate(campaign_email=campaign.emails.get())
    enrollment.refresh_from_db()
    assert enrollment.next_send_at == NOW + timedelta(minutes=45)  # counted from enrollment: due already
    assert run_pass().sent == 1
    assert [m.subject for m in mailoutbox] == ["Step 1 for Ada"]


def test_resume_continues_from_the_next_unsent_step(acme, clock, mailoutbox):
    campaign = sequence(acme, 0, 60, 60)
    enrollment = enroll(campaign)
    run_pass()
    enrollment_stop(enrollment=enrollment)
    clock.shift(timedelta(hours=5))
    assert run_pass().counts() == NOTHING

    result = campaign_lead_add(campaign=campaign, email="ada@example.com")  # a stopped enrollment resumes
    assert (result.outcome, result.enrollment.pk) == ("reused", enrollment.pk)
    assert result.enrollment.next_send_at == NOW + timedelta(hours=5, minutes=60)  # counted from the resume
    clock.shift(timedelta(minutes=60))
    assert run_pass().sent == 1
    assert positions(enrollment) == [1, 2]
    assert [m.subject for m in mailoutbox] == ["Step 1 for Ada", "Step 2 for Ada"]


def test_an_address_suppressed_at_send_time_is_skipped_and_its_enrollment_stopped(acme, globex, clock, mailoutbox):
    enrollment = enroll(sequence(acme, 10), email="Ada@Example.com")
    # Written straight to the table (as an import or another worker's race would): the sender checks itself.
    SuppressionFactory(workspace=acme, email="ada@example.com")
    SuppressionFactory(workspace=globex, email="bob@example.com")  # another workspace's list does not count
    other = enroll(acme.campaigns.get(), email="bob@example.com", name="Bob")
    clock.shift(timedelta(minutes=10))

    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 1}
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]
    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.stopped_at, enrollment.next_send_at) == (
        "stopped",
        NOW + timedelta(minutes=10),
        None,
    )
    assert positions(enrollment) == []
    assert positions(other) == [1]


def test_a_suppressed_address_receives_nothing_more(acme, clock, mailoutbox):
    enrollment = enroll(sequence(acme, 0, 60, 60))
    run_pass()
    suppression_add(workspace=acme, email="ADA@example.com", reason="bounced", channel="manual")
    clock.shift(timedelta(days=3))
    assert run_pass().counts() == NOTHING
    assert len(mailoutbox) == 1
    assert positions(enrollment) == [1]


def test_an_unsubscribed_address_receives_nothing_more(acme, clock, mailoutbox):
    campaign = sequence(acme, 0, 60)
    enrollment = enroll(campaign)
    other_campaign = sequence(acme, 30, slug="autumn")
    other = enroll(other_campaign)
    run_pass()
    link = mailoutbox[0].extra_headers["List-Unsubscribe"].strip("<>")

    response = Client().post(link.removeprefix("http://127.0.0.1:8000"), {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    clock.shift(timedelta(days=1))
    assert run_pass().counts() == NOTHING
    assert len(mailoutbox) == 1
    enrollment.refresh_from_db()
    other.refresh_from_db()
    assert (enrollment.state, other.state) == ("stopped", "stopped")  # every campaign of the workspace


def test_a_contact_without_an_email_is_skipped(acme, clock, mailoutbox):
    campaign = sequence(acme, 0)
    customer = CustomerFactory(workspace=acme, email="", external_id="user_42")
    enrollment = EnrollmentFactory(campaign=campaign, customer=customer, next_send_at=NOW)
    assert run_pass().counts() == {"sent": 0, "deferred": 0, "skipped": 1}
    enrollment.refresh_from_db()
    assert enrollment.state == "stopped"
    assert mailoutbox == []


def test_due_enrollments_of_other_states_are_left_alone(acme, clock, mailoutbox):
    campaign = sequence(acme, 0)
    EnrollmentFactory(campaign=campaign, state="stopped", next_send_at=NOW)
    EnrollmentFactory(campaign=campaign, state="completed", next_send_at=NOW)
    assert run_pass().counts() == NOTHING
    assert mailoutbox == []


def test_a_due_time_left_without_an_active_step_is_cleared(acme, clock, mailoutbox):
    campaign = sequence(acme, 0, inactive={1})
    enrollment = EnrollmentFactory(campaign=campaign, next_send_at=NOW)
    assert run_pass().counts() == NOTHING
    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.next_send_at) == ("active", None)


# --- what the email says -------------------------------------------------------------------


def test_only_name_and_email_are_filled_in_and_nothing_else_is_evaluated(acme, clock, mailoutbox, settings):
    settings.PUBLIC_BASE_URL = "https://track.example.com"
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(
        campaign=campaign,
        position=1,
        delay_minutes=0,
        subject="{% load static %}Hi {{name}} \r\nBcc: victim@example.com",
        body="{{ request }} {% now 'Y' %} {{ settings.SECRET_KEY }} {{  name  }} <{{email}}> {{ Name }}",
    )
    enroll(campaign, email="ada@example.com", name="Ada {{ email }}\r\nBcc: evil@example.com <b>")
    run_pass()

    [message] = mailoutbox
    assert message.subject == "{% load static %}Hi Ada {{ email }} Bcc: evil@example.com <b>  Bcc: victim@example.com"
    assert message.body == (
        "{{ request }} {% now 'Y' %} {{ settings.SECRET_KEY }} Ada {{ email }} Bcc: evil@example.com <b> "
        "<ada@example.com> {{ Name }}\n\n-- \nUnsubscribe: "
        + message.extra_headers["List-Unsubscribe"].strip("<>")
        + "\n"
    )
    assert message.to == ["ada@example.com"]
    assert message.recipients() == ["ada@example.com"]
    headers = message.message()
    assert "\n" not in headers["Subject"].replace("\n ", "")  # folded, never a new header
    assert headers["Bcc"] is None


def test_every_message_carries_its_message_id_and_one_click_unsubscribe(acme, clock, mailoutbox, settings):
    settings.PUBLIC_BASE_URL = "https://track.example.com"
    enroll(sequence(acme, 0), email="Ada@Example.com")
    enroll(acme.campaigns.get(), email="bob@example.com", name="")
    run_pass()

    sends = {send.to_email: send for send in EmailSend.objects.all()}
    for message in mailoutbox:
        mime = message.message()
        [to] = message.to
        assert mime["Message-ID"] == sends[to].message_id
        assert sends[to].message_id.endswith("@track.example.com>")
        assert mime["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        link = mime["List-Unsubscribe"]
        assert link.startswith("<https://track.example.com/u/") and link.endswith(">")
        assert f"Unsubscribe: {link[1:-1]}\n" in message.body
    assert mailoutbox[1].subject == "Step 1 for"  # an empty name stays empty (the subject is trimmed)
    links = {m.extra_headers["List-Unsubscribe"] for m in mailoutbox}
    assert len(links) == 2


# --- pause and resume ----------------------------------------------------------------------


def test_a_paused_campaigns_due_emails_wait_and_go_out_once_on_resume(acme, clock, mailoutbox):
    campaign = sequence(acme, 0, 60)
    others = sequence(acme, 0, slug="autumn")
    enrollment = enroll(campaign)
    campaign_pause(campaign=campaign)
    enroll(others, email="bob@example.com")
    assert Campaign.objects.get(pk=campaign.pk).paused_at == NOW

    clock.shift(timedelta(hours=3))
    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}  # only the other campaign's
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]

    resumed = campaign_resume(campaign=campaign)
    assert (resumed.status, resumed.paused_at) == ("active", None)
    assert run_pass().sent == 1
    assert run_pass().counts() == NOTHING
    assert positions(enrollment) == [1]
    enrollment.refresh_from_db()
    assert enrollment.next_send_at == NOW + timedelta(hours=4)  # step 2 counts from the late send


# --- daily sending limit -------------------------------------------------------------------


def test_the_daily_limit_defers_to_the_next_utc_day_and_sends_later(acme, globex, clock, mailoutbox):
    acme.daily_send_limit = 3
    acme.save()
    spring = sequence(acme, 0, 0)
    autumn = sequence(acme, 0, slug="autumn")
    # One send earlier today and one yesterday, of another campaign: today's counts, yesterday's not.
    EmailSendFactory(enrollment=enroll(autumn, email="early@example.com"), position=1, sent_at=NOW - timedelta(hours=1))
    EmailSendFactory(
        enrollment=enroll(autumn, email="older@example.com"), position=1, sent_at=NOW - timedelta(hours=10)
    )
    Enrollment.objects.filter(campaign=autumn).update(state="completed", next_send_at=None)
    people = [enroll(spring, email=f"p{i}@example.com") for i in range(2)]  # through the API's service
    globex_campaign = sequence(globex, 0)
    enroll(globex_campaign, email="g@example.com")  # another workspace has its own allowance

    # acme may send 2 more today: both first steps go (and globex's), both second steps (no delay) wait.
    assert run_pass().counts() == {"sent": 3, "deferred": 0, "skipped": 0}
    assert run_pass().counts() == {"sent": 0, "deferred": 2, "skipped": 0}
    assert EmailSend.objects.filter(workspace=acme, sent_at__gte=NOW.replace(hour=0)).count() == 3
    for person in people:
        person.refresh_from_db()
    midnight = NOW.replace(hour=0) + timedelta(days=1)
    assert [(p.last_sent_position, p.next_send_at) for p in people] == [(1, midnight), (1, midnight)]

    clock.shift(timedelta(hours=3))
    assert run_pass().counts() == NOTHING  # deferred, not retried within the day
    clock.move_to(midnight)
    assert run_pass().counts() == {"sent": 2, "deferred": 0, "skipped": 0}
    assert sorted(positions(p) for p in people) == [[1, 2], [1, 2]]
    assert EmailSend.objects.filter(workspace=acme).count() == 6
    assert sum(1 for m in mailoutbox if m.to != ["g@example.com"]) == 4


def test_the_default_limit_comes_from_the_setting(acme, clock, mailoutbox, settings):
    settings.DEFAULT_DAILY_SEND_LIMIT = 1
    campaign = sequence(acme, 0)
    enroll(campaign, email="a@example.com")
    enroll(campaign, email="b@example.com")
    assert run_pass().counts() == {"sent": 1, "deferred": 1, "skipped": 0}
    acme.daily_send_limit = 0  # the workspace's own value wins, even zero
    acme.save()
    clock.shift(timedelta(days=1))
    assert run_pass().counts() == {"sent": 0, "deferred": 1, "skipped": 0}


# --- a worker dying mid-send: at most once --------------------------------------------------


def test_a_worker_dying_while_handing_over_never_sends_that_step_again(acme, clock, mailoutbox, settings):
    campaign = sequence(acme, 0, 60)
    enrollment = enroll(campaign)
    settings.EMAIL_BACKEND = "tests.campaigns.mailbackends.DyingBackend"
    with pytest.raises(WorkerDied):
        run_pass()

    # The reservation was committed before the hand-over: the step counts as taken, flagged unconfirmed.
    [send] = EmailSend.objects.all()
    assert (send.position, send.status, send.error) == (1, "failed", UNCONFIRMED)
    enrollment.refresh_from_db()
    assert (enrollment.last_sent_position, enrollment.next_send_at) == (1, NOW + timedelta(minutes=60))

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # another worker takes over
    assert run_pass().counts() == NOTHING
    assert mailoutbox == []
    clock.shift(timedelta(minutes=60))
    assert run_pass().sent == 1  # the sequence goes on with the next step
    assert [m.subject for m in mailoutbox] == ["Step 2 for Ada"]
    assert positions(enrollment) == [1, 2]


def test_a_worker_dying_before_its_reservation_commits_leaves_the_step_due(acme, clock, mailoutbox, monkeypatch):
    enrollment = enroll(sequence(acme, 0, 60))

    def die():
        raise WorkerDied("killed while reserving")

    monkeypatch.setattr("campaigns.sending.message_id_new", die)  # inside the reservation transaction
    with pytest.raises(WorkerDied):
        run_pass()
    assert not EmailSend.objects.exists()  # rolled back with the transaction
    enrollment.refresh_from_db()
    assert (enrollment.last_sent_position, enrollment.next_send_at) == (0, NOW)

    monkeypatch.undo()
    assert run_pass().sent == 1
    assert positions(enrollment) == [1]
    assert len(mailoutbox) == 1
