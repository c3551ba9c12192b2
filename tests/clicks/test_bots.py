"""Crawlers, preview fetchers and prefetches are redirected as anyone, stored flagged, and not counted."""

import pytest

from clicks.models import Click, Link
from rollups.selectors import links_with_numbers
from rollups.services import numbers_roll_up
from tests.factories import LinkFactory

pytestmark = pytest.mark.django_db

BROWSER = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_USER_AGENT": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"},
        {"HTTP_USER_AGENT": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"},
        {"HTTP_USER_AGENT": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
        {"HTTP_USER_AGENT": "UptimeRobot/2.0; http://www.uptimerobot.com/"},
        {"HTTP_USER_AGENT": BROWSER, "HTTP_SEC_PURPOSE": "prefetch;prerender"},
        {"HTTP_USER_AGENT": BROWSER, "HTTP_PURPOSE": "prefetch"},
        {},  # no user agent at all
    ],
    ids=["facebook", "slack", "googlebot", "monitor", "sec-purpose", "purpose", "no-user-agent"],
)
def test_a_bot_is_redirected_as_usual_but_flagged(client, headers):
    link = LinkFactory(destination="https://shop.example.com/")
    resp = client.get(f"/l/{link.key}", **headers)
    assert resp.status_code == 302 and "lf_cid=" in resp["Location"]
    assert Click.objects.get().is_bot


def test_bot_clicks_are_left_out_of_the_numbers_before_and_after_a_roll_up(client):
    link = LinkFactory()
    client.get(f"/l/{link.key}", HTTP_USER_AGENT=BROWSER)
    client.get(f"/l/{link.key}", HTTP_USER_AGENT="Twitterbot/1.0")
    client.get(f"/l/{link.key}", HTTP_USER_AGENT=BROWSER)
    assert list(Click.objects.order_by("pk").values_list("is_bot", flat=True)) == [False, True, False]
    assert links_with_numbers(links=Link.objects.filter(pk=link.pk)).get().n_clicks == 2
    numbers_roll_up(wait_seconds=1)
    client.get(f"/l/{link.key}", HTTP_USER_AGENT="Twitterbot/1.0")
    assert links_with_numbers(links=Link.objects.filter(pk=link.pk)).get().n_clicks == 2
