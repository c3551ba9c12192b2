"""The back office as a person sees it, at 1366 px and 390 px wide, on a demo-like workspace: nothing wider than the
screen, and no list cut off. The pictures go to test-artifacts/; `make screenshots` writes them to docs/screenshots/
(SCREENSHOTS_DIR), where the README and docs/backoffice.md show them."""

import os
import random
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.models import CampaignLead, EmailSend, Enrollment, Suppression
from clicks.models import Click
from conversions.models import ConversionEvent
from customers.models import Customer
from rollups.services import numbers_roll_up
from tests.backoffice.test_browser import log_in
from tests.conftest import ARTIFACTS
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    LinkFactory,
    MembershipFactory,
    PostFactory,
    UserFactory,
    WorkspaceFactory,
)
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1366, 390)
POSTS = [
    ("Spring roast launch", "newsletter", "email"),
    ("Cold brew guide", "instagram", "social"),
    ("Barista masterclass", "youtube", "video"),
    ("Holiday gift boxes", "facebook", "social"),
    ("Decaf, done right", "newsletter", "email"),
    ("Office coffee plans", "linkedin", "social"),
]
AGENTS = [
    ("mobile", "Mobile Safari", "iOS"),
    ("desktop", "Chrome", "Windows"),
    ("mobile", "Chrome Mobile", "Android"),
    ("desktop", "Safari", "Mac OS X"),
    ("tablet", "Mobile Safari", "iOS"),
    ("desktop", "Firefox", "Linux"),
]
REFERRERS = [
    "",
    "t.co",
    "www.instagram.com",
    "www.google.com",
    "news.ycombinator.com",
    "www.linkedin.com",
    "l.facebook.com",
]
FIRST = [
    "Ada",
    "Grace",
    "Alan",
    "Katherine",
    "Margaret",
    "Edsger",
    "Barbara",
    "Donald",
    "Hedy",
    "Radia",
    "Ken",
    "Frances",
]
LAST = [
    "Lovelace",
    "Hopper",
    "Turing",
    "Johnson",
    "Hamilton",
    "Dijkstra",
    "Liskov",
    "Knuth",
    "Lamarr",
    "Perlman",
    "Thompson",
    "Allen",
    "Wirth",
    "Ritchie",
]


def demo_workspace() -> dict:
    """Northwind Coffee: six posts with a link each, 90 days of people clicking, signing up and buying (USD and
    EUR), a welcome sequence of three emails with its sends, a few unsubscribes and a bounce."""
    rng = random.Random(18)
    now = timezone.now()
    workspace = WorkspaceFactory(slug="northwind", name="Northwind Coffee")
    MembershipFactory(user=UserFactory(username="alice"), workspace=workspace, role=Membership.Role.OWNER)
    welcome = CampaignFactory(workspace=workspace, slug="welcome", name="Welcome sequence")
    steps = [
        CampaignEmailFactory(campaign=welcome, position=n, subject=subject, delay_minutes=delay)
        for n, (subject, delay) in enumerate(
            [
                ("Welcome to Northwind, {{ name }}", 0),
                ("How to brew the perfect cup", 1440),
                ("10% off your first bag", 4320),
            ],
            start=1,
        )
    ]
    links = []
    for n, (title, source, medium) in enumerate(POSTS):
        post = PostFactory(workspace=workspace, title=title, campaign=welcome if n < 3 else None)
        links.append(
            LinkFactory(
                post=post,
                destination=f"https://northwind.example/{title.lower().replace(' ', '-')}"
                f"?utm_source={source}&utm_medium={medium}&utm_campaign=spring",
            )
        )
    clicks, moments = [], []
    for age in range(90):
        day = now - timedelta(days=age)
        for _ in range(int(8 + 6 * (1 - age / 90) + rng.random() * 6)):
            link = rng.choices(links, weights=[6, 4, 3, 2, 2, 1])[0]
            device, browser, os_ = rng.choice(AGENTS)
            clicks.append(
                Click(
                    workspace=workspace,
                    link=link,
                    user_agent="demo",
                    device=device,
                    browser=browser,
                    os=os_,
                    referrer_domain=rng.choice(REFERRERS),
                )
            )
            moments.append(min(now, day.replace(hour=rng.randint(7, 21), minute=rng.randint(0, 59))))
    clicks = Click.objects.bulk_create(clicks)
    for click, moment in zip(clicks, moments, strict=True):  # auto_now_add made them all now: back to their day
        click.created_at = moment
    Click.objects.bulk_update(clicks, ["created_at"], batch_size=500)
    customers, events = [], []
    for n, click in enumerate(c for c in clicks if rng.random() < 0.12):
        name = f"{FIRST[n % len(FIRST)]} {LAST[n // len(FIRST) % len(LAST)]}"
        email = f"{name.lower().replace(' ', '.')}{n // (len(FIRST) * len(LAST)) or ''}@example.com"
        customers.append(
            Customer(workspace=workspace, email=email, name=name, source="api", external_id=f"crm-{1000 + n}")
        )
        events.append((click, email))
    customers = Customer.objects.bulk_create(customers)
    for customer, (click, _) in zip(customers, events, strict=False):  # they came in with their first lead
        customer.created_at = customer.updated_at = click.created_at + timedelta(minutes=1)
    Customer.objects.bulk_update(customers, ["created_at", "updated_at"], batch_size=500)
    by_email = {c.email: c for c in customers}
    conversions, lead_at = [], {}
    for click, email in events:
        moment = lead_at[click.pk] = click.created_at + timedelta(minutes=rng.randint(2, 90))
        conversions.append(
            ConversionEvent(
                workspace=workspace,
                click=click,
                link=click.link,
                customer=by_email[email],
                event="lead",
                occurred_at=moment,
                channel="api",
            )
        )
        if rng.random() < 0.35:
            conversions.append(
                ConversionEvent(
                    workspace=workspace,
                    click=click,
                    link=click.link,
                    customer=by_email[email],
                    event="sale",
                    value_cents=rng.choice([1800, 2400, 4900, 12900]),
                    currency="EUR" if rng.random() < 0.25 else "USD",
                    event_name=rng.choice(["Starter bag", "Subscription", "Gift box"]),
                    occurred_at=moment + timedelta(hours=2),
                    channel="api",
                )
            )
    ConversionEvent.objects.bulk_create(conversions)
    for n, (click, email) in enumerate(events):
        if click.link.post.title not in {title for title, _, _ in POSTS[:3]}:
            continue
        enrolled = lead_at[click.pk] + timedelta(seconds=1)  # their lead enrolled them
        bounced, unsubscribed = n % 29 == 0, n % 11 == 0  # a few leave: one bounces, some unsubscribe
        done = 1 if bounced else min(3, max(0, int((now - enrolled).days)), 2 if unsubscribed else 3)
        enrollment = Enrollment.objects.create(
            workspace=workspace,
            campaign=welcome,
            customer=by_email[email],
            enrolled_at=enrolled,
            state="stopped" if bounced or unsubscribed else "completed" if done == 3 else "active",
            last_sent_position=done,
            last_sent_at=enrolled + timedelta(minutes=steps[max(done, 1) - 1].delay_minutes + 1),
        )
        CampaignLead.objects.create(
            workspace=workspace,
            campaign=welcome,
            customer=by_email[email],
            enrollment=enrollment,
            outcome="created",
            channel="api",
        )
        for step in steps[: max(1, done)]:
            EmailSend.objects.create(
                workspace=workspace,
                campaign=welcome,
                enrollment=enrollment,
                campaign_email=step,
                position=step.position,
                to_email=email,
                status="failed" if bounced else "sent",
                sent_at=enrolled + timedelta(minutes=step.delay_minutes + 1),
                error="550 5.1.1 mailbox unavailable" if bounced else "",
            )
        if bounced or unsubscribed:
            Suppression.objects.create(
                workspace=workspace, email=email, reason="bounced" if bounced else "unsubscribed"
            )
    numbers_roll_up(wait_seconds=1)
    enrolled = Customer.objects.filter(
        enrollments__campaign=welcome, enrollments__state="completed", conversions__event="sale"
    ).distinct()
    star = max(enrolled, key=lambda c: (ConversionEvent.objects.filter(customer=c).count(), -c.pk))
    return {"workspace": workspace, "campaign": welcome, "link": links[0], "contact": star}


