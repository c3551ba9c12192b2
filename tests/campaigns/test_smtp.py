"""Through real SMTP: a local aiosmtpd server started by the test receives what the sender hands over."""

import logging
import socket
from datetime import timedelta
from email import message_from_bytes, policy

import pytest
from aiosmtpd.controller import Controller
from django.test import Client

from campaigns.models import EmailSend, Enrollment, Suppression
from campaigns.sending import RETRY_DELAY, run_pass
from campaigns.services import campaign_lead_add
from tests.campaigns.conftest import NOW
from tests.factories import CampaignEmailFactory, CampaignFactory

pytestmark = pytest.mark.django_db


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Recorder:
    """An aiosmtpd handler that keeps what it accepts and answers as told for chosen recipients."""

    def __init__(self):
        self.received: list[tuple[str, list[str], bytes]] = []
        self.rcpt_replies: dict[str, str] = {}  # address -> reply to RCPT TO (e.g. "550 ...")
        self.data_replies: dict[str, str] = {}  # address -> reply to DATA, or "drop" to hang up instead
        self.sessions = 0

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.sessions += 1
        session.host_name = hostname
        return responses

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.rcpt_replies:
            return self.rcpt_replies[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        reply = next((self.data_replies[a] for a in envelope.rcpt_tos if a in self.data_replies), None)
        if reply == "drop":  # the connection dies after the message was sent, before the answer
            server.transport.close()
            return "250 OK"
        if reply:
            return reply
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp_settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_HOST_USER = ""
    settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 10
    settings.DEFAULT_FROM_EMAIL = "Acme <news@acme.example>"
    settings.PUBLIC_BASE_URL = "http://testserver"
    return settings


@pytest.fixture
def smtp_server(smtp_settings, caplog):
    caplog.set_level(logging.WARNING, logger="mail.log")  # aiosmtpd logs every command it reads
    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port())
    controller.start()
    smtp_settings.EMAIL_PORT = controller.port
    yield recorder
    controller.stop()


@pytest.fixture
def spring(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring", name="Spring")
    CampaignEmailFactory(
        campaign=campaign,
        position=1,
        delay_minutes=0,
        subject="Welcome, {{ name }}",
        body="Hi {{ name }} ({{ email }}).",
    )
    CampaignEmailFactory(campaign=campaign, position=2, delay_minutes=60, subject="Tips", body="More.")
    return campaign


def enroll_in_order(campaign, clock, *emails) -> list[Enrollment]:
    """One enrollment per address, a second apart, so the sender takes them in this order."""
    enrollments = []
    for email in emails:
        enrollments.append(campaign_lead_add(campaign=campaign, email=email, name="Zoë").enrollment)
        clock.shift(timedelta(seconds=1))
    return enrollments


def test_an_email_goes_through_smtp_with_its_headers_and_its_unsubscribe_link_works(acme, spring, clock, smtp_server):
    enrollment = campaign_lead_add(campaign=spring, email="zoe@example.com", name="Zoë").enrollment
    campaign_lead_add(campaign=spring, email="max@example.com", name="Max")
    assert run_pass().counts() == {"sent": 2, "deferred": 0, "skipped": 0}
    assert smtp_server.sessions == 1  # one connection for the batch

    mail_from, rcpt_tos, content = smtp_server.received[0]
    assert (mail_from, rcpt_tos) == ("news@acme.example", ["zoe@example.com"])
    message = message_from_bytes(content, policy=policy.default)
    send = EmailSend.objects.get(enrollment=enrollment)
    assert (send.status, send.error, send.to_email) == ("sent", "", "zoe@example.com")
    assert message["Subject"] == "Welcome, Zoë"
    assert message["From"] == "Acme <news@acme.example>"
    assert message["To"] == "zoe@example.com"
    assert message["Message-ID"] == send.message_id
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = message["List-Unsubscribe"].strip()  # folded onto its own line: longer than 78 characters
    assert link.startswith("<http://testserver/u/") and link.endswith(">")
    url = link[1:-1]
    assert message.get_content().replace("\r\n", "\n") == f"Hi Zoë (zoe@example.com).\n\n-- \nUnsubscribe: {url}\n"

    page = Client().get(url)
    assert page.status_code == 200 and "zoe@example.com" in page.content.decode()
    assert not Suppression.objects.exists()
    # A mail client's one-click unsubscribe (RFC 8058).
    clicked = Client(enforce_csrf_checks=True).post(
        url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert clicked.status_code == 200
    suppression = Suppression.objects.get()
    assert (suppression.workspace, suppression.email, suppression.reason) == (acme, "zoe@example.com", "unsubscribed")
    enrollment.refresh_from_db()
    assert enrollment.state == "stopped"

    clock.shift(timedelta(hours=1))
    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}  # only Max's second email
    assert [rcpt for _, rcpt, _ in smtp_server.received] == [
        ["zoe@example.com"],
        ["max@example.com"],
        ["max@example.com"],
    ]


def test_refused_recipients_fail_for_good_or_are_tried_again_later(acme, spring, clock, smtp_server):
    _ok, gone, later = enroll_in_order(spring, clock, "ok@example.com", "gone@example.com", "later@example.com")
    smtp_server.rcpt_replies = {
        "gone@example.com": "550 5.1.1 No such user",
        "later@example.com": "451 4.7.1 Try again later",
    }
    now = NOW + timedelta(seconds=3)

    result = run_pass()
    assert (result.counts(), result.failed, result.smtp_error) == ({"sent": 1, "deferred": 1, "skipped": 0}, 1, "")
    assert [rcpt for _, rcpt, _ in smtp_server.received] == [["ok@example.com"]]
    failed = EmailSend.objects.get(enrollment=gone)
    assert (failed.status, failed.error) == ("failed", "550 5.1.1 No such user")
    # A 5xx to RCPT TO is a hard bounce: the address goes on the list, as a reported bounce would.
    suppression = Suppression.objects.get()
    assert (suppression.workspace, suppression.email, suppression.reason) == (acme, "gone@example.com", "bounced")
    gone.refresh_from_db()
    assert (gone.state, gone.last_sent_position, gone.next_send_at) == ("stopped", 1, None)  # not retried
    assert gone.customer.activities.get(kind="suppressed").channel == "smtp"
    later.refresh_from_db()
    assert not EmailSend.objects.filter(enrollment=later).exists()
    assert (later.last_sent_position, later.last_sent_at, later.next_send_at) == (0, None, now + RETRY_DELAY)

    smtp_server.rcpt_replies = {}
    clock.shift(RETRY_DELAY)
    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}
    assert EmailSend.objects.get(enrollment=later).status == "sent"


