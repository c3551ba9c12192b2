"""HTML steps in the back office: the preview (sandboxed frames, a contact's data), "Send me a test" through real SMTP,
the per-step click and conversion numbers on the campaign page, and the emails a contact clicked."""

import html as html_lib
import re
from email import message_from_bytes, policy

import pytest
from django.urls import reverse

from campaigns.models import EmailLink, EmailSend
from campaigns.services import campaign_email_add
from clicks.models import Click
from tests.campaigns.test_smtp import smtp_server, smtp_settings  # noqa: F401 (fixtures)
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    CustomerFactory,
    EmailSendFactory,
    EnrollmentFactory,
    LinkFactory,
    RefundFactory,
)

pytestmark = pytest.mark.django_db

MARKDOWN = "# Hello {{ name }}\n\nSee [the shop](https://shop.example/?a=1&b=2) <img src=x onerror=alert(1)>"


@pytest.fixture
def step(acme):
    campaign = CampaignFactory(workspace=acme, slug="html", name="Html")
    return campaign_email_add(campaign=campaign, subject="Hi {{ name }}", markdown=MARKDOWN, delay_minutes=0)


def preview_url(step, **query) -> str:
    url = reverse("admin:campaigns_campaign_preview", args=[step.campaign_id, step.position])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_the_preview_shows_the_layout_in_sandboxed_frames_with_a_chosen_contacts_data(as_bob, acme, globex, step):
    grace = CustomerFactory(workspace=acme, email="grace@example.com", name="Grace <Hopper>")
    EnrollmentFactory(campaign=step.campaign, customer=grace)
    stranger = CustomerFactory(workspace=globex, email="eve@example.com", name="Eve")

    page = as_bob.get(preview_url(step, contact=grace.pk)).content.decode()
    frames = re.findall(r'<iframe id="preview-(desktop|narrow)"[^>]*sandbox=""[^>]*srcdoc="([^"]*)"', page)
    assert [name for name, _ in frames] == ["desktop", "narrow"]
    document = html_lib.unescape(frames[0][1])
    assert document.startswith("<!DOCTYPE html>") and "<h1>Hello Grace &lt;Hopper&gt;</h1>" in document
    assert '<a href="https://shop.example/?a=1&amp;b=2" rel="noopener noreferrer">the shop</a>' in document
    assert "onerror" not in document and "/u/" in document  # sanitized; the layout's unsubscribe link
    assert 'id="preview-subject">Hi Grace &lt;Hopper&gt;<' in page
    assert "Hello Grace &lt;Hopper&gt;\n\nSee the shop (https://shop.example/?a=1&amp;b=2)" in page
    assert "<script" not in document.lower()

    # Another workspace's contact is not shown: the sample instead.
    sample = html_lib.unescape(as_bob.get(preview_url(step, contact=stranger.pk)).content.decode())
    assert "Hello Ada Lovelace" in sample and "eve@example.com" not in sample


def test_another_workspaces_step_is_not_found(as_charlie, step):
    assert as_charlie.get(preview_url(step)).status_code in (302, 404)
    test = reverse("admin:campaigns_campaign_test_send", args=[step.campaign_id, step.position])
    assert as_charlie.post(test).status_code in (302, 404)


