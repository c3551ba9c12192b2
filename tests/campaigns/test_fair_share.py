"""Noisy neighbours in the sender's queues: a workspace with a flood of due work or a poisoned row leaves another
workspace's confirmation and campaign email on time (docs/concurrency.md, "Fair shares")."""

import json
import logging
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection, transaction
from django.utils import timezone

from campaigns import sending
from campaigns.confirmation import confirmation_candidates_sql
from campaigns.models import EmailSend, Enrollment
from campaigns.sending import claim_sql, run_pass
from customers.models import Customer
from lftrack.logs import JsonFormatter
from tests.campaigns.conftest import NOW
from tests.campaigns.test_double_opt_in import SHOP, campaign_click, pixel
from tests.factories import CampaignEmailFactory, CampaignFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


def log_lines(caplog, message: str) -> list[dict]:
    formatter = JsonFormatter()
    return [json.loads(formatter.format(record)) for record in caplog.records if record.getMessage() == message]


def pending(campaign, count: int, *, prefix: str, confirm_by=None) -> None:
    """`count` pixel enrollments of the campaign waiting for their confirmation email, the oldest first."""
    customers = Customer.objects.bulk_create(
        Customer(workspace=campaign.workspace, email=f"{prefix}{n}@example.com", source="pixel") for n in range(count)
    )
    confirm_by = confirm_by or timezone.now() + timedelta(days=7)
    Enrollment.objects.bulk_create(
        Enrollment(
            workspace=campaign.workspace,
            campaign=campaign,
            customer=customer,
            state="pending",
            enrolled_at=confirm_by - timedelta(days=7),
            confirm_by=confirm_by + timedelta(seconds=n),
        )
        for n, customer in enumerate(customers)
    )


def due(campaign, count: int, *, prefix: str) -> None:
    """`count` active enrollments of the campaign whose first step is due now, the oldest first."""
    customers = Customer.objects.bulk_create(
        Customer(workspace=campaign.workspace, email=f"{prefix}{n}@example.com", source="api") for n in range(count)
    )
    now = timezone.now()
    Enrollment.objects.bulk_create(
        Enrollment(
            workspace=campaign.workspace,
            campaign=campaign,
            customer=customer,
            enrolled_at=now,
            next_send_at=now - timedelta(minutes=count - n),
        )
        for n, customer in enumerate(customers)
    )


def mailed(prefix: str) -> list[str]:
    return [message.to[0] for message in mail.outbox if message.to[0].startswith(prefix)]


# --- double opt-in confirmations ---------------------------------------------------------------


def test_a_workspace_at_its_confirmation_quota_leaves_the_others_theirs(api, acme, globex, clock, settings):
    """The issue's reproduction: 105 pixel leads of one workspace, two confirmations a day each."""
    settings.CONFIRMATIONS_PER_DAY = 2
    for workspace in (acme, globex):
        workspace.allowed_origins = SHOP
        workspace.save()
    flooded = CampaignFactory(workspace=acme, slug="spring")
    for n in range(105):
        assert pixel(api, acme, campaign_click(flooded), f"a{n}@example.com").status_code == 201
    clock.shift(timedelta(minutes=1))
    assert (
        pixel(api, globex, campaign_click(CampaignFactory(workspace=globex, slug="news")), "b@example.com").status_code
        == 201
    )

    run_pass()
    assert mailed("b") == ["b@example.com"]  # in the first pass
    assert len(mailed("a")) == 2
    run_pass()
    assert len(mailed("a")) == 2 and len(mail.outbox) == 3  # at its quota: left out, not retried
    assert Enrollment.objects.filter(workspace=acme, confirmation_sent_at__isnull=True).count() == 103


def test_thousands_of_waiting_confirmations_leave_another_workspace_its_share_of_the_first_batch(
    acme, globex, settings
):
    settings.CONFIRMATIONS_PER_DAY = 10_000
    pending(CampaignFactory(workspace=acme, slug="spring"), 2000, prefix="a")
    pending(
        CampaignFactory(workspace=globex, slug="news"), 1, prefix="b", confirm_by=timezone.now() + timedelta(days=8)
    )

    run_pass()
    assert mailed("b") == ["b0@example.com"]
    assert 1 <= len(mailed("a")) <= 100  # one batch a pass, shared
    while not run_pass().idle:
        pass
    assert len(mailed("a")) == 2000  # the rest, pass after pass


def test_a_confirmation_that_cannot_be_sent_is_logged_once_and_skipped(acme, globex, settings, caplog):
    settings.EMAIL_BACKEND = "tests.campaigns.mailbackends.PoisonBackend"
    pending(CampaignFactory(workspace=acme, slug="spring"), 3, prefix="poison")
    pending(
        CampaignFactory(workspace=globex, slug="news"), 1, prefix="b", confirm_by=timezone.now() + timedelta(days=8)
    )

    with caplog.at_level(logging.WARNING, logger="lftrack.sender"):
        run_pass()
        run_pass()
    assert mailed("b") == ["b0@example.com"]
    lines = log_lines(caplog, "confirmation not sent")
    assert len(lines) == 3  # one line each, once: at most once, never retried
    assert {line["workspace_id"] for line in lines} == {acme.pk} and {line["error"] for line in lines} == {"ValueError"}
    assert "poison" not in json.dumps(lines) + caplog.text  # no address in the log


