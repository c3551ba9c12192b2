"""Broadcasts through real SMTP: exactly the segment, once each, recipients fixed at the start, suppression and
unsubscribe respected, tracked links credited to the broadcast, two senders at once, complaints and daily limits."""

import threading
from email import message_from_bytes, policy
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import close_old_connections
from django.test import Client
from django.utils import timezone

from campaigns.broadcasts import (
    broadcast_cancel,
    broadcast_pause,
    broadcast_progress,
    broadcast_resume,
    broadcast_save,
    broadcast_schedule,
    broadcast_start,
)
from campaigns.complaints import email_event_record
from campaigns.models import Broadcast, BroadcastLink, BroadcastRecipient, Suppression
from campaigns.segments import segment_save
from campaigns.sending import run_pass
from campaigns.services import suppression_add
from campaigns.unsubscribe import unsubscribe_url
from clicks.models import Click
from conversions.step_numbers import broadcast_numbers
from customers.tags import contact_tags_add
from lftrack.errors import Unprocessable
from tests.campaigns.test_smtp import smtp_server, smtp_settings  # noqa: F401 (fixtures)
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

NEWS = """# Spring news, {{ name }}

Our [new collection](https://shop.example/spring?utm_source=mail) is out.
"""


def recipients_of(smtp_server) -> list[str]:
    return sorted(rcpt for _, rcpts, _ in smtp_server.received for rcpt in rcpts)


def parts(content: bytes):
    message = message_from_bytes(content, policy=policy.default)
    text = message.get_body(preferencelist=("plain",)).get_content()
    html = message.get_body(preferencelist=("html",)).get_content()
    return message, text, html


def tagged(workspace, count: int, *, tag: str = "vip", prefix: str = "p") -> list:
    people = [CustomerFactory(workspace=workspace, email=f"{prefix}{n}@example.com") for n in range(count)]
    for person in people:
        contact_tags_add(customer=person, names=[tag])
    return people


def a_broadcast(workspace, *, tag: str = "vip", name: str = "Spring news") -> Broadcast:
    segment = segment_save(workspace=workspace, name=f"Tagged {tag}", filters={"tags": [tag]})
    broadcast = broadcast_save(
        workspace=workspace, segment=segment, name=name, subject="Spring, {{ name }}", markdown=NEWS
    )
    return broadcast_schedule(broadcast=broadcast)


def test_a_broadcast_mails_exactly_its_segment_once_each_in_html_with_unsubscribe(acme, globex, smtp_server):
    tagged(acme, 5)
    CustomerFactory(workspace=acme, email="other@example.com")  # not tagged
    tagged(globex, 2, prefix="g")  # another workspace's, same tag
    broadcast = a_broadcast(acme)

    result = run_pass()
    assert (result.sent, result.broadcast) == (5, 5)
    assert recipients_of(smtp_server) == [f"p{n}@example.com" for n in range(5)]
    message, text, html = parts(smtp_server.received[0][2])
    assert message["Subject"].startswith("Spring, Person")
    assert message["List-Unsubscribe"].strip().startswith("<http://testserver/u/")
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert "Unsubscribe" in text and "http://testserver/u/" in html
    assert "http://testserver/l/" in html and "http://testserver/l/" in text

    broadcast.refresh_from_db()
    assert (broadcast.status, broadcast.total) == ("sent", 5)
    assert broadcast_progress(broadcast_ids=[broadcast.pk])[broadcast.pk] == {
        "total": 5,
        "sent": 5,
        "failed": 0,
        "skipped": 0,
        "waiting": 0,
    }
    assert run_pass().idle  # nothing twice
    assert len(smtp_server.received) == 5


def test_a_contact_added_after_the_start_is_not_mailed(acme, smtp_server):
    tagged(acme, 3)
    broadcast = a_broadcast(acme)
    assert broadcast_start(broadcast=broadcast, now=timezone.now()) == 3
    tagged(acme, 1, prefix="late")  # joins the segment after its recipients were fixed
    assert broadcast_start(broadcast=broadcast, now=timezone.now()) == 0  # starts once

    run_pass()
    assert recipients_of(smtp_server) == ["p0@example.com", "p1@example.com", "p2@example.com"]
    assert BroadcastRecipient.objects.filter(broadcast=broadcast).count() == 3


