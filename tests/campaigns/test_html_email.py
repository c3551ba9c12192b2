"""HTML steps through real SMTP: the parts, the sanitizer, the layout, and every link tracked to its step and contact."""

import re
from email import message_from_bytes, policy
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from campaigns.models import CampaignEmail, EmailLink, EmailSend
from campaigns.sending import run_pass
from campaigns.services import campaign_email_add, campaign_lead_add
from campaigns.steps import campaign_email_edit
from clicks.links import link_delete
from clicks.models import Click
from conversions.step_numbers import campaign_step_numbers
from lftrack.errors import Unprocessable
from rollups.selectors import campaign_step_sends
from tests.campaigns.conftest import NOW
from tests.campaigns.test_smtp import smtp_server, smtp_settings  # noqa: F401 (fixtures)
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db

WELCOME = """# Welcome, {{ name }}

Thanks for joining with **{{ email }}**. Read [the guide](https://shop.example/guide?utm_source=mail&a=1#start)
and [our pricing](https://shop.example/pricing).

- one
- two
"""

HOSTILE = """Hello {{ name }}

<script>alert('xss')</script>
<img src="x" onerror="alert(1)"> <a href="javascript:alert(2)" onclick="steal()">js link</a>
<a href="data:text/html;base64,PHNjcmlwdD4=">data link</a> <img src="data:image/png;base64,iVBORw0KGgo=">
<style>@import url(https://evil.example/x.css); p { color: red }</style>
<link rel="stylesheet" href="https://evil.example/y.css">
<p style="background:url(https://evil.example/track.gif)">styled</p>
<iframe src="https://evil.example/"></iframe><form action="https://evil.example/"><input name="p"></form>
<a href="https://shop.example/ok">fine link</a>
"""


@pytest.fixture
def html_campaign(acme):
    acme.email_logo_url = "https://cdn.acme.example/logo.png"
    acme.email_brand_color = "#ff5500"
    acme.postal_address = "Acme Inc.\n1 Main Street, Springfield"
    acme.save()
    campaign = CampaignFactory(workspace=acme, slug="html", name="Html")
    campaign_email_add(campaign=campaign, subject="Welcome, {{ name }}", markdown=WELCOME, delay_minutes=0)
    return campaign


def parts(content: bytes):
    message = message_from_bytes(content, policy=policy.default)
    text = message.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n")
    html = message.get_body(preferencelist=("html",)).get_content().replace("\r\n", "\n")
    return message, text, html


def hrefs(html: str) -> list[str]:
    return [href.replace("&amp;", "&") for href in re.findall(r'href="([^"]+)"', html)]


def test_an_html_step_arrives_as_text_and_html_in_the_workspace_layout(acme, html_campaign, clock, smtp_server):
    enrollment = campaign_lead_add(campaign=html_campaign, email="zoe@example.com", name="Zoë <b>&").enrollment
    assert run_pass().counts() == {"sent": 1, "deferred": 0, "skipped": 0}
    message, text, html = parts(smtp_server.received[0][2])
    send = EmailSend.objects.get(enrollment=enrollment)

    assert message["Subject"] == "Welcome, Zoë <b>&"
    assert message.get_content_type() == "multipart/alternative"
    unsubscribe = message["List-Unsubscribe"].strip()[1:-1]
    assert unsubscribe.startswith("http://testserver/u/")
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    # HTML: the layout (logo, colour, postal address, unsubscribe link), the name escaped, the links tracked.
    assert '<html lang="en"' in html and 'name="viewport"' in html
    assert '<img src="https://cdn.acme.example/logo.png" alt="Acme"' in html
    assert "#ff5500" in html
    assert "Acme Inc.<br>1 Main Street, Springfield" in html
    assert f'<a href="{unsubscribe}"' in html
    assert "<h1>Welcome, Zoë &lt;b&gt;&amp;</h1>" in html
    assert "<strong>zoe@example.com</strong>" in html and "<li>one</li>" in html
    tracked = [href for href in hrefs(html) if href.startswith("http://testserver/l/")]
    assert len(tracked) == 2
    assert "shop.example" not in html  # no destination goes out unwrapped

    # Text: generated from the HTML, links as "label (url)" through the same tracked links, the unsubscribe footer.
    assert text.startswith("Welcome, Zoë <b>&\n\nThanks for joining with zoe@example.com. Read the guide (")
    assert "- one\n- two" in text
    assert text.rstrip().endswith(f"-- \nUnsubscribe: {unsubscribe}")
    text_links = re.findall(r"http://testserver/l/\S+?(?=\))", text)
    assert text_links == tracked

    # One link per destination of the step, in a post named after the email.
    links = {row.destination: row.link for row in EmailLink.objects.filter(campaign_email__campaign=html_campaign)}
    assert set(links) == {"https://shop.example/guide?utm_source=mail&a=1#start", "https://shop.example/pricing"}
    assert {link.post.title for link in links.values()} == {"Email: Html #1"}
    key, query = urlsplit(tracked[0]).path.split("/")[-1], parse_qs(urlsplit(tracked[0]).query)
    assert key == links["https://shop.example/guide?utm_source=mail&a=1#start"].key
    assert query["lf_e"][0].startswith(f"{send.pk}:")


