"""clicks/links.py under real races on PostgreSQL: a new tag made by many at once, one key wanted by many, and
editors changing one link at the same moment."""

import itertools

import pytest

from clicks.links import link_add, link_update
from clicks.models import Link, LinkChange, Tag
from lftrack.errors import Unprocessable
from tests.conftest import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_new_tag_made_by_eight_at_once_is_one_tag(acme):
    results = run_in_threads(8, lambda i: link_add(workspace=acme, destination=f"https://e.com/{i}", tags=["Launch"]))
    assert all(isinstance(link, Link) for link in results), results
    assert Tag.objects.filter(workspace=acme).count() == 1
    assert Link.objects.filter(tags__name="Launch").count() == 8


def test_one_key_wanted_by_eight_at_once_goes_to_one(acme):
    results = run_in_threads(8, lambda i: link_add(workspace=acme, destination=f"https://e.com/{i}", key="launch"))
    made = [r for r in results if isinstance(r, Link)]
    refused = [r for r in results if isinstance(r, Unprocessable)]
    assert len(made) == 1 and len(refused) == 7, results
    assert all(r.message == "key is taken: launch" for r in refused)
    assert Link.objects.count() == 1


def test_editors_changing_one_link_at_once_each_leave_a_true_history(acme):
    link = link_add(workspace=acme, destination="https://e.com/0")
    results = run_in_threads(6, lambda i: link_update(link=link, changes={"destination": f"https://e.com/{i + 1}"}))
    assert all(isinstance(r, Link) for r in results), results
    changes = list(LinkChange.objects.filter(link=link).order_by("pk"))
    assert len(changes) == 6
    # One after the other (the row is locked): each change starts where the previous one ended.
    for previous, change in itertools.pairwise(changes):
        assert change.before["destination"] == previous.after["destination"]
    assert changes[0].before["destination"] == "https://e.com/0"
    link.refresh_from_db()
    assert link.destination == changes[-1].after["destination"]
