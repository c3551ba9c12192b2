"""In headless Chromium, as marketers use the back office: the dashboard's totals and chart, a link made and
followed, the contact page, pausing a campaign, enrolling from the list, importing and exporting CSV, and an
editor who sees only their workspace. Explicit waits only."""

import csv
import io
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.models import Campaign, Enrollment
from customers.models import Customer
from tests.backoffice.test_browser import log_in, post_json
from tests.backoffice.test_dashboard import plain, story  # noqa: F401  (the seeded workspace)
from tests.factories import (
    ApiTokenFactory,
    CampaignEmailFactory,
    CampaignFactory,
    CustomerFactory,
    EmailSendFactory,
    EnrollmentFactory,
    MembershipFactory,
    UserFactory,
)
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ui(browser, live_server):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # A button that submits a form is replaced by the next page's: reading it in between is stale, not a failure.
    return browser, WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]), live_server.url


def owner(workspace, username="alice"):
    MembershipFactory(user=UserFactory(username=username), workspace=workspace, role=Membership.Role.OWNER)


def by_css(browser, selector):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, selector)


def wait_css(wait, selector):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, selector)))


def chart_points(browser, wait, dataset: int) -> list:
    wait.until(lambda b: b.execute_script("return !!(window.Chart && Chart.getChart('chart-counts'))"))
    return browser.execute_script(f"return Chart.getChart('chart-counts').data.datasets[{dataset}].data")


def total(browser, name: str) -> str:
    return by_css(browser, f'[data-total="{name}"]').text


def test_dashboard_totals_for_a_range_and_a_filter_and_chart_points_equal_plain_counts(ui, acme, globex, story):
    browser, wait, base = ui
    owner(acme)
    log_in(browser, wait, base, "alice")
    today = timezone.now().date()
    wait_css(wait, '[data-range="7"]').click()
    wait.until(lambda b: "range=7" in b.current_url)
    since = today - timedelta(days=6)
    expected = plain(acme, since, today)
    assert total(browser, "clicks") == f"{expected['totals']['clicks']:,}"
    assert total(browser, "leads") == f"{expected['totals']['leads']:,}"
    assert chart_points(browser, wait, 0) == [
        expected["per_day"][since + timedelta(days=n)]["clicks"] for n in range(7)
    ]
    assert chart_points(browser, wait, 1) == [expected["per_day"][since + timedelta(days=n)]["leads"] for n in range(7)]

    from selenium.webdriver.support.ui import Select

    Select(by_css(browser, "#filter-post")).select_by_visible_text("Autumn post")
    wait.until(lambda b: f"post={story['autumn_post'].pk}" in b.current_url and "range=7" in b.current_url)
    autumn = plain(acme, since, today, links={story["links"][2].pk})
    assert total(browser, "leads") == f"{autumn['totals']['leads']:,}"
    assert chart_points(browser, wait, 0) == [autumn["per_day"][since + timedelta(days=n)]["clicks"] for n in range(7)]


def test_an_owner_makes_a_link_follows_it_and_reads_the_contact(ui, acme):
    browser, wait, base = ui
    owner(acme)
    token = ApiTokenFactory(workspace=acme)
    log_in(browser, wait, base, "alice")
    browser.get(base + reverse("admin:clicks_link_add"))
    wait_css(wait, "input[name=destination]").send_keys(base + "/healthz?utm_source=newsletter")
    by_css(browser, "input[name=post_title]").send_keys("Winter launch")
    by_css(browser, "input[name=_save]").click()
    short = wait_css(wait, "input.lf-snippet").get_attribute("value")
    key = short.rsplit("/l/", 1)[1]

    browser.get(f"{base}/l/{key}")
    wait.until(lambda b: "lf_cid=" in b.current_url)
    assert browser.current_url.startswith(base + "/healthz?utm_source=newsletter&lf_cid=")
    click_id = parse_qs(urlsplit(browser.current_url).query)["lf_cid"][0]
    status, body = post_json(
        base + "/api/v1/conversions",
        {
            "event": "sale",
            "click_id": click_id,
            "value_cents": 2500,
            "customer": {"email": "ada@example.com", "name": "Ada"},
        },
        token.secret,
    )
    assert status == 201, body
    contact = Customer.objects.get(workspace=acme, email="ada@example.com")
    spring = CampaignFactory(workspace=acme, name="Spring")
    EmailSendFactory(
        enrollment=EnrollmentFactory(campaign=spring, customer=contact),
        campaign_email=CampaignEmailFactory(campaign=spring, position=1, subject="Welcome, {{ name }}"),
    )

    browser.get(base + reverse("admin:customers_customer_change", args=[contact.pk]))
    clicks = wait_css(wait, "#contact-clicks").text
    assert f"/l/{key}" in clicks and "Winter launch" in clicks
    assert "#1 Welcome, Ada" in by_css(browser, "#contact-emails").text
    first_touch = by_css(browser, "#contact-first-touch").text
    assert "newsletter" in first_touch and f"/l/{key}" in first_touch
    timeline = by_css(browser, "#contact-timeline").text
    for text in ("Emailed #1 Welcome, Ada", "Enrolled in Spring", "Sale 25.00 USD", f"Clicked /l/{key}"):
        assert text in timeline, text