def test_hostile_markdown_is_sanitized_on_save_and_in_the_received_email(acme, clock, smtp_server):
    campaign = CampaignFactory(workspace=acme, slug="hostile")
    step = campaign_email_add(campaign=campaign, subject="Hi", markdown=HOSTILE, delay_minutes=0)
    for stored in (step.html, CampaignEmail.objects.get(pk=step.pk).html):
        lowered = stored.lower()
        for bad in (
            "<script",
            "alert(",
            "onerror",
            "onclick",
            "javascript:",
            "data:",
            "<style",
            "@import",
            "<link",
            "style=",
            "evil.example",
            "<iframe",
            "<form",
            "<input",
        ):
            assert bad not in lowered, bad
    assert '<a href="https://shop.example/ok" rel="noopener noreferrer">fine link</a>' in step.html

    campaign_lead_add(campaign=campaign, email="max@example.com", name="<script>alert(3)</script>")
    run_pass()
    _, text, html = parts(smtp_server.received[0][2])
    content = html.split('class="lf-pad lf-content"')[1].split(">", 1)[1].split("</td>")[0].lower()
    for bad in ("<script", "onerror", "onclick", "javascript:", "data:", "@import", "<link", "style=", "evil.example"):
        assert bad not in content, bad
    assert "hello &lt;script&gt;alert(3)&lt;/script&gt;" in content  # the contact's name is text, not markup
    assert "<link" not in html.lower() and "@import" not in html.lower()  # nor in the layout around it
    assert "javascript:" not in text and "evil.example" not in text and "data:" not in text
    assert "fine link (http://testserver/l/" in text


def test_a_markdown_step_is_edited_and_its_bad_input_refused(acme):
    campaign = CampaignFactory(workspace=acme, slug="edit")
    step = campaign_email_add(campaign=campaign, subject="Hi", body="plain", delay_minutes=0)
    assert (step.markdown, step.html) == ("", "")
    campaign_email_edit(campaign_email=step, subject="New", body="", markdown="Go to *the shop*: https://a.example")
    step.refresh_from_db()
    assert step.html == "<p>Go to <em>the shop</em>: https://a.example</p>"
    assert step.body == "Go to the shop: https://a.example"
    with pytest.raises(Unprocessable, match="markdown has no content once sanitized"):
        campaign_email_edit(campaign_email=step, subject="New", body="", markdown="<script>x</script>")
    with pytest.raises(Unprocessable, match="markdown is too long"):
        campaign_email_edit(campaign_email=step, subject="New", body="", markdown="a" * 100_001)
    step.refresh_from_db()
    assert step.subject == "New"  # a refused edit changed nothing


