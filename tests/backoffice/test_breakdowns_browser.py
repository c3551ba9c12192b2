"""In headless Chromium: the dashboard's numbers by country and by UTM field equal plain queries over the clicks and
conversions, visits made in the browser itself among them. Explicit waits only."""

from collections import Counter

import pytest
from django.db.models import Count

from clicks.links import link_add
from clicks.models import Click
from conversions.models import ConversionEvent
from rollups.services import numbers_roll_up
from tests.backoffice.test_browser import log_in
from tests.backoffice.test_browser_back_office import by_css, wait_css
from tests.factories import ClickFactory, ConversionEventFactory, LinkFactory, MembershipFactory, UserFactory
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ui(browser, live_server):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return browser, WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]), live_server.url


def table(browser) -> dict:
    """The breakdown table as {value: (clicks, leads, sales)}, None for the row without a value."""
    rows = {}
    for row in browser.find_elements("css selector", "#breakdown-table tbody tr"):
        value = row.find_element("css selector", "td[data-value]").get_attribute("data-value") or None
        numbers = [int(row.find_element("css selector", f"td[data-{n}]").text) for n in ("clicks", "leads", "sales")]
        rows[value] = tuple(numbers)
    return rows


def plain(workspace, field: str) -> dict:
    clicks = Counter(
        dict(Click.objects.filter(workspace=workspace, is_bot=False).values_list(field).annotate(n=Count("id")))
    )
    events = ConversionEvent.objects.filter(workspace=workspace, is_test=False)
    leads = Counter(dict(events.filter(event="lead").values_list(f"click__{field}").annotate(n=Count("id"))))
    sales = Counter(dict(events.filter(event="sale").values_list(f"click__{field}").annotate(n=Count("id"))))
    return {key or None: (clicks[key], leads[key], sales[key]) for key in set(clicks) | set(leads) | set(sales)}


def test_the_dashboard_breaks_numbers_down_by_country_and_utm_as_plain_queries_count(ui, acme, globex):
    browser, wait, base = ui
    MembershipFactory(user=UserFactory(username="bob"), workspace=acme, role=Membership.Role.EDITOR)
    mail = link_add(
        workspace=acme,
        destination=base + "/healthz",
        key="autumn-mail",
        utm={"utm_source": "mail", "utm_medium": "email", "utm_campaign": "autumn"},
    )
    social = LinkFactory(post__workspace=acme)
    for n, country in enumerate(["GB", "GB", "DE", "US", "GB", "DE"]):
        click = ClickFactory(link=(mail, social)[n % 2], country=country, utm_source=("mail", "")[n % 2])
        if n < 3:
            sale = {"event": "sale", "value_cents": 500, "currency": "EUR"}
            ConversionEventFactory(click=click, **(sale if n % 2 else {"event": "lead"}))
    ClickFactory(link=LinkFactory(post__workspace=globex), country="FR", utm_source="theirs")  # never on acme's page
    numbers_roll_up()
    ClickFactory(link=social, country="US")  # above the watermark: counted live
    log_in(browser, wait, base, "bob")
    # A person's browser on this machine (headless Chromium says so in its user agent, and is counted a bot): no
    # country known, the link's UTM fields.
    headless = browser.execute_script("return navigator.userAgent")
    browser.execute_cdp_cmd("Network.setUserAgentOverride", {"userAgent": headless.replace("HeadlessChrome", "Chrome")})
    try:
        for _ in range(2):
            browser.get(f"{base}/l/autumn-mail")
            wait.until(lambda b: "lf_cid=" in b.current_url)
    finally:
        browser.execute_cdp_cmd("Network.setUserAgentOverride", {"userAgent": headless})
    assert Click.objects.filter(link=mail, is_bot=False, country="", utm_source="mail").count() == 2

    browser.get(f"{base}/admin/")
    wait_css(wait, "#breakdown-table[data-by=country]")
    assert table(browser) == plain(acme, "country")
    assert table(browser)[None][0] == 2 and "FR" not in table(browser)

    by_css(browser, "#breakdown a[data-by=utm_source]").click()
    wait_css(wait, "#breakdown-table[data-by=utm_source]")
    assert table(browser) == plain(acme, "utm_source") and table(browser)["mail"][0] == 5

    by_css(browser, "#breakdown a[data-by=utm_campaign]").click()
    wait_css(wait, "#breakdown-table[data-by=utm_campaign]")
    assert table(browser) == plain(acme, "utm_campaign")
