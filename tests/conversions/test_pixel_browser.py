"""lf.js in headless Chromium against the live server: landing, the cookie, signup leads, ignored forms, CORS."""

import time

import pytest
from django.core.cache import cache
from django.test import override_settings
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conversions.models import ConversionEvent
from customers.models import Customer
from tests.conftest import save_screenshot
from tests.factories import LinkFactory, WorkspaceFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NINETY_DAYS = 90 * 24 * 3600
# Records every request the pixel makes, and its outcome, in sessionStorage: it survives the
# navigation a form submission starts, so a test can tell "sent nothing" without waiting for it.
SPY = """
sessionStorage.removeItem('lf-spy');
const log = (entry) => sessionStorage.setItem('lf-spy', (sessionStorage.getItem('lf-spy') || '') + entry + ';');
const fetch0 = window.fetch, beacon0 = navigator.sendBeacon && navigator.sendBeacon.bind(navigator);
window.fetch = (...args) => { log('fetch'); return fetch0(...args).then(
    (r) => { log('status=' + r.status); return r; }, (e) => { log('error'); throw e; }); };
if (beacon0) navigator.sendBeacon = (...args) => { log('beacon'); return beacon0(...args); };
"""


@pytest.fixture(autouse=True)
def _debug_and_fresh_limits(live_server):
    cache.clear()
    # The live server runs with DEBUG off: the demo landing page exists only with it on.
    with override_settings(DEBUG=True, PUBLIC_BASE_URL=live_server.url):
        yield
    cache.clear()


@pytest.fixture
def demo(live_server):
    return WorkspaceFactory(slug="demo", name="Demo", allowed_origins=live_server.url)


def wait(browser, condition, timeout=10):
    return WebDriverWait(browser, timeout, poll_frequency=0.05).until(lambda _: condition())


def land(browser, live_server, demo, *, query="utm_source=launch&ref=a%20b", page_host=None):
    """Follow a tracked link to the demo landing page; returns (link, click)."""
    base = live_server.url.replace("localhost", page_host) if page_host else live_server.url
    link = LinkFactory(post__workspace=demo, destination=f"{base}/demo/landing?{query}#signup")
    browser.get(f"{live_server.url}/l/{link.key}")
    wait(browser, lambda: browser.execute_script("return !!(window.lf && window.lf.clickId)"))
    return link, link.clicks.get()


def submit(browser, form_id, **fields):
    for name, value in fields.items():
        browser.find_element(By.CSS_SELECTOR, f"#{form_id} [name={name}]").send_keys(value)
    browser.find_element(By.CSS_SELECTOR, f"#{form_id} button[type=submit]").click()
    wait(browser, lambda: "/demo/thanks" in browser.current_url)


def pixel_requests(browser) -> str:
    return browser.execute_script("return sessionStorage.getItem('lf-spy') || ''")


def test_landing_stores_the_click_id_for_90_days_and_cleans_the_address(browser, live_server, demo):
    before = time.time()
    _link, click = land(browser, live_server, demo)
    assert browser.current_url == f"{live_server.url}/demo/landing?utm_source=launch&ref=a%20b#signup"
    cookie = browser.get_cookie("lf_cid")
    assert cookie["value"] == click.click_id
    assert before + NINETY_DAYS - 60 <= cookie["expiry"] <= time.time() + NINETY_DAYS + 60
    assert (cookie["path"], cookie["sameSite"], cookie["secure"], cookie["httpOnly"]) == ("/", "Lax", False, False)
    assert browser.execute_script("return window.lf.clickId()") == click.click_id
    save_screenshot(browser, "pixel-landing")


def test_landing_with_only_the_click_id_leaves_a_bare_address(browser, live_server, demo):
    land(browser, live_server, demo, query="")
    assert browser.current_url == f"{live_server.url}/demo/landing#signup"


def test_signup_form_records_one_lead_and_still_submits(browser, live_server, demo):
    link, click = land(browser, live_server, demo)
    submit(browser, "signup-form", email="ada@example.com", name="Ada Lovelace")
    assert "Thank you, Ada Lovelace!" in browser.page_source  # the form's own submission happened
    wait(browser, lambda: ConversionEvent.objects.exists())
    event = ConversionEvent.objects.get()
    assert (event.event, event.channel, event.click_id, event.link_id) == ("lead", "pixel", click.pk, link.pk)
    customer = Customer.objects.get()
    assert event.customer == customer
    # The name the pixel sent is not stored on its own: it waits for a confirmed enrollment.
    assert (customer.workspace, customer.email, customer.name, customer.source) == (
        demo,
        "ada@example.com",
        "",
        "pixel",
    )
    # The thank-you page looks again until the lead is there, then lists it.
    wait(browser, lambda: browser.find_elements(By.ID, "leads"))
    assert f"#{event.pk}" in browser.find_element(By.ID, "leads").text
    save_screenshot(browser, "pixel-thanks")


