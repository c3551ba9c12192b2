"""In headless Chromium: an owner writes a segment and an HTML broadcast, previews it with a recipient's data, sends
herself a test through real SMTP, then sends it now; the sender mails it, a recipient's click and lead show in the
broadcast's progress and numbers, and on her contact page. Explicit waits only."""

import re

import pytest
from django.urls import reverse

from campaigns.models import Broadcast, BroadcastRecipient, Segment
from campaigns.sending import run_pass
from customers.tags import contact_tags_add
from tests.backoffice.test_browser import log_in
from tests.backoffice.test_browser_back_office import by_css, owner, wait_css
from tests.backoffice.test_email_steps_browser import follow_and_sign_up, preview_for, received, ui  # noqa: F401 (fixture)
from tests.campaigns.test_smtp import smtp_server, smtp_settings  # noqa: F401 (fixtures)
from tests.factories import ApiTokenFactory, CustomerFactory, WorkspaceFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_write_preview_test_and_send_a_broadcast_then_read_its_progress_clicks_and_leads(
    ui, smtp_server, smtp_settings
):
    from selenium.webdriver.support.ui import Select

    browser, wait, base = ui
    smtp_settings.PUBLIC_BASE_URL = base  # the tracked links point at this live server
    acme = WorkspaceFactory(slug="acme", name="Acme")
    owner(acme)
    grace = CustomerFactory(workspace=acme, email="grace@example.com", name="Grace")
    for contact in (grace, CustomerFactory(workspace=acme, email="ada@example.com", name="Ada")):
        contact_tags_add(customer=contact, names=["vip"])
    CustomerFactory(workspace=acme, email="other@example.com")  # not in the segment
    token = ApiTokenFactory(workspace=acme)
    destination = f"{base}/healthz?from=broadcast"

    # The segment: the contacts tagged vip.
    log_in(browser, wait, base, "alice")
    browser.get(base + reverse("admin:campaigns_segment_add"))
    wait_css(wait, "input[name='name']").send_keys("VIPs")
    by_css(browser, "input[name='tags']").send_keys("vip")
    wait.until(lambda b: "2 contacts now" in by_css(b, "#segment-count").text)
    by_css(browser, "input[name='_save']").click()
    wait.until(lambda b: Segment.objects.filter(workspace=acme, name="VIPs").exists())
    segment = Segment.objects.get(workspace=acme)

    # The broadcast, written in Markdown.
    browser.get(base + reverse("admin:campaigns_broadcast_add"))
    Select(wait_css(wait, "select[name='workspace']")).select_by_value(str(acme.pk))
    Select(by_css(browser, "select[name='segment']")).select_by_value(str(segment.pk))
    by_css(browser, "input[name='name']").send_keys("Spring news")
    by_css(browser, "input[name='subject']").send_keys("Spring, {{ name }}")
    by_css(browser, "textarea[name='markdown']").send_keys(
        f"# Hello {{{{ name }}}}\n\nRead [our status page]({destination}).\n\n<script>alert(1)</script>"
    )
    by_css(browser, "input[name='_continue']").click()
    wait.until(lambda b: Broadcast.objects.filter(workspace=acme).exists())
    broadcast = Broadcast.objects.get(workspace=acme)
    assert broadcast.status == "draft" and "<script" not in broadcast.html

    # Preview with Grace's data (a contact of the segment), desktop and narrow, in sandboxed frames.
    preview_for(browser, wait, grace, subject="Spring, Grace", heading="Hello Grace", destination=destination)

    # Send me a test: to alice, marked, through SMTP, recorded nowhere.
    by_css(browser, "#send-test").click()
    wait.until(lambda b: "Test sent to alice@example.com." in b.page_source)
    message, html = received(smtp_server, 0)
    assert smtp_server.received[0][1] == ["alice@example.com"]
    assert message["Subject"] == "[Test] Spring, Grace" and message["X-Lftrack-Test"] == "yes"
    assert f'href="{destination}"' in html.replace("&amp;", "&")
    assert not BroadcastRecipient.objects.exists()

    # Send now (the list's action); the sender starts it and mails both VIPs.
    browser.get(base + reverse("admin:campaigns_broadcast_changelist"))
    wait_css(wait, f"input[name='_selected_action'][value='{broadcast.pk}']").click()
    Select(by_css(browser, "select[name='action']")).select_by_value("send_now")
    by_css(browser, "button[name='index']").click()
    wait.until(lambda b: "The sender starts on its next pass 1 broadcast(s)." in b.page_source)
    assert run_pass().broadcast == 2
    assert sorted(to for _, [to], _ in smtp_server.received[1:]) == ["ada@example.com", "grace@example.com"]
    [index] = [i for i, (_, to, _) in enumerate(smtp_server.received) if to == ["grace@example.com"]]
    _, html = received(smtp_server, index)
    tracked = re.search(r'href="([^"]+)"[^>]*>our status page', html).group(1).replace("&amp;", "&")
    assert tracked.startswith(f"{base}/l/") and "lf_e=b" in tracked

    # Grace follows her link, then signs up.
    landed = follow_and_sign_up(browser, wait, base, tracked, token.secret)
    assert landed.startswith(f"{base}/healthz?from=broadcast&lf_cid=")

    browser.get(base + reverse("admin:campaigns_broadcast_change", args=[broadcast.pk]))
    assert wait_css(wait, ".field-status .readonly").text == "Sent"
    assert by_css(browser, ".field-progress .readonly").text == "2 sent / 2 total, 0 failed, 0 skipped, 0 to go"
    numbers = by_css(browser, ".field-numbers .readonly").text
    assert numbers == "1 unique clicks (50.0% of sent), 1 leads, 0 sales, net revenue -"
    assert by_css(browser, ".lf-preview-link").text == "Preview and test"  # still there once sent

    browser.get(base + reverse("admin:customers_customer_change", args=[grace.pk]))
    emails = wait_css(wait, "#contact-emails").text
    assert "Spring, Grace" in emails and "broadcast Spring news" in emails
    assert "/healthz?from=broadcast" in by_css(browser, "td.email-clicked").text
