"""GET /api/v1/conversions: the workspace's leads and sales newest first, filtered, a keyset page at a time."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import assert_api_error, run_in_threads
from tests.factories import ClickFactory, ConversionEventFactory, CustomerFactory
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db
URL = "/api/v1/conversions"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def events(acme, globex):
    click = ClickFactory(link__post__workspace=acme)
    other_click = ClickFactory(link__post__workspace=acme)
    ada = CustomerFactory(workspace=acme, email="ada@example.com", external_id="user_42")
    rows = [
        ConversionEventFactory(click=click, customer=ada, event="lead", occurred_at=T0),
        ConversionEventFactory(
            click=click,
            customer=ada,
            event="sale",
            value_cents=49000,
            event_name="Annual plan",
            meta={"order": "A-1"},
            occurred_at=T0 + timedelta(hours=1),
        ),
        ConversionEventFactory(click=other_click, event="lead", occurred_at=T0 + timedelta(hours=2)),
    ]
    ConversionEventFactory(click=ClickFactory(link__post__workspace=globex), event="sale", occurred_at=T0)
    return rows, click, ada


def test_newest_first_with_what_was_sent(api, acme_token, events):
    (lead, sale, latest), click, ada = events
    body = api.get(URL, token=acme_token).json()
    assert [item["id"] for item in body["data"]] == [latest.pk, sale.pk, lead.pk] and body["next"] is None
    assert body["data"][1] == {
        "id": sale.pk,
        "event": "sale",
        "click_id": click.click_id,
        "link_id": click.link_id,
        "customer": {"id": ada.pk, "external_id": "user_42"},
        "occurred_at": "2026-03-01T13:00:00.000000Z",
        "value_cents": 49000,
        "event_name": "Annual plan",
        "meta": {"order": "A-1"},
        "channel": "api",
        "invoice_id": None,
        "currency": "USD",
        "refunded_cents": 0,
        "net_cents": 49000,
    }
    assert body["data"][2]["event_name"] is None  # absent optional strings are null (docs/api.md)


def test_filters(api, acme_token, events):
    (lead, sale, latest), click, ada = events

    def ids(**params):
        return [item["id"] for item in api.get(URL, params, token=acme_token).json()["data"]]

    assert ids(event="sale") == [sale.pk]
    assert ids(link_id=click.link_id) == [sale.pk, lead.pk]
    assert ids(customer_id=ada.pk) == [sale.pk, lead.pk]
    assert ids(since="2026-03-01T13:00:00+00:00", until="2026-03-01T14:00:00Z") == [sale.pk]
    assert ids(since="2026-03-01T14:00:00 01:00") == [latest.pk, sale.pk]  # an unencoded "+"
    assert ids(since="2026-03-01T13:00:00Z", until="2026-03-01T13:00:00Z") == []  # an empty range: not after


def test_pages_follow_the_cursor_and_hold_under_new_inserts(api, acme_token, events, acme):
    (lead, sale, latest), click, _ = events
    first = api.get(URL, {"limit": 2}, token=acme_token).json()
    assert [item["id"] for item in first["data"]] == [latest.pk, sale.pk] and first["next"]
    ConversionEventFactory(click=click, event="lead", occurred_at=T0 + timedelta(days=1))  # recorded meanwhile
    second = api.get(URL, {"limit": 2, "cursor": first["next"]}, token=acme_token).json()
    assert [item["id"] for item in second["data"]] == [lead.pk] and second["next"] is None


def test_cursor_is_stable_under_concurrent_inserts(api, acme_token, acme):
    click = ClickFactory(link__post__workspace=acme)
    for i in range(30):
        ConversionEventFactory(click=click, occurred_at=T0 + timedelta(minutes=i))
    seen, cursor = [], None

    def insert(i):
        ConversionEventFactory(click=click, occurred_at=T0 + timedelta(days=1, minutes=i))

    while True:
        page = api.get(URL, {"limit": 7, **({"cursor": cursor} if cursor else {})}, token=acme_token).json()
        seen += [item["id"] for item in page["data"]]
        if not page["next"]:
            break
        run_in_threads(4, insert)  # real inserts on other connections between pages
        cursor = page["next"]
    assert len(seen) == len(set(seen)) >= 30  # every event of the first page's time seen once, none twice


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"event": "refund"}, "invalid event"),
        ({"link_id": "x"}, "link_id must be an integer"),
        ({"customer_id": "-1"}, "customer_id must be an integer"),
        ({"since": "yesterday"}, "since must be an ISO 8601 time with an offset"),
        ({"until": "2026-03-01T12:00:00"}, "until must be an ISO 8601 time with an offset"),
        ({"since": "2026-03-02T00:00:00Z", "until": "2026-03-01T23:00:00Z"}, "since is after until"),
        ({"since": "2026-03-01T12:00:00+01:00", "until": "2026-03-01T10:59:59Z"}, "since is after until"),
        ({"limit": "0"}, "limit must be 1 to 100"),
        ({"limit": "101"}, "limit must be 1 to 100"),
        ({"cursor": "bm90IGEgY3Vyc29y"}, "invalid cursor"),
        ({"cursor": "%%%"}, "invalid cursor"),
    ],
)
def test_bad_parameters_are_422(api, acme_token, params, message):
    assert_api_error(api.get(URL, params, token=acme_token), 422, message)


def test_reads_need_a_token_with_read(api, acme, acme_token, events):
    assert_api_error(api.get(URL), 401, "unauthorized")
    writer = api_token_create(workspace=acme, name="writer", scopes=["conversions:write"]).secret
    assert_api_error(api.get(URL, token=writer), 403, "forbidden")
    reader = api_token_create(workspace=acme, name="reader", scopes=["read"]).secret
    assert api.get(URL, token=reader).status_code == 200


def test_another_workspaces_events_are_never_listed(api, globex_token, events):
    (lead, sale, latest), click, ada = events
    for params in ({}, {"link_id": click.link_id}, {"customer_id": ada.pk}):
        data = api.get(URL, params, token=globex_token).json()["data"]
        assert {item["id"] for item in data}.isdisjoint({lead.pk, sale.pk, latest.pk})


def test_reads_are_rate_limited_per_token(api, acme_token, settings):
    settings.RATELIMIT_READ_TOKEN = "2/m"
    assert [api.get(URL, token=acme_token).status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("0918-11-10T05:49:26.675290-17:24", 200),  # an offset PostgreSQL refuses: read in UTC
        ("0001-01-01T00:00:00+05:00", 422),  # before year 1 in UTC
        ("9999-12-31T23:59:59-05:00", 422),  # after year 9999 in UTC
    ],
)
def test_times_python_reads_but_postgresql_would_not(api, acme_token, value, status):
    assert api.get(URL, {"until": value}, token=acme_token).status_code == status
