"""Members: owners add existing users by name or email, change roles and remove them; a workspace keeps an owner."""
import pytest
from django.urls import reverse

from tests.factories import UserFactory
from workspaces.models import Membership

pytestmark = pytest.mark.django_db

ADD = reverse("admin:workspaces_membership_add")
LIST = reverse("admin:workspaces_membership_changelist")


def membership(user, workspace) -> Membership:
    return Membership.objects.get(user=user, workspace=workspace)


def test_owner_adds_an_existing_user_by_email_and_they_become_staff(as_alice, acme):
    erin = UserFactory(username="erin", email="Erin@Example.com", is_staff=False)
    response = as_alice.post(ADD, {"workspace": acme.pk, "user_name": "erin@example.com", "role": "editor"})
    assert response.status_code == 302
    assert membership(erin, acme).role == "editor"
    erin.refresh_from_db()
    assert erin.is_staff


def test_unknown_user_or_existing_member_is_a_form_error(as_alice, acme, bob):
    response = as_alice.post(ADD, {"workspace": acme.pk, "user_name": "nobody", "role": "editor"})
    assert "No single active user" in response.content.decode()
    response = as_alice.post(ADD, {"workspace": acme.pk, "user_name": "bob", "role": "owner"})
    assert "Already a member" in response.content.decode()
    assert membership(bob, acme).role == "editor"


def test_the_add_form_never_lists_users(as_alice, charlie):
    page = as_alice.get(ADD).content.decode()
    assert "charlie" not in page


def test_owner_changes_a_role_and_removes_a_member(as_alice, acme, bob):
    change = reverse("admin:workspaces_membership_change", args=[membership(bob, acme).pk])
    assert as_alice.post(change, {"role": "owner"}).status_code == 302
    assert membership(bob, acme).role == "owner"
    delete = reverse("admin:workspaces_membership_delete", args=[membership(bob, acme).pk])
    assert as_alice.post(delete, {"post": "yes"}).status_code == 302
    assert not Membership.objects.filter(user=bob, workspace=acme).exists()


def test_the_last_owner_can_neither_step_down_nor_leave(as_alice, alice, acme):
    mine = membership(alice, acme)
    change = reverse("admin:workspaces_membership_change", args=[mine.pk])
    response = as_alice.post(change, {"role": "editor"}, follow=True)
    assert "a workspace needs at least one owner" in response.content.decode().lower()
    assert membership(alice, acme).role == "owner"
    delete = reverse("admin:workspaces_membership_delete", args=[mine.pk])
    response = as_alice.post(delete, {"post": "yes"}, follow=True)
    assert "a workspace needs at least one owner" in response.content.decode().lower()
    assert membership(alice, acme).role == "owner"


def test_members_of_another_workspace_are_out_of_reach(as_alice, acme, charlie, globex):
    theirs = membership(charlie, globex)
    for view in ("change", "delete", "history"):
        response = as_alice.get(reverse(f"admin:workspaces_membership_{view}", args=[theirs.pk]))
        assert response.status_code == 302 and "charlie" not in response.content.decode()
    as_alice.post(reverse("admin:workspaces_membership_change", args=[theirs.pk]), {"role": "editor"})
    as_alice.post(reverse("admin:workspaces_membership_delete", args=[theirs.pk]), {"post": "yes"})
    assert membership(charlie, globex).role == "owner"
    assert "charlie" not in as_alice.get(LIST).content.decode()
    response = as_alice.post(ADD, {"workspace": globex.pk, "user_name": "alice", "role": "owner"})
    assert response.status_code == 200
    assert not Membership.objects.filter(user__username="alice", workspace=globex).exists()


def test_editors_cannot_manage_members(as_bob, acme, alice):
    assert as_bob.get(LIST).status_code == 403
    assert as_bob.post(ADD, {"workspace": acme.pk, "user_name": "bob", "role": "owner"}).status_code == 403
    theirs = membership(alice, acme)
    as_bob.post(reverse("admin:workspaces_membership_delete", args=[theirs.pk]), {"post": "yes"})
    assert Membership.objects.filter(pk=theirs.pk).exists()
