"""Members: owners invite by email (the person accepts), change roles and remove members; a workspace keeps an owner."""

from datetime import timedelta

import pytest
from django.urls import reverse

from tests.conftest import form_of
from workspaces.models import Invitation, Membership

pytestmark = pytest.mark.django_db

INVITE = reverse("admin:workspaces_invitation_add")
LIST = reverse("admin:workspaces_membership_changelist")


def membership(user, workspace) -> Membership:
    return Membership.objects.get(user=user, workspace=workspace)


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
    response = as_alice.post(
        INVITE, form_of(as_alice, INVITE, workspace=globex.pk, email="mallory@example.com", role="owner")
    )
    assert response.status_code == 200  # the form again: globex is not a choice
    assert not Invitation.objects.exists()


def test_editors_cannot_manage_members(as_bob, acme, alice):
    assert as_bob.get(LIST).status_code == 403
    assert as_bob.post(INVITE, {"workspace": acme.pk, "email": "x@example.com", "role": "owner"}).status_code == 403
    theirs = membership(alice, acme)
    as_bob.post(reverse("admin:workspaces_membership_delete", args=[theirs.pk]), {"post": "yes"})
    assert Membership.objects.filter(pk=theirs.pk).exists()


def test_members_join_by_invitation_only(as_alice, acme):
    page = as_alice.get(LIST).content.decode()
    assert INVITE in page
    assert as_alice.get(reverse("admin:workspaces_membership_add")).status_code == 403


def test_the_invitation_form_answers_the_same_whether_an_account_exists(as_alice, acme, charlie, mailoutbox, commits):
    with commits(execute=True):
        known = as_alice.post(
            INVITE, form_of(as_alice, INVITE, workspace=acme.pk, email=charlie.email, role="editor"), follow=True
        )
        unknown = as_alice.post(
            INVITE, form_of(as_alice, INVITE, workspace=acme.pk, email="nobody@example.com", role="editor"), follow=True
        )
    for response, email in ((known, charlie.email), (unknown, "nobody@example.com")):
        assert f"Invitation sent to {email}." in response.content.decode()
    assert [message.to for message in mailoutbox] == [[charlie.email], ["nobody@example.com"]]
    assert not Membership.objects.filter(user=charlie, workspace=acme).exists()  # not until they accept


def test_an_invitee_with_an_account_accepts_and_joins_with_the_role(
    as_alice, acme, charlie, mailoutbox, client, commits
):
    with commits(execute=True):
        as_alice.post(INVITE, form_of(as_alice, INVITE, workspace=acme.pk, email=charlie.email, role="owner"))
    link = next(line for line in mailoutbox[0].body.splitlines() if "/invite/" in line)
    path = link.split("://", 1)[1].split("/", 1)[1]
    client.force_login(charlie)
    assert client.post("/" + path, {"accept": "1"}).status_code == 302
    assert membership(charlie, acme).role == "owner"
    assert client.post("/" + path, {"accept": "1"}).status_code == 400  # once


def test_a_cancelled_or_expired_invitation_is_refused(as_alice, acme, mailoutbox, client, commits):
    import time_machine
    from django.utils import timezone

    with commits(execute=True):
        as_alice.post(INVITE, form_of(as_alice, INVITE, workspace=acme.pk, email="erin@example.com", role="editor"))
    path = (
        "/"
        + next(line for line in mailoutbox[0].body.splitlines() if "/invite/" in line)
        .split("://", 1)[1]
        .split("/", 1)[1]
    )
    with time_machine.travel(timezone.now() + timedelta(days=8)):
        assert client.get(path).status_code == 400
    invitation = Invitation.objects.get()
    as_alice.post(
        reverse("admin:workspaces_invitation_changelist"),
        {"action": "cancel_invitations", "_selected_action": [invitation.pk]},
    )
    assert client.get(path).status_code == 400
    assert Invitation.objects.get().cancelled_at is not None


@pytest.fixture
def commits(django_capture_on_commit_callbacks):
    """Runs what the request left for after its commit (the invitation's email)."""
    return django_capture_on_commit_callbacks


def test_an_editor_refused_a_page_gets_the_back_office_frame_and_a_way_back(as_bob):
    response = as_bob.get(LIST)
    page = response.content.decode()
    assert response.status_code == 403
    assert "This page is for the workspace" in page and 'href="/admin/"' in page and 'id="site-name"' in page


def test_an_invitation_form_sent_twice_mails_once(as_alice, acme, mailoutbox, commits):
    data = form_of(as_alice, INVITE, workspace=acme.pk, email="erin@example.com", role="editor")
    with commits(execute=True):
        as_alice.post(INVITE, data)
        as_alice.post(INVITE, data)
    assert Invitation.objects.count() == 1 and len(mailoutbox) == 1