def test_a_click_in_the_email_is_recorded_with_its_step_and_contact_and_credits_the_lead(
    acme, acme_token, html_campaign, clock, smtp_server, api
):
    enrollment = campaign_lead_add(campaign=html_campaign, email="zoe@example.com", name="Zoë").enrollment
    run_pass()
    _, _, html = parts(smtp_server.received[0][2])
    guide = next(href for href in hrefs(html) if href.startswith("http://testserver/l/"))

    response = Client().get(guide, HTTP_USER_AGENT="Mozilla/5.0 (Macintosh) Safari/605")
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert (location.netloc, location.path, location.fragment) == ("shop.example", "/guide", "start")
    params = parse_qs(location.query)
    assert params["utm_source"] == ["mail"] and "lf_e" not in params
    click = Click.objects.get(click_id=params["lf_cid"][0])
    send = EmailSend.objects.get(pk=click.email_send_id)
    assert (send.enrollment, send.campaign_email.position, send.enrollment.customer.email) == (
        enrollment,
        1,
        "zoe@example.com",
    )

    lead = api.post("/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=acme_token)
    assert lead.status_code == 201, lead.content
    steps = campaign_step_sends(campaign_id=html_campaign.pk, since=NOW.date())["steps"]
    sent = {position: counts["sent"] for position, counts in steps.items()}
    steps = list(CampaignEmail.objects.filter(campaign=html_campaign))
    numbers = campaign_step_numbers(steps=steps, sent=sent)[send.campaign_email_id]
    assert (numbers["sent"], numbers["clicks"], numbers["leads"], numbers["sales"]) == (1, 1, 1, 0)


def test_a_forged_or_altered_tracked_link_records_an_ordinary_click(acme, globex, html_campaign, clock, smtp_server):
    enrollment = campaign_lead_add(campaign=html_campaign, email="zoe@example.com", name="Zoë").enrollment
    run_pass()
    _, _, html = parts(smtp_server.received[0][2])
    first, second = [href for href in hrefs(html) if href.startswith("http://testserver/l/")]
    send_id = EmailSend.objects.get(enrollment=enrollment).pk
    token = parse_qs(urlsplit(first).query)["lf_e"][0]
    base, key_path = first.split("?")[0], urlsplit(first).path
    other = urlsplit(second).path

    attempts = [
        f"{base}?lf_e={send_id + 1}:{token.split(':', 1)[1]}",  # another send's id with this signature
        f"{base}?lf_e={send_id}:{'A' * 43}",  # a made-up signature
        f"{base}?lf_e={send_id}",  # unsigned
        f"http://testserver{other}?lf_e={token}",  # a good token moved to another link
        f"{base}?lf_e={token}x",
        f"{base}?lf_e={token}{'A' * 100}",  # over 100 characters: not even checked
        f"{base}?lf_e=",
    ]
    for url in attempts:
        response = Client().get(url)
        assert response.status_code == 302 and "lf_cid=" in response["Location"]
    assert Client().get(f"{base}?lf_e=%00{token}").status_code == 400  # a NUL byte: refused before the redirect
    clicks = Click.objects.order_by("pk")
    assert clicks.count() == len(attempts)
    assert not clicks.filter(email_send_id__isnull=False).exists()

    assert Client().get(f"http://testserver{key_path}?lf_e={token}").status_code == 302
    assert Click.objects.filter(email_send_id=send_id).count() == 1


def test_a_plain_text_step_has_its_links_tracked_too_but_never_the_unsubscribe_link(acme, clock, smtp_server):
    campaign = CampaignFactory(workspace=acme, slug="plain")
    campaign_email_add(
        campaign=campaign,
        subject="Hi",
        body="See https://shop.example/a, or (https://shop.example/b).",
        delay_minutes=0,
    )
    campaign_lead_add(campaign=campaign, email="ann@example.com")
    run_pass()
    message = message_from_bytes(smtp_server.received[0][2], policy=policy.default)
    body = message.get_content().replace("\r\n", "\n")
    assert "shop.example" not in body
    assert re.match(
        r"See http://testserver/l/[\w-]+\?lf_e=\d+:[\w-]+, or \(http://testserver/l/[\w-]+\?lf_e=\d+:[\w-]+\)\.", body
    )
    assert "Unsubscribe: http://testserver/u/" in body
    assert EmailLink.objects.filter(campaign_email__campaign=campaign).count() == 2


def test_a_step_whose_links_cannot_be_made_goes_out_with_its_links_as_written(
    acme, html_campaign, clock, smtp_server, monkeypatch, caplog
):
    def broken(step):
        raise RuntimeError("no links today")

    monkeypatch.setattr("campaigns.outgoing.email_links_ensure", broken)
    campaign_lead_add(campaign=html_campaign, email="zoe@example.com")
    assert run_pass().counts()["sent"] == 1
    _, text, html = parts(smtp_server.received[0][2])
    assert "https://shop.example/pricing" in hrefs(html) and "https://shop.example/pricing" in text
    assert "http://testserver/l/" not in html + text
    (logged,) = [record for record in caplog.records if record.getMessage() == "links not tracked"]
    step = CampaignEmail.objects.get(campaign=html_campaign)
    assert (logged.campaign_email_id, logged.error) == (step.pk, "RuntimeError")


def test_our_own_unsubscribe_confirmation_and_tracked_links_written_in_a_step_are_never_rewritten(
    acme, clock, smtp_server
):
    campaign = CampaignFactory(workspace=acme, slug="own")
    own = ["http://testserver/u/abc:def", "http://testserver/c/abc:def", "http://testserver/l/abcdefgh"]
    markdown = " ".join(f"[{n}]({url})" for n, url in enumerate(own)) + " [shop](https://shop.example/)"
    campaign_email_add(campaign=campaign, subject="Hi", markdown=markdown, delay_minutes=0)
    campaign_lead_add(campaign=campaign, email="ann@example.com")
    run_pass()
    _, text, html = parts(smtp_server.received[0][2])
    for url in own:
        assert f'href="{url}"' in html and f"({url})" in text
    assert [link.destination for link in EmailLink.objects.all()] == ["https://shop.example/"]


def test_a_steps_link_deleted_since_goes_out_untracked_to_its_destination(acme, html_campaign, clock, smtp_server):
    campaign_lead_add(campaign=html_campaign, email="zoe@example.com", name="Zoë")
    run_pass()
    pricing = EmailLink.objects.get(campaign_email__campaign=html_campaign, destination="https://shop.example/pricing")
    link_delete(link=pricing.link)  # in the back office or the API: it no longer redirects anywhere

    campaign_lead_add(campaign=html_campaign, email="yan@example.com", name="Yan")
    run_pass()
    _, text, html = parts(smtp_server.received[-1][2])
    assert "https://shop.example/pricing" in hrefs(html) and "(https://shop.example/pricing)" in text
    tracked = [href for href in hrefs(html) if href.startswith("http://testserver/l/")]
    assert [urlsplit(href).path for href in tracked] == [
        f"/l/{EmailLink.objects.exclude(pk=pricing.pk).get().link.key}"
    ]
