"""In headless Chromium: an owner connects Stripe, pastes its secret, Stripe's signed event becomes a sale in the
log, a test event too; the page fits a phone's screen."""

import pytest
import requests
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from conversions.models import ConversionEvent
from payments.models import Connection
from tests.backoffice.test_browser import log_in
from tests.conftest import save_screenshot
from tests.factories import ClickFactory, MembershipFactory, UserFactory, WorkspaceFactory
from tests.payments.providers import checkout_session, sid, stripe_event, stripe_signed
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_owner_connects_stripe_and_sees_its_sales_in_the_log(browser, live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    wait = WebDriverWait(browser, 15)
    acme = WorkspaceFactory(slug="acme", name="Acme")
    MembershipFactory(user=UserFactory(username="alice"), workspace=acme, role=Membership.Role.OWNER)
    click = ClickFactory(link__post__workspace=acme)
    log_in(browser, wait, live_server.url, "alice")

    browser.get(live_server.url + reverse("admin:payments_connection_add"))
    Select(browser.find_element(By.NAME, "provider")).select_by_value("stripe")
    browser.find_element(By.NAME, "name").send_keys("Main account")
    browser.find_element(By.NAME, "_save").click()
    url = wait.until(ec.presence_of_element_located((By.ID, "connection-url"))).get_attribute("value")
    connection = Connection.objects.get()
    assert url == f"{live_server.url}/hooks/payments/{connection.url_token}"
    assert "invoice_payment.paid" in browser.page_source

    browser.find_element(By.ID, "connection-secret").click()
    browser.find_element(By.NAME, "signing_secret").send_keys("whsec_from_the_dashboard")
    browser.find_element(By.NAME, "_save").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert "whsec_from_the_dashboard" not in browser.page_source

    session = checkout_session(mode="payment", amount=4900, click_id=click.click_id, payment_intent=sid("pi"))
    body, headers = stripe_signed(stripe_event("checkout.session.completed", session), "whsec_from_the_dashboard")
    assert requests.post(url, data=body, headers=headers, timeout=10).json()["outcome"] == "sale"
    browser.find_element(By.ID, "connection-test").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    log = browser.find_element(By.ID, "delivery-log").text
    live, test = ConversionEvent.objects.filter(is_test=False).get(), ConversionEvent.objects.filter(is_test=True).get()
    assert f"sale recorded: sale #{live.pk}" in log and f"sale recorded: sale #{test.pk}" in log
    save_screenshot(browser, "payment-providers")
    for width in (1366, 390):
        browser.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500},
        )
        browser.refresh()
        wait.until(ec.presence_of_element_located((By.ID, "delivery-log")))
        assert browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth") <= 0, width
        save_screenshot(browser, f"payment-providers-{width}")
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
