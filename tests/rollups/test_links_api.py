"""/api/v1/links: every operation, its scopes, idempotency, bulk all-or-nothing, key rules and other workspaces."""

import json

import pytest
from django.test import override_settings

from clicks.models import Click, Link, LinkChange
from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    LinkFactory,
    RefundFactory,
)
from workspaces.tokens import api_token_create

LINKS = "/api/v1/links"


def _send(api, method, path, body, token):
    return api.generic(
        method, path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token.secret}"
    )


def _make(api, token, **body):
    resp = api.post(LINKS, {"destination": "https://shop.example.com/a", **body}, token=token)
    assert resp.status_code == 201, resp.content
    return resp.json()


@pytest.mark.django_db
def test_create_composes_utm_into_the_destination_and_keeps_its_query(api, acme, acme_token):
    CampaignFactory(workspace=acme, slug="spring")
    body = _make(
        api,
        acme_token,
        destination="https://shop.example.com/p?ref=ig&utm_source=old#top",
        key="Spring-Sale_1",
        utm_source="instagram",
        utm_medium="social media",
        tags=["Spring", "ig", "spring"],
        campaign="spring",
        post_title="Spring post",
        expires_at="2099-01-01T00:00:00+01:00",
        fallback_url="https://shop.example.com/over",
    )
    assert body["key"] == "Spring-Sale_1"
    assert body["short_url"].endswith("/l/Spring-Sale_1")
    assert body["destination"] == "https://shop.example.com/p?ref=ig&utm_source=instagram&utm_medium=social+media#top"
    assert (body["utm_source"], body["utm_medium"], body["utm_campaign"]) == ("instagram", "social media", None)
    assert body["tags"] == ["Spring", "ig"]
    assert body["campaign"] == "spring"
    assert body["expires_at"] == "2098-12-31T23:00:00.000000Z"
    assert body["fallback_url"] == "https://shop.example.com/over"
    assert body["archived"] is False
    link = Link.objects.get(pk=body["id"])
    assert link.post.title == "Spring post" and link.workspace == acme


@pytest.mark.django_db
def test_a_random_key_by_default_and_the_destination_byte_for_byte(api, acme_token):
    body = _make(api, acme_token, destination="https://shop.example.com/a?")
    assert len(body["key"]) == 8
    assert body["destination"] == "https://shop.example.com/a?"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", "key must be 1 to 64 letters, digits, - or _"),
        ("a b", "key must be 1 to 64 letters, digits, - or _"),
        ("é", "key must be 1 to 64 letters, digits, - or _"),
        ("x" * 65, "key is too long"),
        ("Admin", "key is reserved: Admin"),
        ("api", "key is reserved: api"),
    ],
)
def test_a_refused_key_names_the_rule(api, acme_token, key, message):
    resp = api.post(LINKS, {"destination": "https://e.com/", "key": key}, token=acme_token)
    assert_api_error(resp, 422, message)
    assert not Link.objects.exists()


@pytest.mark.django_db
def test_keys_are_unique_across_workspaces_and_case_sensitive(api, acme_token, globex_token):
    _make(api, globex_token, key="promo")
    assert_api_error(
        api.post(LINKS, {"destination": "https://e.com/", "key": "promo"}, token=acme_token), 422, "key is taken: promo"
    )
    assert _make(api, acme_token, key="Promo")["key"] == "Promo"


@pytest.mark.django_db
def test_a_key_changed_away_is_never_given_to_another_link(api, acme_token, globex_token):
    link = _make(api, globex_token, key="spring")
    assert _send(api, "PATCH", f"{LINKS}/{link['id']}", {"key": "summer"}, globex_token).status_code == 200
    # Printed codes and sent emails still carry /l/spring: another workspace may not take it over.
    assert_api_error(
        api.post(LINKS, {"destination": "https://e.com/", "key": "spring"}, token=acme_token),
        422,
        "key is taken: spring",
    )
    # The link itself may have it back.
    assert _send(api, "PATCH", f"{LINKS}/{link['id']}", {"key": "spring"}, globex_token).json()["key"] == "spring"


def test_reserved_keys_cover_every_path_of_the_service():
    from django.urls import get_resolver

    from clicks.links import RESERVED_KEYS

    firsts = {str(p.pattern).split("/")[0].split("<")[0] for p in get_resolver().url_patterns}
    assert {first.lower() for first in firsts if first and "." not in first} <= RESERVED_KEYS


