"""A broadcast's preview (sandboxed frames, a segment contact's or a recipient's data) and "Send me a test" through
real SMTP, recording nothing; and the broadcast emails a contact clicked, on their page."""

import html as html_lib
import re
from email import message_from_bytes, policy

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.broadcasts import broadcast_save, broadcast_schedule, broadcast_start
from campaigns.models import Broadcast, BroadcastLink, BroadcastRecipient
from campaigns.segments import segment_save
from campaigns.tracking import broadcast_links_ensure
from clicks.models import Click, Link
from customers.tags import contact_tags_add
from tests.campaigns.test_smtp import smtp_server, smtp_settings  # noqa: F401 (fixtures)
from tests.factories import ClickFactory, CustomerFactory

pytestmark = pytest.mark.django_db

MARKDOWN = "# Hello {{ name }}\n\nSee [the shop](https://shop.example/?a=1&b=2) <img src=x onerror=alert(1)>"


def vip(workspace, email: str, name: str = ""):
    contact = CustomerFactory(workspace=workspace, email=email, name=name)
    contact_tags_add(customer=contact, names=["vip"])
    return contact


@pytest.fixture
def broadcast(acme):
    segment = segment_save(workspace=acme, name="VIPs", filters={"tags": ["vip"]})
    return broadcast_save(workspace=acme, segment=segment, name="Spring", subject="Hi {{ name }}", markdown=MARKDOWN)