def test_nothing_is_lost_while_the_smtp_server_is_down(acme, spring, clock, smtp_settings):
    smtp_settings.EMAIL_PORT = free_port()  # nobody listens there
    enrollment = campaign_lead_add(campaign=spring, email="zoe@example.com").enrollment

    result = run_pass()
    assert result.counts() == {"sent": 0, "deferred": 1, "skipped": 0}
    assert "ConnectionRefusedError" in result.smtp_error
    assert not EmailSend.objects.exists()
    enrollment.refresh_from_db()
    assert (enrollment.last_sent_position, enrollment.next_send_at) == (0, NOW)  # still due, as it was

    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=smtp_settings.EMAIL_PORT)
    controller.start()
    try:
        assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}
    finally:
        controller.stop()
    assert len(recorder.received) == 1


def test_a_server_closing_the_session_releases_the_rest_of_the_batch(acme, spring, clock, smtp_server):
    _first, second, third = enroll_in_order(spring, clock, "a@example.com", "b@example.com", "c@example.com")
    smtp_server.data_replies = {"b@example.com": "421 4.3.2 Service shutting down"}
    result = run_pass()
    assert (result.counts(), result.failed) == ({"sent": 1, "deferred": 2, "skipped": 0}, 0)
    assert result.smtp_error == "421 4.3.2 Service shutting down"
    assert list(EmailSend.objects.values_list("to_email", "status")) == [("a@example.com", "sent")]
    for enrollment, due in ((second, NOW + timedelta(seconds=1)), (third, NOW + timedelta(seconds=2))):
        enrollment.refresh_from_db()
        assert (enrollment.last_sent_position, enrollment.next_send_at) == (0, due)

    smtp_server.data_replies = {}
    assert run_pass().counts() == {"sent": 2, "deferred": 0, "skipped": 0}


def test_a_connection_lost_mid_message_never_resends_that_message(acme, spring, clock, smtp_server):
    _first, second, third = enroll_in_order(spring, clock, "a@example.com", "b@example.com", "c@example.com")
    smtp_server.data_replies = {"b@example.com": "drop"}
    result = run_pass()
    assert (result.counts(), result.failed) == ({"sent": 1, "deferred": 1, "skipped": 0}, 1)
    assert result.smtp_error
    unknown = EmailSend.objects.get(enrollment=second)
    assert unknown.status == "failed"
    assert unknown.error.startswith(
        "the connection failed during this message, which may or may not have been accepted"
    )
    assert not EmailSend.objects.filter(enrollment=third).exists()  # never handed over: released

    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}  # the third; the second stays as it is
    assert [rcpt for _, rcpt, _ in smtp_server.received] == [["a@example.com"], ["c@example.com"]]
    assert EmailSend.objects.filter(enrollment=second).count() == 1