def test_the_confirmation_candidates_are_found_through_the_workspace_index(acme, globex, settings):
    pending(CampaignFactory(workspace=acme, slug="spring"), 3000, prefix="a")
    pending(CampaignFactory(workspace=globex, slug="news"), 1, prefix="b")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_enrollment")
        sql, params = confirmation_candidates_sql(now=timezone.now(), batch_size=100)
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "campaigns_enrollment_unmailed" in plan, plan
    assert "campaigns_enrollment_mailed" in plan, plan
    assert "LockRows" in plan and "Seq Scan on campaigns_enrollment" not in plan, plan


# --- sequence sends ------------------------------------------------------------------------------


def one_step(workspace, slug: str):
    campaign = CampaignFactory(workspace=workspace, slug=slug)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0, active=True)
    return campaign


def test_thousands_of_due_emails_leave_another_workspace_its_share_of_the_first_batch(
    acme, globex, mailoutbox, settings
):
    settings.DEFAULT_DAILY_SEND_LIMIT = 10_000
    due(one_step(acme, "spring"), 2000, prefix="a")
    due(one_step(globex, "news"), 1, prefix="b")  # due after all of acme's

    first = run_pass(should_stop=lambda: True)  # one batch, then stop
    assert mailed("b") == ["b0@example.com"]
    assert first.sent <= 100
    assert mail.outbox[0].to == ["a0@example.com"] and mail.outbox[1].to == ["b0@example.com"]  # in turns
    run_pass()
    assert EmailSend.objects.filter(status="sent").count() == 2001  # the rest in the next pass, as before


def test_every_workspace_with_something_due_gets_at_least_one_email_of_each_batch(mailoutbox):
    workspaces = [one_step(WorkspaceFactory(), f"c{n}") for n in range(150)]
    for n, campaign in enumerate(workspaces):
        due(campaign, 2, prefix=f"w{n}-")

    result = run_pass(batch_size=100, should_stop=lambda: True)
    assert result.sent == 150  # a batch of 150: one each, more workspaces than the batch holds
    assert EmailSend.objects.values("workspace").distinct().count() == 150


def test_an_email_that_cannot_be_sent_is_logged_once_and_skipped(acme, globex, settings, caplog, mailoutbox):
    settings.EMAIL_BACKEND = "tests.campaigns.mailbackends.PoisonBackend"
    due(one_step(acme, "spring"), 3, prefix="poison")
    due(one_step(globex, "news"), 1, prefix="b")

    with caplog.at_level(logging.WARNING, logger="lftrack.sender"):
        assert run_pass().counts()["sent"] == 1
        assert run_pass().idle
    assert mailed("b") == ["b0@example.com"]
    assert set(EmailSend.objects.filter(workspace=acme).values_list("status", flat=True)) == {"failed"}
    lines = log_lines(caplog, "email not sent")
    assert len(lines) == 3  # one line each, once: failed for good, never retried
    assert {line["workspace_id"] for line in lines} == {acme.pk} and {line["error"] for line in lines} == {"ValueError"}
    assert "poison" not in json.dumps(lines) + caplog.text


def test_an_enrollment_whose_reservation_raises_is_logged_and_tried_later_without_stopping_the_batch(
    acme,
    globex,
    clock,
    caplog,
    mailoutbox,
    monkeypatch,
):
    two_steps = one_step(acme, "spring")
    CampaignEmailFactory(campaign=two_steps, position=2, delay_minutes=60, active=True)
    due(two_steps, 2, prefix="a")
    due(one_step(globex, "news"), 1, prefix="b")
    real = sending.step_due_at

    def poisoned(*, enrollment, delay_minutes):  # acme's rows break the scheduling of their next step
        if enrollment.workspace_id == acme.pk:
            raise OverflowError("date value out of range")
        return real(enrollment=enrollment, delay_minutes=delay_minutes)

    monkeypatch.setattr(sending, "step_due_at", poisoned)
    with caplog.at_level(logging.ERROR, logger="lftrack.sender"):
        assert run_pass().counts() == {"sent": 1, "deferred": 2, "skipped": 0}
        assert run_pass().idle  # put back for later: not retried within the pass, nor logged again
    assert mailed("b") == ["b0@example.com"] and not mailed("a")
    lines = log_lines(caplog, "enrollment not reserved")
    assert len(lines) == 2 and {(line["workspace_id"], line["error"]) for line in lines} == {(acme.pk, "OverflowError")}
    assert set(Enrollment.objects.filter(workspace=acme).values_list("last_sent_position", "next_send_at")) == {
        (0, NOW + timedelta(minutes=10))
    }

    monkeypatch.undo()  # fixed: the next try after the retry delay goes
    clock.shift(timedelta(minutes=10))
    assert run_pass().sent == 2


def test_the_claim_takes_each_workspaces_share_through_the_due_index(acme, globex):
    due(one_step(acme, "spring"), 3000, prefix="a")
    due(one_step(globex, "news"), 1, prefix="b")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_enrollment")
        sql, params = claim_sql(now=timezone.now(), batch_size=100)
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(sql, params)
        claimed = cursor.fetchall()
    assert "Index Only Scan using campaigns_enrollment_due" in plan, plan  # the skip scan of workspaces
    assert "LockRows" in plan and "Seq Scan on campaigns_enrollment" not in plan, plan
    assert len(claimed) == 51 and {share for _, share in claimed} == {50}