def preview_url(broadcast, **query) -> str:
    url = reverse("admin:campaigns_broadcast_preview", args=[broadcast.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def send_url(broadcast) -> str:
    return reverse("admin:campaigns_broadcast_test_send", args=[broadcast.pk])


def choices(page: str) -> list[str]:
    return re.findall(r'<option value="\d+"[^>]*>[^<]*&lt;([^&]+)&gt;</option>', page)


def test_the_broadcast_page_links_to_its_preview_with_a_segment_contacts_data(as_bob, acme, globex, broadcast):
    grace = vip(acme, "grace@example.com", "Grace <Hopper>")
    vip(acme, "ada@example.com", "Ada")
    CustomerFactory(workspace=acme, email="not-vip@example.com")
    stranger = vip(globex, "eve@example.com", "Eve")

    page = as_bob.get(reverse("admin:campaigns_broadcast_change", args=[broadcast.pk])).content.decode()
    assert f'href="{preview_url(broadcast)}" class="button lf-preview-link">Preview and test</a>' in page

    response = as_bob.get(preview_url(broadcast, contact=grace.pk))
    page = response.content.decode()
    assert response.status_code == 200
    assert choices(page) == ["ada@example.com", "grace@example.com"]  # the segment's, by email
    frames = re.findall(r'<iframe id="preview-(desktop|narrow)"[^>]*sandbox=""[^>]*srcdoc="([^"]*)"', page)
    assert [name for name, _ in frames] == ["desktop", "narrow"]
    document = html_lib.unescape(frames[0][1])
    assert document.startswith("<!DOCTYPE html>") and "<h1>Hello Grace &lt;Hopper&gt;</h1>" in document
    assert '<a href="https://shop.example/?a=1&amp;b=2" rel="noopener noreferrer">the shop</a>' in document
    assert "onerror" not in document and "/u/" in document
    assert 'id="preview-subject">Hi Grace &lt;Hopper&gt;<' in page
    assert "Broadcasts</a>" in page and "Preview of Spring" in page

    # Another workspace's contact is not shown: the sample instead.
    sample = html_lib.unescape(as_bob.get(preview_url(broadcast, contact=stranger.pk)).content.decode())
    assert "Hello Ada Lovelace" in sample and "eve@example.com" not in sample


def test_once_started_the_picker_offers_its_recipients(as_bob, acme, broadcast):
    grace = vip(acme, "grace@example.com", "Grace")
    broadcast_start(broadcast=broadcast_schedule(broadcast=broadcast), now=timezone.now())
    vip(acme, "late@example.com")  # joined the segment after the start: not a recipient
    grace.tags.all().delete()  # left the segment after the start: still a recipient

    page = as_bob.get(preview_url(broadcast)).content.decode()
    assert choices(page) == ["grace@example.com"]
    page = as_bob.get(reverse("admin:campaigns_broadcast_change", args=[broadcast.pk])).content.decode()
    assert "Preview and test</a>" in page


def test_another_workspaces_broadcast_is_not_found(as_charlie, broadcast, smtp_server):
    assert as_charlie.get(preview_url(broadcast)).status_code == 404
    assert as_charlie.post(send_url(broadcast)).status_code == 404
    assert smtp_server.received == []


def test_send_me_a_test_mails_the_user_through_smtp_and_records_nothing(as_bob, acme, broadcast, smtp_server, settings):
    grace = vip(acme, "grace@example.com", "Grace")
    response = as_bob.post(send_url(broadcast), {"contact": grace.pk})
    assert response.status_code == 302 and response["Location"] == preview_url(broadcast, contact=grace.pk)
    assert "Test sent to bob@example.com." in as_bob.get(response["Location"]).content.decode()

    [(_, rcpt_tos, content)] = smtp_server.received
    assert rcpt_tos == ["bob@example.com"]
    message = message_from_bytes(content, policy=policy.default)
    assert message["Subject"] == "[Test] Hi Grace" and message["X-Lftrack-Test"] == "yes"
    html = message.get_body(preferencelist=("html",)).get_content()
    assert "<h1>Hello Grace</h1>" in html and 'href="https://shop.example/?a=1&amp;b=2"' in html  # not tracked
    assert "Hello Grace" in message.get_body(preferencelist=("plain",)).get_content()
    assert not BroadcastRecipient.objects.exists() and not BroadcastLink.objects.exists()
    assert not Link.objects.exists() and not Click.objects.exists()
    assert Broadcast.objects.get(pk=broadcast.pk).status == "draft"

    settings.RATELIMIT_TEST_SENDS = "1/m"  # a new rate starts a new count: one more, then refused
    assert "Test sent to" in as_bob.post(send_url(broadcast), follow=True).content.decode()
    limited = as_bob.post(send_url(broadcast), follow=True)
    assert "Too many tests in a minute" in limited.content.decode()
    assert len(smtp_server.received) == 2
    assert as_bob.get(send_url(broadcast)).status_code == 403  # a test is sent by POST only


def test_a_test_of_a_sent_broadcast_moves_none_of_its_numbers(as_alice, acme, broadcast, smtp_server):
    grace = vip(acme, "grace@example.com", "Grace")
    broadcast_start(broadcast=broadcast_schedule(broadcast=broadcast), now=timezone.now())
    broadcast_links_ensure(broadcast)
    before = list(BroadcastRecipient.objects.values_list("pk", "status", "message_id", "sent_at"))
    page = reverse("admin:campaigns_broadcast_change", args=[broadcast.pk])
    numbers = re.search(r"\d+ unique clicks[^<]*", as_alice.get(page).content.decode()).group(0)

    assert (
        "Test sent to alice@" in as_alice.post(send_url(broadcast), {"contact": grace.pk}, follow=True).content.decode()
    )
    assert len(smtp_server.received) == 1
    assert list(BroadcastRecipient.objects.values_list("pk", "status", "message_id", "sent_at")) == before
    assert BroadcastLink.objects.count() == 1 and Link.objects.count() == 1 and not Click.objects.exists()
    assert re.search(r"\d+ unique clicks[^<]*", as_alice.get(page).content.decode()).group(0) == numbers


def test_a_refused_test_says_why(as_bob, broadcast, smtp_server):
    smtp_server.rcpt_replies = {"bob@example.com": "550 5.1.1 No such user"}
    response = as_bob.post(send_url(broadcast), follow=True)
    assert "Test not sent: 550 5.1.1 No such user" in response.content.decode()


def test_the_contact_page_shows_the_broadcasts_they_clicked(as_bob, acme, broadcast):
    grace = vip(acme, "grace@example.com", "Grace")
    ada = vip(acme, "ada@example.com", "Ada")
    broadcast_start(broadcast=broadcast_schedule(broadcast=broadcast), now=timezone.now())
    BroadcastRecipient.objects.update(status="sent", to_email=grace.email, sent_at=timezone.now())
    [key] = broadcast_links_ensure(broadcast).values()
    link = Link.objects.get(key=key)
    mine = BroadcastRecipient.objects.get(customer=grace)
    theirs = BroadcastRecipient.objects.get(customer=ada)
    ClickFactory(link=link, broadcast_recipient_id=mine.pk)
    ClickFactory(link=link, broadcast_recipient_id=mine.pk, is_bot=True)  # a link-preview fetcher: not shown
    ClickFactory(link=link, broadcast_recipient_id=theirs.pk)

    page = as_bob.get(reverse("admin:customers_customer_change", args=[grace.pk])).content.decode()
    emails = page.split('id="contact-emails"')[1].split('id="contact-enrollments"')[0]
    url = reverse("admin:campaigns_broadcast_change", args=[broadcast.pk])
    assert f'broadcast <a href="{url}">Spring</a>' in emails and "Hi Grace" in emails
    [cell] = re.findall(r'<td class="email-clicked">(.*?)</td>', emails, re.S)
    assert cell.count("shop.example/?a=1&amp;b=2") == 1
    assert f'Emailed broadcast <a href="{url}">Spring</a>' in page  # and on the timeline

    page = as_bob.get(reverse("admin:customers_customer_change", args=[ada.pk])).content.decode()
    [cell] = re.findall(r'<td class="email-clicked">(.*?)</td>', page, re.S)
    assert cell.count("shop.example") == 1  # her own click only