def save(browser, name: str) -> None:
    folder = Path(os.environ.get("SCREENSHOTS_DIR") or ARTIFACTS)
    folder.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(folder / f"{name}.png"))


def full_page(browser, width: int) -> None:
    """The viewport as tall as the page (at most 2,600 px), so one picture holds it all."""
    metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": min(max(height, 700), 2600)})


def overflow(browser) -> dict:
    """How far the page, and each table's box, reach past the screen or their container (0 when they fit)."""
    return browser.execute_script("""
        var page = document.documentElement.scrollWidth - window.innerWidth;
        var list = document.querySelector('#changelist-form .results');
        return {page: page, list: list ? list.scrollWidth - list.clientWidth : 0};""")


def test_pages_fit_the_screen_and_their_pictures(browser, live_server):
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 15)
    demo = demo_workspace()
    log_in(browser, wait, live_server.url, "alice")
    pages = {
        "dashboard": "/admin/?range=90",
        "link-page": reverse("admin:clicks_link_change", args=[demo["link"].pk]),
        "contact-page": reverse("admin:customers_customer_change", args=[demo["contact"].pk]),
        "campaign-funnel": reverse("admin:campaigns_campaign_change", args=[demo["campaign"].pk]),
    }
    lists = [
        "workspaces_apitoken",
        "customers_customer",
        "campaigns_campaign",
        "campaigns_enrollment",
        "campaigns_emailsend",
        "conversions_conversionevent",
        "clicks_link",
        "clicks_post",
    ]
    try:
        for width in WIDTHS:
            for name, path in pages.items():
                browser.execute_cdp_cmd(
                    "Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500},
                )
                browser.get(live_server.url + path)
                if name in ("dashboard", "campaign-funnel"):  # the charts drawn
                    canvas = "chart-counts" if name == "dashboard" else "chart-steps"
                    wait.until(
                        lambda b, c=canvas: b.execute_script(f"return !!(window.Chart && Chart.getChart('{c}'))")
                    )
                assert overflow(browser)["page"] <= 0, (name, width, overflow(browser))
                if width == 1366:  # at 1366 px no table scrolls inside its box either
                    boxes = browser.execute_script(
                        "return [...document.querySelectorAll('.lf-scroll')].map(b => b.scrollWidth - b.clientWidth)"
                    )
                    assert all(extra <= 0 for extra in boxes), (name, boxes)
                full_page(browser, width)
                browser.get(live_server.url + path)
                if name in ("dashboard", "campaign-funnel"):
                    wait.until(
                        lambda b, c=canvas: b.execute_script(f"return !!(window.Chart && Chart.getChart('{c}'))")
                    )
                save(browser, f"{name}-{width}")
        browser.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1366, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
        for model in lists:  # at 1366 px every list fits: nothing to scroll sideways
            browser.get(live_server.url + reverse(f"admin:{model}_changelist"))
            reach = overflow(browser)
            assert reach["page"] <= 0 and reach["list"] <= 0, (model, reach)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