def test_send_me_a_test_goes_through_smtp_to_the_user_marked_and_records_nothing(
    as_bob, bob, acme, step, smtp_server, settings
):
    grace = CustomerFactory(workspace=acme, email="grace@example.com", name="Grace")
    test = reverse("admin:campaigns_campaign_test_send", args=[step.campaign_id, step.position])
    response = as_bob.post(test, {"contact": grace.pk}, follow=True)
    assert "Test sent to bob@example.com." in response.content.decode()

    [(_, rcpt_tos, content)] = smtp_server.received
    assert rcpt_tos == ["bob@example.com"]
    message = message_from_bytes(content, policy=policy.default)
    assert message["Subject"] == "[Test] Hi Grace" and message["X-Lftrack-Test"] == "yes"
    assert message["List-Unsubscribe"].strip().startswith("<http://testserver/u/")
    html = message.get_body(preferencelist=("html",)).get_content()
    text = message.get_body(preferencelist=("plain",)).get_content()
    assert "<h1>Hello Grace</h1>" in html and "Hello Grace" in text
    assert 'href="https://shop.example/?a=1&amp;b=2"' in html  # a test's links are not tracked
    assert not EmailSend.objects.exists() and not EmailLink.objects.exists() and not Click.objects.exists()

    settings.RATELIMIT_TEST_SENDS = "1/m"  # a new rate starts a new count: one more, then refused
    assert "Test sent to" in as_bob.post(test, {"contact": grace.pk}, follow=True).content.decode()
    limited = as_bob.post(test, {"contact": grace.pk}, follow=True)
    assert "Too many tests in a minute" in limited.content.decode()
    assert len(smtp_server.received) == 2


def test_a_refused_test_says_why(as_bob, step, smtp_server):
    smtp_server.rcpt_replies = {"bob@example.com": "550 5.1.1 No such user"}
    test = reverse("admin:campaigns_campaign_test_send", args=[step.campaign_id, step.position])
    response = as_bob.post(test, follow=True)
    assert "Test not sent: 550 5.1.1 No such user" in response.content.decode()


def test_the_campaign_page_shows_clicks_and_conversions_per_step(as_bob, acme, step):
    link = LinkFactory(post__workspace=acme)
    EmailLink.objects.create(workspace=acme, campaign_email=step, link=link, destination=link.destination)
    sends = [
        EmailSendFactory(enrollment=EnrollmentFactory(campaign=step.campaign), campaign_email=step) for _ in range(4)
    ]
    clicked, twice, bot_only = sends[0], sends[1], sends[2]
    first = ClickFactory(link=link, email_send_id=clicked.pk)
    ClickFactory(link=link, email_send_id=twice.pk)
    ClickFactory(link=link, email_send_id=twice.pk)
    ClickFactory(link=link, email_send_id=bot_only.pk, is_bot=True)
    ConversionEventFactory(click=first, event="lead")
    sale = ConversionEventFactory(click=first, event="sale", value_cents=10000, currency="EUR")
    RefundFactory(conversion=sale, amount_cents=2500)
    ConversionEventFactory(click=ClickFactory(link=link), event="sale", value_cents=999)  # no token: not the email's
    other = LinkFactory(post__workspace=acme)  # another link's click naming a send (impossible with a real token)
    ConversionEventFactory(click=ClickFactory(link=other, email_send_id=sends[3].pk), event="lead")

    page = as_bob.get(reverse("admin:campaigns_campaign_change", args=[step.campaign_id])).content.decode()
    row = re.search(r'<tr class="step-numbers-row" data-position="1">(.*?)</tr>', page, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
    assert cells == ["#1 Hi ‹name› (HTML)", "4", "2", "50.0%", "1", "1", "75.00 EUR"]


def test_the_contact_page_shows_which_email_they_clicked(as_bob, acme, step):
    grace = CustomerFactory(workspace=acme, email="grace@example.com")
    send = EmailSendFactory(enrollment=EnrollmentFactory(campaign=step.campaign, customer=grace), campaign_email=step)
    EmailSendFactory(enrollment=send.enrollment, campaign_email=step, position=2)
    ClickFactory(
        link=LinkFactory(post__workspace=acme, destination="https://shop.example/pricing"), email_send_id=send.pk
    )
    page = as_bob.get(reverse("admin:customers_customer_change", args=[grace.pk])).content.decode()
    cells = re.findall(r'<td class="email-clicked">(.*?)</td>', page, re.S)
    assert len(cells) == 2
    assert sorted("shop.example/pricing" in cell for cell in cells) == [False, True]
