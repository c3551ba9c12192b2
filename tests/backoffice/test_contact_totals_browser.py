"""In headless Chromium: an owner sorts the contacts by net revenue with the column's heading and reads the biggest
buyer first, then narrows the conversions list to a range of days with its form. Explicit waits only."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from conversions.refunds import refund_record
from tests.backoffice.test_browser import log_in
from tests.backoffice.test_browser_back_office import by_css, wait_css
from tests.factories import ClickFactory, ConversionEventFactory, CustomerFactory, MembershipFactory, UserFactory
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ui(browser, live_server):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return browser, WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]), live_server.url


def emails_shown(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#result_list tbody .field-contact")]


def test_an_owner_sorts_contacts_by_revenue_and_narrows_conversions_to_some_days(ui, acme, globex):
    browser, wait, base = ui
    MembershipFactory(user=UserFactory(username="alice"), workspace=acme, role=Membership.Role.OWNER)
    click = ClickFactory(link__post__workspace=acme)
    # Made in this order, so the default order (newest first) is not the revenue's.
    for email, value, refunded, day in (
        ("big@example.com", 90000, 10000, 2),
        ("small@example.com", 1500, 0, 5),
        ("middle@example.com", 20000, 0, 9),
    ):
        buyer = CustomerFactory(workspace=acme, email=email)
        sale = ConversionEventFactory(
            click=click, customer=buyer, event="sale", value_cents=value, occurred_at=datetime(2026, 3, day, tzinfo=UTC)
        )
        if refunded:
            refund_record(workspace=acme, sale_id=sale.pk, amount_cents=refunded)
    stranger = CustomerFactory(workspace=globex, email="stranger@example.com")
    ConversionEventFactory(
        click=ClickFactory(link__post__workspace=globex), customer=stranger, event="sale", value_cents=10**8
    )
    log_in(browser, wait, base, "alice")

    browser.get(base + reverse("admin:customers_customer_changelist"))
    wait_css(wait, "#result_list")
    assert emails_shown(browser) == ["middle@example.com", "small@example.com", "big@example.com"]
    by_css(browser, "th.column-net_revenue a").click()  # ascending
    wait.until(lambda b: "o=" in b.current_url)
    wait.until(lambda b: emails_shown(b) == ["small@example.com", "middle@example.com", "big@example.com"])
    by_css(browser, "th.column-net_revenue.sorted a.toggle").click()  # descending
    wait.until(lambda b: emails_shown(b) == ["big@example.com", "middle@example.com", "small@example.com"])
    assert "800.00 USD (gross 900.00 USD, refunded 100.00 USD)" in by_css(browser, "#result_list tbody tr").text
    assert "stranger@example.com" not in browser.page_source

    browser.get(base + reverse("admin:conversions_conversionevent_changelist"))
    by_css(wait_css(wait, "details[data-filter-title='date range (UTC)']"), "summary").click()  # its drop-down
    by_css(browser, "#lf-since").send_keys("03/04/2026")  # Chromium's date input types in the locale's order
    by_css(browser, "#lf-until").send_keys("03/06/2026")
    by_css(browser, "form.lf-day-range button").click()
    wait.until(lambda b: "since=2026-03-04" in b.current_url and "until=2026-03-06" in b.current_url)
    rows = browser.find_elements("css selector", "#result_list tbody tr")
    assert len(rows) == 1 and "15.00 USD" in rows[0].text
    assert "Date range (UTC): 2026-03-04 to 2026-03-06" in by_css(browser, "#changelist-filter").text
