"""lf.js in headless Chromium: a Stripe Payment Link on the page gets the stored click as client_reference_id."""

import pytest
from django.test import override_settings
from selenium.webdriver.common.by import By

from tests.conftest import save_screenshot
from tests.conversions.test_pixel_browser import land, wait
from tests.factories import WorkspaceFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LINK = "https://buy.stripe.com/test_00g5kE3Vh0aBcDe000"


@pytest.fixture
def demo(live_server):
    # The demo landing page exists with DEBUG on only; it holds a Stripe Payment Link (conversions/templates/demo/).
    with override_settings(DEBUG=True, PUBLIC_BASE_URL=live_server.url):
        yield WorkspaceFactory(slug="demo", name="Demo", allowed_origins=live_server.url)


def href(browser, selector="#buy-link") -> str:
    return browser.find_element(By.CSS_SELECTOR, selector).get_attribute("href")


def test_a_payment_link_gets_the_stored_click_as_client_reference_id(browser, live_server, demo):
    _link, click = land(browser, live_server, demo)
    wait(browser, lambda: "client_reference_id" in href(browser))
    assert href(browser) == f"{LINK}?client_reference_id={click.click_id}"
    save_screenshot(browser, "pixel-payment-link")
    # A later visit, without lf_cid in the address: the click comes from the stored cookie.
    browser.get(f"{live_server.url}/demo/landing")
    wait(browser, lambda: "client_reference_id" in href(browser))
    assert href(browser) == f"{LINK}?client_reference_id={click.click_id}"
    # Links and Buy Buttons a page adds later get it too; a client_reference_id of the page's own is kept.
    browser.execute_script(
        """
        const a = document.createElement('a'); a.id = 'late'; a.href = 'https://buy.stripe.com/test_late?prefilled_email=a%40b.c';
        const own = document.createElement('a'); own.id = 'own'; own.href = 'https://buy.stripe.com/test_own?client_reference_id=theirs';
        const button = document.createElement('stripe-buy-button'); button.setAttribute('buy-button-id', 'buy_btn_1');
        document.body.append(a, own, button);
        """
    )
    wait(browser, lambda: "client_reference_id" in href(browser, "#late"))
    assert href(browser, "#late") == (
        f"https://buy.stripe.com/test_late?prefilled_email=a%40b.c&client_reference_id={click.click_id}"
    )
    assert href(browser, "#own") == "https://buy.stripe.com/test_own?client_reference_id=theirs"
    button = browser.find_element(By.CSS_SELECTOR, "stripe-buy-button")
    assert button.get_attribute("client-reference-id") == click.click_id


def test_without_a_click_the_link_is_left_alone(browser, live_server, demo):
    browser.get(f"{live_server.url}/demo/landing")
    wait(browser, lambda: browser.execute_script("return !!window.lf"))
    assert href(browser) == LINK