def test_suppressed_and_unsubscribed_addresses_are_skipped(acme, smtp_server):
    people = tagged(acme, 3)
    broadcast = a_broadcast(acme)
    suppression_add(workspace=acme, email="P0@example.com", reason=Suppression.Reason.BOUNCED, channel="manual")
    broadcast_start(broadcast=broadcast, now=timezone.now())
    # Unsubscribed after the start, through the link of an earlier email: checked when the message goes.
    token_url = urlsplit(unsubscribe_url(workspace_id=acme.pk, email=people[1].email))
    assert Client().post(token_url.path).status_code in (200, 302)

    result = run_pass()
    assert recipients_of(smtp_server) == ["p2@example.com"]
    assert (result.sent, result.skipped) == (1, 2)
    progress = broadcast_progress(broadcast_ids=[broadcast.pk])[broadcast.pk]
    assert (progress["sent"], progress["skipped"], progress["waiting"]) == (1, 2, 0)


def test_a_tracked_link_credits_the_click_and_its_lead_to_the_broadcast(acme, acme_token, api, smtp_server):
    tagged(acme, 2)
    broadcast = a_broadcast(acme)
    run_pass()
    _, _, html = parts(smtp_server.received[0][2])
    tracked = next(h.replace("&amp;", "&") for h in html.split('href="')[1:] if h.startswith("http://testserver/l/"))
    tracked = tracked.split('"')[0]

    response = Client().get(tracked, HTTP_USER_AGENT="Mozilla/5.0 (Macintosh) Safari/605")
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert (location.netloc, location.path) == ("shop.example", "/spring")
    click = Click.objects.get(click_id=parse_qs(location.query)["lf_cid"][0])
    recipient = BroadcastRecipient.objects.get(pk=click.broadcast_recipient_id)
    assert recipient.broadcast == broadcast and click.email_send_id is None
    assert recipient.to_email == smtp_server.received[0][1][0]
    assert BroadcastLink.objects.get(broadcast=broadcast).link_id == click.link_id

    lead = api.post("/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=acme_token)
    assert lead.status_code == 201, lead.content
    sale = api.post(
        "/api/v1/conversions",
        {"event": "sale", "click_id": click.click_id, "value_cents": 2500, "currency": "EUR"},
        token=acme_token,
    )
    assert sale.status_code == 201, sale.content
    numbers = broadcast_numbers(broadcasts=[broadcast], sent={broadcast.pk: 2})[broadcast.pk]
    assert numbers == {
        "sent": 2,
        "clicks": 1,
        "click_rate": 50.0,
        "leads": 1,
        "sales": 1,
        "revenue": [{"currency": "EUR", "gross_cents": 2500, "refunded_cents": 0, "net_cents": 2500}],
    }


def test_a_broadcast_whose_links_cannot_be_made_goes_out_with_its_links_as_written(
    acme, smtp_server, monkeypatch, caplog
):
    def broken(broadcast):
        raise RuntimeError("no links today")

    monkeypatch.setattr("campaigns.outgoing.broadcast_links_ensure", broken)
    tagged(acme, 2)
    broadcast = a_broadcast(acme)
    assert run_pass().sent == 2
    _, text, html = parts(smtp_server.received[0][2])
    assert "https://shop.example/spring?utm_source=mail" in html and "https://shop.example/spring" in text
    assert "http://testserver/l/" not in html + text
    (logged,) = [record for record in caplog.records if record.getMessage() == "links not tracked"]
    assert (logged.broadcast_id, logged.error) == (broadcast.pk, "RuntimeError")


def test_a_forged_or_moved_broadcast_token_records_an_ordinary_click(acme, smtp_server):
    tagged(acme, 1)
    a_broadcast(acme)
    run_pass()
    _, _, html = parts(smtp_server.received[0][2])
    tracked = next(h for h in html.split('href="')[1:] if h.startswith("http://testserver/l/")).split('"')[0]
    tracked = tracked.replace("&amp;", "&")
    path, token = tracked.split("?lf_e=")
    recipient_id = int(token.split(":")[0][1:])
    forged = f"{path}?lf_e=b{recipient_id + 1}:{token.split(':', 1)[1]}"
    response = Client().get(forged, HTTP_USER_AGENT="Mozilla/5.0 (Macintosh) Safari/605")
    assert response.status_code == 302
    click = Click.objects.get(click_id=parse_qs(urlsplit(response["Location"]).query)["lf_cid"][0])
    assert (click.broadcast_recipient_id, click.email_send_id) == (None, None)


def test_the_workspaces_daily_limit_holds_the_rest_for_tomorrow(acme, smtp_server, time_machine):
    acme.daily_send_limit = 3
    acme.save()
    time_machine.move_to("2026-03-02 09:00:00+00:00", tick=False)
    tagged(acme, 5)
    broadcast = a_broadcast(acme)
    run_pass()
    assert len(smtp_server.received) == 3
    assert broadcast_progress(broadcast_ids=[broadcast.pk])[broadcast.pk]["waiting"] == 2
    time_machine.move_to("2026-03-03 00:00:01+00:00", tick=False)
    run_pass()
    assert len(smtp_server.received) == 5 and len(set(recipients_of(smtp_server))) == 5


def test_complaints_pause_the_broadcast_and_resuming_sends_the_rest(acme, smtp_server, settings):
    settings.COMPLAINT_PAUSE_MIN_SENDS = 1000
    tagged(acme, 150)
    broadcast = a_broadcast(acme)
    run_pass(batch_size=100, should_stop=lambda: True)  # one sequence and one broadcast batch
    first = BroadcastRecipient.objects.filter(broadcast=broadcast, status="sent").first()
    email_event_record(workspace=acme, event_type="complaint", email=first.to_email, message_ids=(first.message_id,))
    broadcast.refresh_from_db()
    assert broadcast.status == "paused"
    assert run_pass().sent == 0
    assert broadcast_resume(broadcast=broadcast)
    run_pass()
    assert len(smtp_server.received) == 150 and len(set(recipients_of(smtp_server))) == 150


def test_a_started_broadcast_cannot_be_edited_and_a_cancelled_one_mails_no_more(acme, smtp_server):
    tagged(acme, 2)
    broadcast = a_broadcast(acme)
    broadcast_start(broadcast=broadcast, now=timezone.now())
    with pytest.raises(Unprocessable, match="a broadcast that started cannot be changed"):
        broadcast_save(workspace=acme, segment=broadcast.segment, name="x", subject="y", body="z", broadcast=broadcast)
    assert broadcast_pause(broadcast=broadcast)
    assert broadcast_cancel(broadcast=broadcast)
    assert run_pass().sent == 0 and smtp_server.received == []
    assert broadcast_progress(broadcast_ids=[broadcast.pk])[broadcast.pk]["skipped"] == 2


def test_hostile_markdown_is_sanitized_as_a_steps(acme):
    segment = segment_save(workspace=acme, name="All", filters={})
    broadcast = broadcast_save(
        workspace=acme,
        segment=segment,
        name="x",
        subject="y",
        markdown='Hi <script>alert(1)</script> <a href="javascript:alert(2)" onclick="x()">js</a>',
    )
    assert "<script" not in broadcast.html and "javascript:" not in broadcast.html and "onclick" not in broadcast.html


@pytest.mark.django_db(transaction=True)
def test_two_senders_at_once_mail_each_recipient_exactly_once(acme, globex, smtp_server):
    tagged(acme, 120)
    tagged(globex, 40, prefix="g")
    a_broadcast(acme)
    a_broadcast(globex)
    barrier = threading.Barrier(2)
    results = []

    def sender():
        try:
            barrier.wait()
            results.append(run_pass(batch_size=20))
        finally:
            close_old_connections()

    threads = [threading.Thread(target=sender) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    run_pass()  # anything one of them left for the next pass
    received = recipients_of(smtp_server)
    assert len(received) == 160 and len(set(received)) == 160
    assert set(BroadcastRecipient.objects.values_list("status", flat=True)) == {"sent"}
    assert sum(result.broadcast for result in results) >= 1
