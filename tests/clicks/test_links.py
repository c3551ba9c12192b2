"""clicks/links.py: UTM composing, tags, the history of changes, and what the redirect does with archived, deleted and
expired links (time travelled with time-machine)."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from clicks.links import link_add, link_archive, link_delete, link_update, utm_compose
from clicks.models import Click, LinkChange, Tag
from conversions.services import conversion_record
from lftrack.errors import Unprocessable

pytestmark = pytest.mark.django_db


def _click_id(resp) -> str:
    return resp["Location"].split("lf_cid=")[1].split("#")[0]


@pytest.mark.parametrize(
    ("destination", "utm", "composed"),
    [
        ("https://e.com/", {"utm_source": "x"}, "https://e.com/?utm_source=x"),
        ("https://e.com/?a=1&b=2#f", {"utm_source": "x"}, "https://e.com/?a=1&b=2&utm_source=x#f"),
        ("https://e.com/?utm_source=a&utm_source=b", {"utm_source": "c"}, "https://e.com/?utm_source=c"),
        ("https://e.com/?utm_medium=m&x=1", {"utm_medium": ""}, "https://e.com/?x=1"),
        ("https://e.com/?x=1", {"utm_term": "a b&c"}, "https://e.com/?x=1&utm_term=a+b%26c"),
    ],
)
def test_utm_fields_compose_without_duplicates(destination, utm, composed):
    assert utm_compose(destination, utm) == composed


def test_tags_are_per_workspace_and_matched_whatever_their_case(acme, globex):
    first = link_add(workspace=acme, destination="https://e.com/", tags=["Spring"])
    second = link_add(workspace=acme, destination="https://e.com/", tags=["spring", "SALE"])
    link_add(workspace=globex, destination="https://e.com/", tags=["spring"])
    assert {t.name for t in first.tags.all()} == {"Spring"}
    assert {t.name for t in second.tags.all()} == {"Spring", "SALE"}
    assert Tag.objects.filter(workspace=acme).count() == 2 and Tag.objects.filter(workspace=globex).count() == 1
    with pytest.raises(Unprocessable, match="at most 20 tags"):
        link_add(workspace=acme, destination="https://e.com/", tags=[f"t{i}" for i in range(21)])


def test_every_change_is_kept_with_who_and_when(acme, alice):
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as clock:
        link = link_add(workspace=acme, destination="https://e.com/a", key="spring")
        clock.shift(timedelta(hours=1))
        link_update(link=link, changes={"destination": "https://e.com/b", "tags": ["x"]}, user=alice)
        clock.shift(timedelta(days=2))
        link_update(link=link, changes={"expires_at": start + timedelta(days=30), "key": "spring"}, user=alice)
        link_update(link=link, changes={"destination": "https://e.com/b"}, user=alice)  # nothing changes: no row
        link_archive(link=link, user=alice)
    changes = list(LinkChange.objects.filter(link=link).order_by("changed_at", "pk"))
    assert [(c.changed_at, c.user, c.before, c.after) for c in changes] == [
        (
            start + timedelta(hours=1),
            alice,
            {"destination": "https://e.com/a", "tags": []},
            {"destination": "https://e.com/b", "tags": ["x"]},
        ),
        (start + timedelta(days=2, hours=1), alice, {"expires_at": None}, {"expires_at": "2026-03-31T09:00:00+00:00"}),
        (start + timedelta(days=2, hours=1), alice, {"archived": False}, {"archived": True}),
    ]


def test_a_taken_key_changes_nothing(acme):
    link_add(workspace=acme, destination="https://e.com/", key="taken")
    link = link_add(workspace=acme, destination="https://e.com/a")
    with pytest.raises(Unprocessable, match="key is taken: taken"):
        link_update(link=link, changes={"key": "taken", "destination": "https://e.com/z"})
    link.refresh_from_db()
    assert link.destination == "https://e.com/a" and not LinkChange.objects.exists()


def test_the_redirect_follows_a_change_at_once(acme, client):
    link = link_add(workspace=acme, destination="https://e.com/a", key="promo")
    assert client.get("/l/promo")["Location"].startswith("https://e.com/a?lf_cid=")
    link_update(link=link, changes={"destination": "https://e.com/b", "key": "promo2"})
    assert client.get("/l/promo").status_code == 404
    assert client.get("/l/promo2")["Location"].startswith("https://e.com/b?lf_cid=")


def test_an_archived_link_still_redirects(acme, client):
    link = link_add(workspace=acme, destination="https://e.com/a", key="old")
    link_archive(link=link)
    assert client.get("/l/old").status_code == 302 and Click.objects.count() == 1


def test_a_deleted_link_is_404_or_the_workspace_fallback_and_keeps_its_clicks(acme, client):
    link = link_add(workspace=acme, destination="https://e.com/a", key="gone", fallback_url="https://e.com/own")
    client.get("/l/gone")
    link_delete(link=link)
    assert client.get("/l/gone").status_code == 404
    assert client.head("/l/gone").status_code == 404
    acme.link_fallback_url = "https://e.com/sorry"
    acme.save()
    resp = client.get("/l/gone")
    assert (resp.status_code, resp["Location"]) == (302, "https://e.com/sorry")
    assert client.head("/l/gone")["Location"] == "https://e.com/sorry"
    assert Click.objects.filter(link=link).count() == 1  # the one before the delete, still counted
    with pytest.raises(Unprocessable, match="key is taken"):
        link_add(workspace=acme, destination="https://e.com/", key="gone")


def test_an_expired_link_sends_to_its_fallback_records_nothing_and_its_click_ids_stay_valid(acme, client):
    # The redirect reads the database's clock: the link is made in the past, to expire an hour later (still past).
    made = timezone.now() - timedelta(hours=3)
    with time_machine.travel(made, tick=False):
        link = link_add(
            workspace=acme,
            destination="https://e.com/a",
            key="flash",
            expires_at=made + timedelta(hours=1),
            fallback_url="https://e.com/over",
        )
        assert link.expires_at > timezone.now()
    assert Click.objects.count() == 0
    resp = client.get("/l/flash")
    assert (resp.status_code, resp["Location"]) == (302, "https://e.com/over")
    assert client.head("/l/flash")["Location"] == "https://e.com/over"
    assert Click.objects.count() == 0
    link_update(link=link, changes={"fallback_url": ""})
    assert client.get("/l/flash").status_code == 404

    link_update(link=link, changes={"expires_at": timezone.now() + timedelta(hours=1)})
    click_id = _click_id(client.get("/l/flash"))
    link_update(link=link, changes={"expires_at": timezone.now() - timedelta(seconds=1)})
    assert client.get("/l/flash").status_code == 404 and Click.objects.count() == 1
    lead = conversion_record(workspace=acme, channel="api", event="lead", click_id=click_id)
    assert lead.link_id == link.pk
