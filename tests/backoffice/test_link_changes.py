"""The back office's link page: owners and editors change a link, its history shows each change; archive and delete."""

import pytest
from django.urls import reverse

from clicks.links import link_add, link_archive, link_delete, link_update
from clicks.models import Click, Link, LinkChange
from tests.conftest import form_of

pytestmark = pytest.mark.django_db


def _form(link: Link, **changes) -> dict:
    data = {
        "destination": link.destination,
        "key": link.key,
        "tag_names": ", ".join(sorted(t.name for t in link.tags.all())),
        "expires_at_0": "",
        "expires_at_1": "",
        "fallback_url": link.fallback_url,
        **{
            name: getattr(link, name)
            for name in ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
        },
    }
    return {**data, **changes}


def test_an_editor_changes_a_link_and_the_history_shows_it(as_bob, bob, acme, acme_token, client):
    link = link_add(workspace=acme, destination="https://e.com/a", key="promo", tags=["old"])
    link_update(link=link, changes={"utm_source": "ig"}, token=acme_token)
    page = reverse("admin:clicks_link_change", args=[link.pk])
    resp = as_bob.post(page, _form(Link.objects.get(pk=link.pk), destination="https://e.com/b", tag_names="new, Old"))
    assert resp.status_code == 302, resp.content.decode()[:3000]
    link.refresh_from_db()
    assert link.destination == "https://e.com/b?utm_source=ig"
    assert sorted(t.name for t in link.tags.all()) == ["new", "old"]
    change = LinkChange.objects.filter(user=bob).get()
    assert change.before == {"destination": "https://e.com/a?utm_source=ig", "tags": ["old"]}
    assert change.after == {"destination": "https://e.com/b?utm_source=ig", "tags": ["new", "old"]}
    html = as_bob.get(page).content.decode()
    assert "bob" in html and "https://e.com/a?utm_source=ig → https://e.com/b?utm_source=ig" in html
    assert f"API token {acme_token}" in html
    assert client.get("/l/promo")["Location"].startswith("https://e.com/b?utm_source=ig&lf_cid=")


def test_a_refused_key_is_an_error_on_the_form_and_changes_nothing(as_bob, acme):
    link = link_add(workspace=acme, destination="https://e.com/a", key="promo")
    link_add(workspace=acme, destination="https://e.com/z", key="taken")
    page = reverse("admin:clicks_link_change", args=[link.pk])
    for key, message in [("no spaces", "key must be 1 to 64 letters, digits, - or _"), ("admin", "key is reserved")]:
        resp = as_bob.post(page, _form(link, key=key))
        assert resp.status_code == 200 and message in resp.content.decode()
    resp = as_bob.post(page, _form(link, key="taken"))
    assert resp.status_code == 200 and "already exists" in resp.content.decode()
    link.refresh_from_db()
    assert link.key == "promo" and not LinkChange.objects.exists()


def test_another_workspaces_link_is_out_of_reach(as_bob, globex):
    theirs = link_add(workspace=globex, destination="https://e.com/a", key="theirs")
    page = reverse("admin:clicks_link_change", args=[theirs.pk])
    resp = as_bob.post(page, _form(theirs, destination="https://evil.example/"))
    assert resp.status_code in (302, 404)
    theirs.refresh_from_db()
    assert theirs.destination == "https://e.com/a"


def test_archive_hides_from_the_list_and_delete_stops_the_redirect(as_alice, acme, client):
    kept = link_add(workspace=acme, destination="https://e.com/kept", key="kept")
    old = link_add(workspace=acme, destination="https://e.com/old", key="old")
    gone = link_add(workspace=acme, destination="https://e.com/gone", key="gone")
    client.get("/l/gone")
    changelist = reverse("admin:clicks_link_changelist")
    as_alice.post(changelist, {"action": "archive_links", "_selected_action": [old.pk]})
    as_alice.post(changelist, {"action": "delete_links", "_selected_action": [gone.pk]})
    listed = {link.pk for link in as_alice.get(changelist).context["cl"].result_list}
    assert listed == {kept.pk}
    assert {link.pk for link in as_alice.get(changelist, {"archived": "yes"}).context["cl"].result_list} == {old.pk}
    assert client.get("/l/old").status_code == 302
    assert client.get("/l/gone").status_code == 404
    assert Click.objects.filter(link=gone).count() == 1
    assert "delete_selected" not in as_alice.get(changelist).context["action_form"].fields["action"].choices.__repr__()


def test_the_list_filters_by_tag(as_bob, acme):
    shoes = link_add(workspace=acme, destination="https://e.com/shoes", tags=["shoes"])
    link_add(workspace=acme, destination="https://e.com/hats", tags=["hats"])
    tag = shoes.tags.get()
    resp = as_bob.get(reverse("admin:clicks_link_changelist"), {"tags__id__exact": tag.pk})
    assert [link.pk for link in resp.context["cl"].result_list] == [shoes.pk]


def test_an_owner_sets_the_fallback_page_of_deleted_links(as_alice, acme, client):
    link = link_add(workspace=acme, destination="https://e.com/a", key="gone")
    link_delete(link=link)
    page = reverse("admin:workspaces_workspace_change", args=[acme.pk])
    form = {"name": "Acme", "allowed_origins": "", "currency": "USD"}
    resp = as_alice.post(page, {**form, "link_fallback_url": "ftp://e.com/x"})
    assert resp.status_code == 200 and "Enter a valid URL" in resp.content.decode()
    assert as_alice.post(page, {**form, "link_fallback_url": "https://e.com/sorry"}).status_code == 302
    assert client.get("/l/gone")["Location"] == "https://e.com/sorry"


def test_an_owner_makes_a_link_with_a_chosen_key_and_tags(as_alice, acme):
    add = reverse("admin:clicks_link_add")
    form = form_of(as_alice, add, workspace=acme.pk, destination="https://e.com/a", key="Launch", tag_names="a, b")
    assert as_alice.post(add, form).status_code == 302
    link = Link.objects.get(key="Launch")
    assert sorted(t.name for t in link.tags.all()) == ["a", "b"]
    form = form_of(as_alice, add, workspace=acme.pk, destination="https://e.com/a", key="Launch")
    resp = as_alice.post(add, form)
    assert resp.status_code == 200 and "key is taken: Launch" in resp.content.decode()
    assert Link.objects.count() == 1


def test_the_post_page_marks_its_deleted_and_archived_links(as_bob, acme):
    kept = link_add(workspace=acme, destination="https://e.com/a", post_title="Launch", key="kept")
    link_archive(link=link_add(workspace=acme, destination="https://e.com/b", post_title="Launch", key="old"))
    link_delete(link=link_add(workspace=acme, destination="https://e.com/c", post_title="Launch", key="gone"))
    page = as_bob.get(reverse("admin:clicks_post_change", args=[kept.post_id])).content.decode()
    assert (
        "/l/kept</a> (" not in page
        and "/l/kept</a>" in page
        and "/l/old</a> (archived)" in page
        and "/l/gone</a> (deleted)" in page
    )