@pytest.mark.django_db
def test_idempotent_create_replays_and_refuses_another_body(api, acme_token):
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-1"}
    first = api.post(LINKS, {"destination": "https://e.com/1"}, token=acme_token, **headers)
    again = api.post(LINKS, {"destination": "https://e.com/1"}, token=acme_token, **headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert Link.objects.count() == 1
    other = api.post(LINKS, {"destination": "https://e.com/2"}, token=acme_token, **headers)
    assert_api_error(other, 422, "idempotency key reused with a different body")


@pytest.mark.django_db
def test_bulk_makes_all_in_order(api, acme_token):
    body = {"links": [{"destination": f"https://e.com/{i}", "tags": ["bulk"]} for i in range(100)]}
    resp = api.post(f"{LINKS}/bulk", body, token=acme_token)
    assert resp.status_code == 201, resp.content
    assert [link["destination"] for link in resp.json()["data"]] == [f"https://e.com/{i}" for i in range(100)]
    assert Link.objects.filter(tags__name="bulk").count() == 100


@pytest.mark.django_db
def test_bulk_is_all_or_nothing_and_names_the_bad_index(api, acme_token):
    _make(api, acme_token, key="taken")
    good = {"destination": "https://e.com/"}
    for links, message in [
        ([good, good, {"destination": "ftp://e.com/"}], "links[2]: destination must be an http or https URL"),
        ([good, {"destination": "https://e.com/", "key": "taken"}], "links[1]: key is taken: taken"),
        ([good, "x"], "links[1]: a link must be an object"),
        ([good] * 101, "links must be a list of 1 to 100 links"),
        ([], "links must be a list of 1 to 100 links"),
        ([{"destination": "https://e.com/", "campaign": "nope"}], "links[0]: unknown campaign: nope"),
    ]:
        assert_api_error(api.post(f"{LINKS}/bulk", {"links": links}, token=acme_token), 422, message)
    assert Link.objects.count() == 1


@pytest.mark.django_db
def test_bulk_is_idempotent(api, acme_token):
    body = {"links": [{"destination": "https://e.com/1"}, {"destination": "https://e.com/2"}]}
    first = api.post(f"{LINKS}/bulk", body, token=acme_token, HTTP_IDEMPOTENCY_KEY="batch-7")
    again = api.post(f"{LINKS}/bulk", body, token=acme_token, HTTP_IDEMPOTENCY_KEY="batch-7")
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert Link.objects.count() == 2


@pytest.mark.django_db
def test_list_filters_and_pages(api, acme, acme_token, globex_token):
    CampaignFactory(workspace=acme, slug="spring")
    a = _make(api, acme_token, destination="https://shop.example.com/shoes", tags=["Shoes"], campaign="spring")
    b = _make(api, acme_token, destination="https://shop.example.com/hats", key="hats-2026")
    c = _make(api, acme_token, destination="https://blog.example.com/")
    _send(api, "PATCH", f"{LINKS}/{c['id']}", {"archived": True}, acme_token)
    _make(api, globex_token, destination="https://shop.example.com/shoes", tags=["shoes"])

    def ids(**params):
        resp = api.get(LINKS, params, token=acme_token)
        assert resp.status_code == 200, resp.content
        return [link["id"] for link in resp.json()["data"]]

    assert ids() == [b["id"], a["id"]]
    assert ids(tag="shoes") == [a["id"]]
    assert ids(campaign="spring") == [a["id"]]
    assert ids(post_id=b["post_id"]) == [b["id"]]
    assert ids(search="HATS-") == [b["id"]]
    assert ids(search="shoes") == [a["id"]]
    assert ids(archived="true") == [c["id"]]
    first = api.get(LINKS, {"limit": 1}, token=acme_token).json()
    second = api.get(LINKS, {"limit": 1, "cursor": first["next"]}, token=acme_token).json()
    assert [first["data"][0]["id"], second["data"][0]["id"], second["next"]] == [b["id"], a["id"], None]
    assert_api_error(api.get(LINKS, {"archived": "maybe"}, token=acme_token), 422, "archived must be true or false")


@pytest.mark.django_db
def test_retrieve_has_the_numbers_from_the_roll_ups_and_the_tail(api, acme, acme_token):
    link = LinkFactory(post__workspace=acme, workspace=acme)
    ClickFactory(link=link)
    ConversionEventFactory(click__link=link, event="sale", value_cents=5000, currency="EUR")
    sale = ConversionEventFactory(click__link=link, event="sale", value_cents=2000, currency="USD")
    numbers_roll_up(wait_seconds=0)
    RefundFactory(conversion=sale, amount_cents=500)
    ConversionEventFactory(click__link=link, event="lead")
    resp = api.get(f"{LINKS}/{link.pk}", token=acme_token)
    assert resp.status_code == 200, resp.content
    numbers = resp.json()["numbers"]
    assert (numbers["clicks"], numbers["leads"], numbers["sales"]) == (4, 1, 2)
    assert [(r["currency"], r["net_cents"]) for r in numbers["revenue"]] == [("EUR", 5000), ("USD", 1500)]


@pytest.mark.django_db
def test_update_changes_and_keeps_history_with_the_token(api, acme_token):
    link = _make(api, acme_token, destination="https://e.com/old?utm_source=ig", tags=["a"])
    resp = _send(
        api,
        "PATCH",
        f"{LINKS}/{link['id']}",
        {"destination": "https://e.com/new", "key": "new-key", "tags": ["b"], "utm_campaign": "fall"},
        acme_token,
    )
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["destination"] == "https://e.com/new?utm_source=ig&utm_campaign=fall"
    assert (body["key"], body["tags"]) == ("new-key", ["b"])
    change = LinkChange.objects.get(link_id=link["id"])
    assert change.token_id == acme_token.pk and change.user is None
    assert change.before["destination"] == "https://e.com/old?utm_source=ig" and change.before["tags"] == ["a"]
    assert change.after["key"] == "new-key" and change.after["utm_campaign"] == "fall"
    assert_api_error(
        _send(api, "PATCH", f"{LINKS}/{link['id']}", {"key": "no way"}, acme_token),
        422,
        "key must be 1 to 64 letters, digits, - or _",
    )
    assert LinkChange.objects.count() == 1


@pytest.mark.django_db
def test_delete_hides_the_link_and_keeps_its_clicks(api, acme_token):
    link = _make(api, acme_token)
    ClickFactory(link=Link.objects.get(pk=link["id"]))
    assert _send(api, "DELETE", f"{LINKS}/{link['id']}", {}, acme_token).status_code == 204
    assert_api_error(api.get(f"{LINKS}/{link['id']}", token=acme_token), 404, "unknown link")
    assert_api_error(_send(api, "DELETE", f"{LINKS}/{link['id']}", {}, acme_token), 404, "unknown link")
    assert api.get(LINKS, token=acme_token).json()["data"] == []
    assert Click.objects.filter(link_id=link["id"]).count() == 1


@pytest.mark.django_db
def test_another_workspaces_link_is_unknown(api, acme_token, globex_token):
    theirs = _make(api, globex_token)
    path = f"{LINKS}/{theirs['id']}"
    assert_api_error(api.get(path, token=acme_token), 404, "unknown link")
    assert_api_error(
        _send(api, "PATCH", path, {"destination": "https://evil.example/"}, acme_token), 404, "unknown link"
    )
    assert_api_error(_send(api, "DELETE", path, {}, acme_token), 404, "unknown link")
    assert_api_error(
        api.post(LINKS, {"destination": "https://e.com/", "post_id": theirs["post_id"]}, token=acme_token),
        422,
        "unknown post",
    )
    assert Link.objects.get(pk=theirs["id"]).destination == "https://shop.example.com/a"


@pytest.mark.django_db
def test_scopes(api, acme):
    reader = api_token_create(workspace=acme, name="r", scopes=["links:read"]).secret
    writer = api_token_create(workspace=acme, name="w", scopes=["links:write"]).secret
    other = api_token_create(workspace=acme, name="o", scopes=["read"]).secret
    assert_api_error(api.post(LINKS, {"destination": "https://e.com/"}, token=reader), 403, "forbidden")
    assert api.post(LINKS, {"destination": "https://e.com/"}, token=writer).status_code == 201
    assert_api_error(api.get(LINKS, token=writer), 403, "forbidden")
    assert api.get(LINKS, token=reader).status_code == 200
    assert_api_error(api.get(LINKS, token=other), 403, "forbidden")


@pytest.mark.django_db
def test_writes_are_rate_limited_and_a_bulk_counts_once(api, acme_token):
    with override_settings(RATELIMIT_LINKS_TOKEN="2/m"):
        body = {"links": [{"destination": "https://e.com/"}] * 50}
        assert api.post(f"{LINKS}/bulk", body, token=acme_token).status_code == 201
        assert api.post(LINKS, {"destination": "https://e.com/"}, token=acme_token).status_code == 201
        assert_api_error(api.post(LINKS, {"destination": "https://e.com/"}, token=acme_token), 429, "rate_limited")
    assert Link.objects.count() == 51


@pytest.mark.django_db
def test_an_idempotency_key_reused_on_another_operation_is_refused(api, acme_token):
    body = {"destination": "https://e.com/1"}
    assert api.post(LINKS, body, token=acme_token, HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    resp = api.post(f"{LINKS}/bulk", {"links": [body]}, token=acme_token, HTTP_IDEMPOTENCY_KEY="k")
    assert_api_error(resp, 422, "idempotency key reused with a different body")
    assert Link.objects.count() == 1
