"""GET /l/<key>: records a click and redirects with lf_cid, keeping the destination intact."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from clicks.models import Click, Link
from clicks.services import _Visit, _visits_record, destination_with_click_id
from tests.conftest import run_in_threads
from tests.factories import LinkFactory

pytestmark = pytest.mark.django_db


def test_redirect_records_a_click_and_appends_lf_cid(client):
    link = LinkFactory(destination="https://shop.example.com/landing?utm_source=news&a=b%20c#pricing")
    resp = client.get(f"/l/{link.key}", HTTP_USER_AGENT="TestBrowser/1.0", HTTP_REFERER="https://social.example/post/1")
    assert resp.status_code == 302
    click = Click.objects.get()
    assert (
        resp["Location"] == f"https://shop.example.com/landing?utm_source=news&a=b%20c&lf_cid={click.click_id}#pricing"
    )
    assert resp["Cache-Control"] == "no-store"
    assert (click.link, click.workspace) == (link, link.workspace)
    assert click.user_agent == "TestBrowser/1.0"
    assert click.referrer == "https://social.example/post/1"


def test_each_visit_mints_a_distinct_unguessable_click_id(client):
    link = LinkFactory(destination="https://example.com/")
    ids = set()
    for _ in range(10):
        location = client.get(f"/l/{link.key}")["Location"]
        ids.add(parse_qs(urlsplit(location).query)["lf_cid"][0])
    assert len(ids) == 10 and Click.objects.count() == 10
    assert all(len(click_id) >= 22 for click_id in ids)  # 128 bits in URL-safe base64


def test_unknown_key_is_404_and_records_nothing(client):
    assert client.get("/l/doesnotexist").status_code == 404
    assert not Click.objects.exists()


def test_redirect_is_one_statement(client, django_assert_num_queries):
    link = LinkFactory()
    with django_assert_num_queries(1):
        assert client.get(f"/l/{link.key}").status_code == 302
    assert Click.objects.filter(link=link).count() == 1


def test_an_unknown_key_is_404_and_records_nothing(client):
    LinkFactory()
    assert client.get("/l/nosuchkey").status_code == 404
    assert not Click.objects.exists()


@pytest.mark.parametrize(
    ("user_agent", "referrer", "expected"),
    [
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "https://t.co/xyz",
            ("mobile", "Mobile Safari", "iOS", "t.co"),
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "",
            ("tablet", "Mobile Safari", "iOS", ""),
        ),
        (
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
            "https://www.Facebook.com/some/page?x=1",
            ("mobile", "Chrome Mobile", "Android", "facebook.com"),
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
            "not a url",
            ("tablet", "Chrome", "Android", ""),
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
            "https://news.ycombinator.com/item?id=1",
            ("desktop", "Chrome", "Windows", "news.ycombinator.com"),
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
            "http://[::1",
            ("desktop", "Safari", "Mac OS X", ""),
        ),
        (
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "",
            ("bot", "FacebookBot", "", ""),
        ),
        ("", "", ("bot", "", "", "")),
    ],
)
def test_clicks_carry_device_browser_os_and_referrer_domain(client, user_agent, referrer, expected):
    link = LinkFactory()
    headers = {"HTTP_USER_AGENT": user_agent, **({"HTTP_REFERER": referrer} if referrer else {})}
    assert client.get(f"/l/{link.key}", **headers).status_code == 302
    click = Click.objects.get()
    assert (click.device, click.browser, click.os, click.referrer_domain) == expected


def test_head_answers_without_recording_a_click(client):
    link = LinkFactory(destination="https://example.com/page")
    resp = client.head(f"/l/{link.key}")
    assert resp.status_code == 302 and resp["Location"] == "https://example.com/page"
    assert not Click.objects.exists()


def test_post_is_not_allowed(client):
    link = LinkFactory()
    assert client.post(f"/l/{link.key}").status_code == 405


@pytest.mark.parametrize(
    ("method", "key", "status"),
    [("get", "known", 302), ("head", "known", 302), ("get", "unknown", 404), ("post", "known", 405)],
)
def test_the_redirect_answers_before_url_resolving_with_every_page_header(client, method, key, status):
    """clicks.middleware answers the redirect before the pages' middleware; its answers keep their headers."""
    link = LinkFactory()
    resp = getattr(client, method)(f"/l/{link.key if key == 'known' else 'unknown'}")
    assert resp.status_code == status
    assert resp.wsgi_request.resolver_match is None  # no URL resolving, no middleware after the security headers
    assert resp["X-Frame-Options"] == "DENY" and resp["X-Content-Type-Options"] == "nosniff"
    assert resp["Cross-Origin-Opener-Policy"] == "same-origin" and len(resp["X-Request-ID"]) == 32
    assert resp["Content-Length"] == str(len(resp.content))
    assert Click.objects.count() == (1 if (method, key) == ("get", "known") else 0)


