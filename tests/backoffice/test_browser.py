"""In headless Chromium: an owner creates a token, the API accepts it, she revokes it, the API refuses it."""

import json
import urllib.error
import urllib.request

import pytest
from django.urls import reverse

from customers.models import Customer
from tests.conftest import save_screenshot
from tests.factories import ClickFactory, MembershipFactory, UserFactory, WorkspaceFactory
from workspaces.models import ApiToken, Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def post_json(url: str, body: dict, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def log_in(browser, wait, base_url: str, username: str) -> None:
    """Through the login form, then wait for the page it leads to: the login page has #content-main too, so
    waiting for that raced the form's POST (the next page opened before the session cookie was set)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    browser.get(base_url + "/admin/login/?next=/admin/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys("correct horse battery staple")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait.until(ec.url_to_be(base_url + "/admin/"))
    wait.until(ec.presence_of_element_located((By.ID, "user-tools")))


def log_in_as_alice(browser, wait, live_server) -> None:
    log_in(browser, wait, live_server.url, "alice")


def test_owner_creates_a_token_uses_it_revokes_it(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 10)
    acme = WorkspaceFactory(slug="acme", name="Acme")
    MembershipFactory(user=UserFactory(username="alice"), workspace=acme, role=Membership.Role.OWNER)
    click = ClickFactory(link__post__workspace=acme, link__post__title="Spring launch post")

    log_in_as_alice(browser, wait, live_server)

    # Settings › Connect your site › Manage tokens › Create token
    browser.get(live_server.url + reverse("admin:workspaces_workspace_change", args=[acme.pk]))
    assert acme.tracking_key in browser.page_source
    browser.find_element(By.ID, "manage-tokens").click()
    wait.until(ec.presence_of_element_located((By.ID, "create-token"))).click()
    browser.find_element(By.NAME, "name").send_keys("Checkout server")
    browser.find_element(By.NAME, "_save").click()
    secret = wait.until(ec.presence_of_element_located((By.ID, "token-secret"))).get_attribute("value")
    assert secret.startswith("lf_") and len(secret) == 46
    assert ApiToken.objects.get(name="Checkout server").prefix == secret[3:11]
    browser.find_element(By.ID, "copy-token").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "copy-token"), "Copied"))

    api = live_server.url + "/api/v1/conversions"
    sale = {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": 49000,
        "event_name": "Annual plan",
        "customer": {"email": "ada@example.com", "name": "Ada Lovelace", "external_id": "user_42"},
    }
    status, body = post_json(api, sale, secret)
    assert status == 201, body
    assert body["customer"]["external_id"] == "user_42"

    # Back to the list: the secret is gone for good; revoke the token with its confirmation page.
    browser.find_element(By.ID, "tokens-done").click()
    wait.until(ec.presence_of_element_located((By.LINK_TEXT, "Checkout server")))
    assert secret not in browser.page_source
    browser.find_element(By.LINK_TEXT, "Checkout server").click()
    wait.until(ec.presence_of_element_located((By.ID, "revoke-token"))).click()
    wait.until(ec.presence_of_element_located((By.ID, "confirm-revoke"))).click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert "Revoked" in browser.page_source

    status, body = post_json(api, {"event": "lead", "click_id": click.click_id}, secret)
    assert (status, body) == (401, {"error": "unauthorized"})

    # The contact the sale created, as a person sees it.
    contact = Customer.objects.get(workspace=acme, email="ada@example.com")
    browser.get(live_server.url + reverse("admin:customers_customer_change", args=[contact.pk]))
    wait.until(ec.presence_of_element_located((By.ID, "contact-timeline")))
    page = browser.page_source
    for text in ("Ada Lovelace", "user_42", "Annual plan", "490.00", "Spring launch post"):
        assert text in page, text
    # The whole page in one picture; the shared browser gets its own viewport back afterwards.
    height = browser.execute_script("return document.documentElement.scrollHeight")
    metrics = {"width": 1280, "height": min(max(height, 800), 4000), "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        save_screenshot(browser, "contact-page")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_an_owner_invites_and_the_invitee_accepts(browser, live_server, mailoutbox):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 10)
    acme = WorkspaceFactory(slug="acme", name="Acme")
    MembershipFactory(user=UserFactory(username="alice"), workspace=acme, role=Membership.Role.OWNER)

    # The owner: Members › Invite someone.
    log_in_as_alice(browser, wait, live_server)
    browser.get(live_server.url + reverse("admin:workspaces_membership_changelist"))
    wait.until(ec.presence_of_element_located((By.ID, "invite"))).click()
    wait.until(ec.presence_of_element_located((By.NAME, "email"))).send_keys("erin@example.com")
    browser.find_element(By.NAME, "_save").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert "Invitation sent to erin@example.com." in browser.page_source
    assert not Membership.objects.filter(workspace=acme, user__email="erin@example.com").exists()

    # The invitee, in a browser of their own: the emailed link, a new account, the back office.
    (message,) = mailoutbox
    link = next(line for line in message.body.splitlines() if "/invite/" in line)
    path = "/" + link.split("://", 1)[1].split("/", 1)[1]
    browser.delete_all_cookies()
    browser.get(live_server.url + path)
    wait.until(ec.presence_of_element_located((By.ID, "signup")))
    assert "Join Acme as editor" in browser.page_source
    browser.find_element(By.NAME, "username").send_keys("erin")
    browser.find_element(By.NAME, "password1").send_keys("a long and unusual passphrase")
    browser.find_element(By.NAME, "password2").send_keys("a long and unusual passphrase")
    browser.find_element(By.ID, "signup").click()
    wait.until(ec.presence_of_element_located((By.ID, "content-main")))
    assert browser.current_url.endswith("/admin/")
    membership = Membership.objects.select_related("user").get(workspace=acme, user__username="erin")
    assert (membership.role, membership.user.email, membership.user.is_staff) == ("editor", "erin@example.com", True)
    save_screenshot(browser, "invitee-back-office")
