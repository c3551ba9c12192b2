"""In headless Chromium: an editor changes a link's destination on its page, the next visit goes to the new one, and
the page's history shows the change. Explicit waits only."""

import pytest
from django.urls import reverse

from clicks.links import link_add
from clicks.models import Click
from tests.backoffice.test_browser import log_in
from tests.backoffice.test_browser_back_office import by_css, wait_css
from tests.factories import MembershipFactory, UserFactory
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ui(browser, live_server):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return browser, WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]), live_server.url


def test_an_editor_changes_a_destination_and_the_next_visit_follows_it(ui, acme):
    browser, wait, base = ui
    MembershipFactory(user=UserFactory(username="bob"), workspace=acme, role=Membership.Role.EDITOR)
    link = link_add(workspace=acme, destination=base + "/healthz?v=old", key="spring-qr", utm={"utm_source": "qr"})
    log_in(browser, wait, base, "bob")

    browser.get(f"{base}/l/spring-qr")
    wait.until(lambda b: "lf_cid=" in b.current_url)
    assert browser.current_url.startswith(base + "/healthz?v=old&utm_source=qr&lf_cid=")

    browser.get(base + reverse("admin:clicks_link_change", args=[link.pk]))
    field = wait_css(wait, "input[name=destination]")
    field.clear()
    field.send_keys(base + "/readyz?v=new")
    by_css(browser, "input[name=utm_campaign]").send_keys("spring")
    by_css(browser, "input[name=_continue]").click()
    wait.until(lambda b: "was changed successfully" in b.page_source)
    history = by_css(browser, ".lf-history").text
    assert "bob" in history and f"{base}/healthz?v=old&utm_source=qr" in history
    assert f"{base}/readyz?v=new&utm_source=qr&utm_campaign=spring" in history

    browser.get(f"{base}/l/spring-qr")
    wait.until(lambda b: "lf_cid=" in b.current_url)
    assert browser.current_url.startswith(base + "/readyz?v=new&utm_source=qr&utm_campaign=spring&lf_cid=")
    assert Click.objects.filter(link=link).count() == 2