def test_pause_and_resume_a_campaign_and_enroll_contacts_from_the_list(ui, acme):
    browser, wait, base = ui
    owner(acme)
    spring = CampaignFactory(workspace=acme, name="Spring")
    CampaignEmailFactory(campaign=spring, position=1)
    chosen = [CustomerFactory(workspace=acme, email=f"{name}@example.com") for name in ("ada", "bea")]
    CustomerFactory(workspace=acme, email="cy@example.com")
    log_in(browser, wait, base, "alice")

    browser.get(base + reverse("admin:campaigns_campaign_change", args=[spring.pk]))
    wait_css(wait, "#campaign-switch").click()
    wait.until(lambda b: by_css(b, "#campaign-switch").text.lower() == "resume sending")
    assert Campaign.objects.get(pk=spring.pk).status == "paused"
    by_css(browser, "#campaign-switch").click()
    wait.until(lambda b: by_css(b, "#campaign-switch").text.lower() == "pause sending")
    assert Campaign.objects.get(pk=spring.pk).status == "active"

    from selenium.webdriver.support.ui import Select

    browser.get(base + reverse("admin:customers_customer_changelist"))
    for contact in chosen:
        wait_css(wait, f'input.action-select[value="{contact.pk}"]').click()
    Select(by_css(browser, "select[name=action]")).select_by_value("enroll_contacts")
    by_css(browser, "button[name=index]").click()
    Select(wait_css(wait, "select[name=campaign]")).select_by_visible_text("Spring")
    by_css(browser, "input[name=_save]").click()
    assert wait_css(wait, ".messagelist .success").text == "Enrolled in Spring: 2 reused."
    assert set(Enrollment.objects.filter(campaign=spring).values_list("customer__email", flat=True)) == {
        "ada@example.com",
        "bea@example.com",
    }


def test_csv_import_dry_run_then_import_and_exports_download_the_filtered_rows(ui, acme, tmp_path):
    browser, wait, base = ui
    owner(acme)
    CustomerFactory(workspace=acme, email="grace@example.com", name="Grace", source="api")
    file = tmp_path / "contacts.csv"
    file.write_text("email,name,external_id\nada@example.com,Ada,crm-1\nGRACE@example.com,,crm-2\n")
    log_in(browser, wait, base, "alice")

    browser.get(base + reverse("admin:customers_customer_changelist"))
    wait_css(wait, "#import-csv").click()
    wait_css(wait, "input[name=import_file]").send_keys(str(file))
    by_css(browser, "form input[type=submit]").click()
    outcomes = " ".join(wait_css(wait, "#import-outcomes").text.split())
    assert outcomes == "1 new contact 1 matched 0 external ids moved"
    assert not Customer.objects.filter(email="ada@example.com").exists()  # a preview only
    by_css(browser, "#confirm-import input[name=cancel]").click()  # "Choose another file" forgets this one
    assert wait_css(wait, ".messagelist .info").text == "Nothing was imported."
    wait_css(wait, "input[name=import_file]").send_keys(str(file))
    by_css(browser, "form input[type=submit]").click()
    wait_css(wait, "#import-outcomes")
    by_css(browser, "#confirm-import input[name=confirm]").click()
    assert "1 new contact(s), 1 matched" in wait_css(wait, ".messagelist .success").text
    assert Customer.objects.get(email="ada@example.com").source == "manual"

    browser.get(base + reverse("admin:customers_customer_changelist") + "?source__exact=manual")
    href = wait_css(wait, "#export-csv").get_attribute("href")
    text = browser.execute_async_script(
        "var done = arguments[arguments.length - 1]; fetch(arguments[0]).then(r => r.text()).then(done);", href
    )
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    assert [(row["email"], row["external_id"], row["came in by"]) for row in rows] == [
        ("ada@example.com", "crm-1", "Manual")
    ]


def test_an_editor_sees_only_their_workspace(ui, acme, globex, story):
    browser, wait, base = ui
    MembershipFactory(user=UserFactory(username="erin"), workspace=globex, role=Membership.Role.EDITOR)
    acme_contact = CustomerFactory(workspace=acme, email="acme-only@example.com")
    CustomerFactory(workspace=globex, email="globex-only@example.com")
    log_in(browser, wait, base, "erin")
    assert wait_css(wait, ".lf-workspace-name").text == "Globex"
    assert total(browser, "sales") == "1"  # globex's one sale; acme's many are not here
    assert "Spring post" not in browser.page_source

    browser.get(base + reverse("admin:customers_customer_changelist"))
    listed = wait_css(wait, "#result_list").text
    assert "globex-only@example.com" in listed and "acme-only@example.com" not in listed
    browser.get(base + reverse("admin:customers_customer_change", args=[acme_contact.pk]))
    assert "doesn’t exist" in wait_css(wait, ".messagelist").text  # back on their own dashboard
    assert "acme-only@example.com" not in browser.page_source and 'id="workspace-switch"' not in browser.page_source