def test_a_redirect_for_a_host_not_served_is_400_and_records_nothing(client):
    link = LinkFactory()
    assert client.get(f"/l/{link.key}", HTTP_HOST="attacker.example").status_code == 400
    assert not Click.objects.exists()


def test_oversized_and_nul_headers_are_trimmed(client):
    link = LinkFactory()
    client.get(f"/l/{link.key}", HTTP_USER_AGENT="A\x00" * 600, HTTP_REFERER="r" * 5000)
    click = Click.objects.get()
    assert "\x00" not in click.user_agent and len(click.user_agent) == 512
    assert len(click.referrer) == 2048


@pytest.mark.parametrize(
    ("destination", "expected"),
    [
        ("https://e.com/", "https://e.com/?lf_cid=CID"),
        ("https://e.com/p?x=1", "https://e.com/p?x=1&lf_cid=CID"),
        ("https://e.com/p#frag", "https://e.com/p?lf_cid=CID#frag"),
        ("https://e.com/p?x=1&lf_cid=old&y=2#f", "https://e.com/p?x=1&y=2&lf_cid=CID#f"),
        ("https://e.com/p?lf%5Fcid=old", "https://e.com/p?lf_cid=CID"),
        ("https://e.com/p?q=a+b&e=%2F&flag", "https://e.com/p?q=a+b&e=%2F&flag&lf_cid=CID"),
    ],
)
def test_destination_rewrite(destination, expected):
    assert destination_with_click_id(destination, "CID") == expected


@pytest.mark.parametrize("path", ["/l/ab%00cd", "/l/ab.cd", "/l/%F0%9F%98%80", "/l/" + "k" * 300])
def test_strange_keys_are_not_found_or_refused_never_500(client, path):
    assert client.get(path).status_code in (400, 404)
    assert not Click.objects.exists()


def test_past_the_per_address_limit_the_redirect_still_answers_but_records_nothing(client, settings):
    settings.RATELIMIT_REDIRECT_IP = "2/m"
    link = LinkFactory(destination="https://shop.example.com/?a=1")
    answers = [client.get(f"/l/{link.key}", REMOTE_ADDR="198.51.100.20") for _ in range(4)]
    assert [resp.status_code for resp in answers] == [302] * 4
    assert ["lf_cid=" in resp["Location"] for resp in answers] == [True, True, False, False]
    assert answers[-1]["Location"] == "https://shop.example.com/?a=1"
    assert Click.objects.count() == 2
    assert "lf_cid=" in client.get(f"/l/{link.key}", REMOTE_ADDR="198.51.100.21")["Location"]  # others still count


def test_the_per_address_click_limit_counts_an_ipv6_client_by_its_64(client, settings):
    settings.RATELIMIT_REDIRECT_IP = "2/m"
    link = LinkFactory()
    answers = [client.get(f"/l/{link.key}", REMOTE_ADDR=f"2001:db8:5:6::{n + 1}") for n in range(4)]
    assert ["lf_cid=" in resp["Location"] for resp in answers] == [True, True, False, False]
    assert "lf_cid=" in client.get(f"/l/{link.key}", REMOTE_ADDR="2001:db8:5:7::1")["Location"]
    assert Click.objects.count() == 3


def test_a_changed_destination_applies_to_the_next_click(client):
    """No cache of links: each click reads the link in the statement that records it."""
    link = LinkFactory(destination="https://example.com/old")
    assert client.get(f"/l/{link.key}")["Location"].startswith("https://example.com/old?lf_cid=")
    Link.objects.filter(pk=link.pk).update(destination="https://example.com/new")
    assert client.get(f"/l/{link.key}")["Location"].startswith("https://example.com/new?lf_cid=")
    assert client.head(f"/l/{link.key}")["Location"] == "https://example.com/new"


