"""In headless Chromium: an owner writes an HTML email in Markdown, previews it (desktop and narrow) with a recipient's
data, sends herself a test through real SMTP; then the sequence mails it, the recipient's click and lead show in the
step's numbers. Explicit waits only."""

import re
from email import message_from_bytes, policy

import pytest
from django.urls import reverse

from campaigns.models import CampaignEmail, EmailSend
from campaigns.sending import run_pass
from campaigns.services import campaign_email_activate, campaign_lead_add
from tests.backoffice.test_browser import log_in, post_json
from tests.backoffice.test_browser_back_office import by_css, owner, wait_css
from tests.campaigns.test_smtp import smtp_server, smtp_settings  # noqa: F401 (fixtures)
from tests.factories import ApiTokenFactory, CampaignFactory, WorkspaceFactory

PERSON = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
)
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ui(browser, live_server):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return browser, WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]), live_server.url


def received(smtp_server, index: int):
    message = message_from_bytes(smtp_server.received[index][2], policy=policy.default)
    html = message.get_body(preferencelist=("html",)).get_content()
    return message, html


def preview_for(browser, wait, contact, *, subject: str, heading: str, destination: str) -> None:
    """From an email's page, its preview with `contact`'s data: the subject, and in both sandboxed frames (desktop
    and narrow) the heading filled for them, the link as written (a preview tracks nothing) and the unsubscribe link."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    wait_css(wait, ".lf-preview-link").click()
    Select(wait_css(wait, "select#contact")).select_by_value(str(contact.pk))
    by_css(browser, "#preview-contact button").click()
    wait.until(lambda b: subject in by_css(b, "#preview-subject").text)
    for frame, width in (("preview-desktop", "680"), ("preview-narrow", "375")):
        element = by_css(browser, f"#{frame}")
        assert element.get_attribute("sandbox") == "" and element.get_attribute("width") == width
        browser.switch_to.frame(element)
        assert browser.find_element(By.TAG_NAME, "h1").text == heading
        assert browser.find_element(By.LINK_TEXT, "our status page").get_attribute("href") == destination
        assert browser.find_element(By.LINK_TEXT, "Unsubscribe")
        browser.switch_to.default_content()


def follow_and_sign_up(browser, wait, base: str, tracked: str, token: str) -> str:
    """The contact follows the tracked link of their email as their desktop browser would (headless Chromium says
    "HeadlessChrome", which the redirect flags as a bot), then signs up: a lead on that click. Where they landed."""
    original = browser.execute_script("return navigator.userAgent")
    browser.execute_cdp_cmd("Network.setUserAgentOverride", {"userAgent": PERSON})
    try:
        browser.get(tracked)
        wait.until(lambda b: "lf_cid=" in b.current_url)
    finally:
        browser.execute_cdp_cmd("Network.setUserAgentOverride", {"userAgent": original})
    click_id = browser.current_url.split("lf_cid=")[1]
    status, _ = post_json(f"{base}/api/v1/conversions", {"event": "lead", "click_id": click_id}, token)
    assert status == 201
    return browser.current_url


def test_write_preview_and_test_an_html_email_then_read_its_clicks_and_leads(ui, smtp_server, smtp_settings):
    from selenium.webdriver.common.by import By

    browser, wait, base = ui
    smtp_settings.PUBLIC_BASE_URL = base  # the tracked links point at this live server
    acme = WorkspaceFactory(slug="acme", name="Acme")
    owner(acme)
    spring = CampaignFactory(workspace=acme, slug="spring", name="Spring")
    grace = campaign_lead_add(campaign=spring, email="grace@example.com", name="Grace").enrollment.customer
    token = ApiTokenFactory(workspace=acme)
    destination = f"{base}/healthz?from=email"

    log_in(browser, wait, base, "alice")
    browser.get(base + reverse("admin:campaigns_campaign_change", args=[spring.pk]))
    wait_css(wait, ".add-row a").click()
    wait_css(wait, "input[name='emails-0-subject']").send_keys("Welcome, {{ name }}")
    by_css(browser, "textarea[name='emails-0-markdown']").send_keys(
        f"# Hello {{{{ name }}}}\n\nStart with [our status page]({destination}).\n\n<script>alert(1)</script>"
    )
    by_css(browser, "input[name='emails-0-delay_minutes']").clear()
    by_css(browser, "input[name='emails-0-delay_minutes']").send_keys("0")
    by_css(browser, "input[name='_continue']").click()
    wait.until(lambda b: CampaignEmail.objects.filter(campaign=spring).exists())
    step = CampaignEmail.objects.get(campaign=spring)
    assert "<script" not in step.html and step.body.startswith("Hello {{ name }}")

    # Preview with Grace's data: the email in two sandboxed frames, desktop and narrow.
    preview_for(browser, wait, grace, subject="Welcome, Grace", heading="Hello Grace", destination=destination)
    assert "Start with our status page" in by_css(browser, "#preview-text").text

    # Send me a test: to alice, marked, through SMTP, counted nowhere.
    by_css(browser, "#send-test").click()
    wait.until(lambda b: "Test sent to alice@example.com." in b.page_source)
    message, html = received(smtp_server, 0)
    assert smtp_server.received[0][1] == ["alice@example.com"]
    assert message["Subject"] == "[Test] Welcome, Grace" and message["X-Lftrack-Test"] == "yes"
    assert not EmailSend.objects.exists()

    # Live: the sequence mails Grace; she follows the link in her email, then signs up (a lead on that click).
    campaign_email_activate(campaign_email=step)
    assert run_pass().sent == 1
    _, html = received(smtp_server, 1)
    tracked = re.search(r'href="([^"]+)"[^>]*>our status page', html).group(1).replace("&amp;", "&")
    assert tracked.startswith(f"{base}/l/") and "lf_e=" in tracked
    assert follow_and_sign_up(browser, wait, base, tracked, token.secret).startswith(
        f"{base}/healthz?from=email&lf_cid="
    )

    browser.get(base + reverse("admin:campaigns_campaign_change", args=[spring.pk]))
    row = wait_css(wait, "#step-numbers tr.step-numbers-row[data-position='1']")
    cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
    assert cells == ["#1 Welcome, ‹name› (HTML)", "1", "1", "100.0%", "1", "0", "-"]
    browser.get(base + reverse("admin:customers_customer_change", args=[grace.pk]))
    assert "/healthz?from=email" in wait_css(wait, "td.email-clicked").text