def test_ignored_form_records_nothing_and_still_submits(browser, live_server, demo):
    land(browser, live_server, demo)
    browser.execute_script(SPY)
    submit(browser, "newsletter-form", email="news@example.com")
    assert "You are subscribed" in browser.page_source
    assert pixel_requests(browser) == ""
    # The signup form right after it is reported: the only lead, with the signup's address.
    browser.back()
    wait(browser, lambda: "/demo/landing" in browser.current_url)
    submit(browser, "signup-form", email="ada@example.com")
    wait(browser, lambda: ConversionEvent.objects.exists())
    assert list(ConversionEvent.objects.values_list("customer__email", flat=True)) == ["ada@example.com"]
    assert not Customer.objects.filter(email="news@example.com").exists()


def test_no_click_id_no_lead(browser, live_server, demo):
    browser.get(f"{live_server.url}/demo/landing")
    wait(browser, lambda: browser.execute_script("return !!window.lf"))
    assert browser.execute_script("return window.lf.lead({email: 'ada@example.com'})") is False
    browser.execute_script(SPY)
    submit(browser, "signup-form", email="ada@example.com")
    assert pixel_requests(browser) == ""
    assert browser.get_cookie("lf_cid") is None


def test_lf_lead_for_single_page_apps(browser, live_server, demo):
    _link, click = land(browser, live_server, demo)
    browser.execute_script(SPY)
    assert browser.execute_script("return window.lf.lead({email: 'spa@example.com', name: 'Spa User'})") is True
    wait(browser, lambda: "status=" in pixel_requests(browser))
    assert pixel_requests(browser) == "fetch;status=201;"
    event = ConversionEvent.objects.select_related("customer").get()
    assert (event.click_id, event.customer.email) == (click.pk, "spa@example.com")


def test_cross_origin_page_allowed_by_the_workspace(browser, live_server, demo):
    # The page on 127.0.0.1, the script and the API on localhost: two origins, as on a customer's site.
    page = live_server.url.replace("localhost", "127.0.0.1")
    demo.allowed_origins = page
    demo.save()
    with override_settings(ALLOWED_HOSTS=["localhost", "127.0.0.1"]):
        _link, click = land(browser, live_server, demo, page_host="127.0.0.1")
        assert browser.current_url.startswith(page + "/demo/landing?")
        browser.execute_script(SPY)
        browser.execute_script("window.lf.lead({email: 'far@example.com'})")
        wait(browser, lambda: "status=" in pixel_requests(browser) or "error" in pixel_requests(browser))
        # 201 readable by the page: the answer carried Access-Control-Allow-Origin for this origin.
        assert pixel_requests(browser) == "fetch;status=201;"
        browser.delete_all_cookies()  # the fixture clears localhost's only
    assert ConversionEvent.objects.get().click_id == click.pk


def test_cross_origin_page_not_allowed_records_nothing(browser, live_server, demo):
    with override_settings(ALLOWED_HOSTS=["localhost", "127.0.0.1"]):
        land(browser, live_server, demo, page_host="127.0.0.1")
        browser.execute_script(SPY)
        browser.execute_script("window.lf.lead({email: 'far@example.com'})")
        wait(browser, lambda: "status=" in pixel_requests(browser) or "error" in pixel_requests(browser))
        # Refused with 403 and no CORS grant: the browser hides the answer from the page.
        assert pixel_requests(browser) == "fetch;error;"
        browser.delete_all_cookies()
    assert not ConversionEvent.objects.exists()


def test_browsers_without_keepalive_fetch_send_a_beacon(browser, live_server, demo):
    _link, click = land(browser, live_server, demo)
    browser.execute_script(SPY + "delete Request.prototype.keepalive;")
    submit(browser, "signup-form", email="beacon@example.com", name="Bea Con")
    assert pixel_requests(browser) == "beacon;"
    wait(browser, lambda: ConversionEvent.objects.exists())
    event = ConversionEvent.objects.select_related("customer").get()
    assert (event.click_id, event.customer.email) == (click.pk, "beacon@example.com")


def test_double_submit_sends_one_lead(browser, live_server, demo):
    land(browser, live_server, demo)
    browser.execute_script(SPY)
    sent = browser.execute_script(
        "const f = document.getElementById('signup-form');"
        "f.email.value = 'twice@example.com';"
        "f.addEventListener('submit', (e) => e.preventDefault());"  # as a single-page app's handler would
        "f.requestSubmit(); f.requestSubmit();"
        "return sessionStorage.getItem('lf-spy');"
    )
    assert sent == "fetch;"
    wait(browser, lambda: "status=" in pixel_requests(browser))
    assert ConversionEvent.objects.count() == 1