def test_an_international_destination_is_sent_as_a_uri(client):
    link = LinkFactory(destination="https://shop.example.com/größe?q=ü&lf_cid=old#teil")
    location = client.get(f"/l/{link.key}")["Location"]
    click = Click.objects.get()
    assert location == f"https://shop.example.com/gr%C3%B6%C3%9Fe?q=%C3%BC&lf_cid={click.click_id}#teil"
    assert (
        client.head(f"/l/{link.key}")["Location"] == "https://shop.example.com/gr%C3%B6%C3%9Fe?q=%C3%BC&lf_cid=old#teil"
    )


def test_a_destination_with_a_scheme_no_browser_should_follow_is_refused(client):
    """Destinations are validated when made; one written around that (SQL, a migration) is still never sent."""
    link = LinkFactory()
    Link.objects.filter(pk=link.pk).update(destination="javascript:alert(1)")
    assert client.get(f"/l/{link.key}").status_code == 400


def test_a_batch_records_each_visit_within_the_limit_and_answers_each_its_own(settings):
    """The statement that stores the clicks of requests waiting together (clicks/services.py)."""
    settings.RATELIMIT_REDIRECT_IP = "2/m"
    spring, autumn = LinkFactory(destination="https://e.com/spring"), LinkFactory(destination="https://e.com/autumn")

    def visit(key, client, click_id):
        return _Visit(key, click_id, "UA", "", False, "other", "", "", "", "", "", client)

    answers = _visits_record(
        [
            visit(spring.key, "198.51.100.1", "c1"),
            visit("nosuchkey", "198.51.100.2", "c2"),
            visit(autumn.key, "198.51.100.1", "c3"),
            visit(spring.key, "198.51.100.1", "c4"),  # the address's third click this minute: past the limit
            visit(spring.key, "198.51.100.3", "c5"),
        ]
    )
    assert answers == [
        ("https://e.com/spring", "c1", "recorded"),
        None,
        ("https://e.com/autumn", "c3", "recorded"),
        ("https://e.com/spring", None, "limited"),
        ("https://e.com/spring", "c5", "recorded"),
    ]
    stored = dict(Click.objects.values_list("click_id", "link_id"))
    assert stored == {"c1": spring.pk, "c3": autumn.pk, "c5": spring.pk}
    assert len(set(Click.objects.values_list("created_at", flat=True))) == 1  # one statement


@pytest.mark.django_db(transaction=True)
def test_concurrent_clicks_each_get_a_stored_click_id():
    link = LinkFactory(destination="https://e.com/landing")

    def follow(i):
        return Client().get(f"/l/{link.key}", HTTP_USER_AGENT="Mozilla/5.0", REMOTE_ADDR=f"198.51.100.{i}")

    answers = run_in_threads(12, follow)
    ids = [parse_qs(urlsplit(resp["Location"]).query)["lf_cid"][0] for resp in answers]
    assert [resp.status_code for resp in answers] == [302] * 12 and len(set(ids)) == 12
    assert sorted(Click.objects.filter(link=link).values_list("click_id", flat=True)) == sorted(ids)


def test_a_click_stuck_behind_a_batch_past_the_deadline_still_redirects_or_answers_503(settings, monkeypatch):
    """A visit waiting for a batch that PostgreSQL does not return within REDIRECT_DEADLINE: a link this process
    served lately still redirects (no click id), any other is a 503 with Retry-After, never a 500."""
    import threading

    from clicks import services
    from lftrack.batching import Batcher

    client = Client(raise_request_exception=False)  # what a visitor gets, not the exception
    served, unseen = LinkFactory(destination="https://shop.example.com/a"), LinkFactory()
    assert client.get(f"/l/{served.key}").status_code == 302
    stuck, entered = threading.Event(), threading.Event()

    def slow_write(visits):
        entered.set()
        stuck.wait(10)
        return [None] * len(visits)

    monkeypatch.setattr(services, "_visits", Batcher(slow_write))
    leader = threading.Thread(target=services._visits.submit, args=("a visit of another request",))
    leader.start()
    assert entered.wait(10)
    settings.REDIRECT_DEADLINE = 0.05
    try:
        kept = client.get(f"/l/{served.key}")
        assert (kept.status_code, kept["Location"]) == (302, "https://shop.example.com/a")
        refused = client.get(f"/l/{unseen.key}")
        assert (refused.status_code, refused["Retry-After"]) == (503, "5")
        assert refused.content == b"Service unavailable, try again in a moment."
    finally:
        stuck.set()
        leader.join(10)
    assert Click.objects.count() == 1
