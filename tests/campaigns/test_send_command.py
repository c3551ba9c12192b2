"""`manage.py send_due_emails`: one pass with --once, and the long-lived worker stopping cleanly on a signal."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.utils import timezone

from campaigns.models import EmailSend
from campaigns.services import campaign_lead_add
from tests.conftest import database_url
from tests.factories import CampaignEmailFactory, CampaignFactory, CustomerFactory, EnrollmentFactory

BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _production_mail(settings):
    """What the sender needs with DEBUG off: a mail URL and an https base for the unsubscribe links."""
    settings.EMAIL_URL_SET = True
    settings.PUBLIC_BASE_URL = "https://track.example.com"


def run(*args) -> dict:
    out = StringIO()
    call_command("send_due_emails", *args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


@pytest.mark.django_db
def test_once_runs_one_pass_and_prints_its_counts(acme, clock, mailoutbox, caplog):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    campaign_lead_add(campaign=campaign, email="ada@example.com")
    EnrollmentFactory(
        campaign=campaign, customer=CustomerFactory(workspace=acme, email=""), next_send_at=timezone.now()
    )

    assert run("--once") == {"sent": 1, "deferred": 0, "skipped": 1}
    assert len(mailoutbox) == 1
    [line] = [r for r in caplog.records if r.name == "lftrack.sender"]
    assert (line.message, line.levelname, line.sent, line.skipped, line.failed) == ("send pass", "INFO", 1, 1, 0)
    assert line.duration_ms >= 0
    assert run("--once") == {"sent": 0, "deferred": 0, "skipped": 0}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--once", "--batch-size", "0"], "--batch-size must be between 1 and 10000"),
        (["--sleep", "0"], "--sleep must be above 0 and at most 3600 seconds"),
    ],
)
def test_bad_options_are_one_line_errors(args, message):
    with pytest.raises(CommandError, match=f"^{message}$"):
        call_command("send_due_emails", *args, stdout=StringIO())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_worker_sends_what_is_due_and_exits_0_on_a_signal(acme, signum):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=600)
    enrollment = EnrollmentFactory(campaign=campaign, next_send_at=timezone.now() - timedelta(minutes=1))

    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "EMAIL_URL": "dummymail://",  # accepts and drops: this test is about the process, not the mail
        "PUBLIC_BASE_URL": "https://track.example.com",
        "LOG_LEVEL": "INFO",
        "LOG_FORMAT": "json",
    }
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "send_due_emails", "--sleep", "0.2"],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in worker.stderr], daemon=True)
    reader.start()
    try:
        while True:  # the pass that did something logs at INFO; idle passes log at DEBUG
            entry = json.loads(lines.get(timeout=60))
            if entry.get("message") == "send pass":
                break
        assert (entry["sent"], entry["deferred"], entry["skipped"], entry["logger"]) == (1, 0, 0, "lftrack.sender")
        assert entry["request_id"].startswith("send-")
        worker.send_signal(signum)
        out, _ = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert worker.returncode == 0
    assert json.loads(out) == {"sent": 1, "deferred": 0, "skipped": 0}  # the worker's totals
    assert list(EmailSend.objects.filter(enrollment=enrollment).values_list("position", "status")) == [(1, "sent")]


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ({"EMAIL_URL_SET": False}, "EMAIL_URL is required when DEBUG is off"),
        ({"PUBLIC_BASE_URL": "http://track.example.com"}, "PUBLIC_BASE_URL must be an https URL when DEBUG is off"),
    ],
    ids=["no-mail-url", "plain-http-base"],
)
@pytest.mark.django_db
def test_without_production_mail_settings_the_sender_refuses_to_start(settings, acme, mailoutbox, missing, message):
    for name, value in missing.items():
        setattr(settings, name, value)
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    campaign_lead_add(campaign=campaign, email="ada@example.com")
    with pytest.raises(CommandError, match=f"^{message} "):
        call_command("send_due_emails", "--once", stdout=StringIO())
    assert not EmailSend.objects.exists() and mailoutbox == []


def test_check_deploy_names_the_missing_mail_settings(settings):
    settings.EMAIL_URL_SET = False
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    with pytest.raises(SystemCheckError) as raised:
        call_command("check", "--deploy", "--fail-level", "ERROR", stdout=StringIO(), stderr=StringIO())
    assert "lftrack.E001" in str(raised.value) and "EMAIL_URL is required" in str(raised.value)
    assert "lftrack.E002" in str(raised.value) and "PUBLIC_BASE_URL must be an https URL" in str(raised.value)


def test_with_debug_on_the_console_is_fine(settings):
    settings.DEBUG, settings.EMAIL_URL_SET, settings.PUBLIC_BASE_URL = True, False, "http://127.0.0.1:8000"
    call_command(
        "check", "--deploy", "--fail-level", "ERROR", "--tag", "security", stdout=StringIO(), stderr=StringIO()
    )


@pytest.mark.django_db(transaction=True)
def test_the_worker_says_it_started_and_that_it_is_alive(monkeypatch, caplog):
    import threading

    from campaigns import sending

    monkeypatch.setattr(sending, "HEARTBEAT_SECONDS", 0.05)
    stop = threading.Event()
    threading.Timer(0.4, stop.set).start()
    with caplog.at_level("INFO", logger="lftrack.sender"):
        sending.sender_run(stop=stop, idle_seconds=0.05)
    messages = [record.getMessage() for record in caplog.records if record.name == "lftrack.sender"]
    assert messages[0] == "sender started" and "sender alive" in messages
