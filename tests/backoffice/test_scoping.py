"""Scoping: owners, editors, another workspace's user and superusers each see exactly their share."""

import pytest
from django.urls import reverse

from campaigns.models import CampaignPost, Enrollment
from customers.models import Customer
from tests.backoffice.conftest import client_for
from tests.factories import MembershipFactory, UserFactory
from workspaces.models import ApiToken, Membership, Workspace

pytestmark = pytest.mark.django_db

MODELS = [
    "workspaces.workspace",
    "workspaces.apitoken",
    "customers.customer",
    "clicks.post",
    "clicks.link",
    "conversions.conversionevent",
    "campaigns.campaign",
    "campaigns.enrollment",
    "campaigns.suppression",
    "campaigns.emailsend",
]
OWNER_ONLY = {"workspaces.workspace", "workspaces.apitoken"}


def url(model: str, view: str, *args) -> str:
    app, name = model.split(".")
    return reverse(f"admin:{app}_{name}_{view}", args=args)


def body(response) -> str:
    return response.content.decode().lower()


@pytest.mark.parametrize("model", MODELS)
def test_owner_lists_only_her_workspace(as_alice, acme_world, globex_world, model):
    response = as_alice.get(url(model, "changelist"))
    assert response.status_code == 200
    assert "acme" in body(response)
    assert "globex" not in body(response)


@pytest.mark.parametrize("model", MODELS)
def test_other_workspace_owner_lists_only_his(as_charlie, acme_world, globex_world, model):
    response = as_charlie.get(url(model, "changelist"))
    assert response.status_code == 200
    assert "globex" in body(response)
    assert "acme" not in body(response)


@pytest.mark.parametrize("model", MODELS)
def test_superuser_lists_every_workspace(as_root, acme_world, globex_world, model):
    response = as_root.get(url(model, "changelist"))
    assert response.status_code == 200
    assert "acme" in body(response) and "globex" in body(response)


@pytest.mark.parametrize("model", sorted(set(MODELS) - OWNER_ONLY))
def test_editor_browses_contacts_conversions_and_recipients(as_bob, acme_world, globex_world, model):
    response = as_bob.get(url(model, "changelist"))
    assert response.status_code == 200
    assert "acme" in body(response) and "globex" not in body(response)
    response = as_bob.get(url(model, "change", acme_world.objects()[model].pk))
    assert response.status_code == 200
    assert "globex" not in body(response)


@pytest.mark.parametrize("model", [*sorted(OWNER_ONLY), "workspaces.membership"])
def test_editor_cannot_see_tokens_settings_or_members(as_bob, acme_world, model):
    assert as_bob.get(url(model, "changelist")).status_code == 403
    if model in OWNER_ONLY:
        response = as_bob.get(url(model, "change", acme_world.objects()[model].pk))
        assert response.status_code in (302, 403)
        assert acme_world.token.prefix not in response.content.decode()


def test_editor_cannot_create_or_revoke_tokens(as_bob, acme_world):
    assert as_bob.get(reverse("admin:workspaces_apitoken_add")).status_code == 403
    assert as_bob.post(reverse("admin:workspaces_apitoken_add"), {"name": "x"}).status_code == 403
    response = as_bob.post(reverse("admin:workspaces_apitoken_revoke", args=[acme_world.token.pk]), {"confirm": "yes"})
    assert response.status_code in (302, 403)
    assert ApiToken.objects.get(pk=acme_world.token.pk).revoked_at is None
    assert ApiToken.objects.filter(workspace=acme_world.workspace).count() == 1


def test_index_shows_each_role_its_sections(as_alice, as_bob):
    alice_index, bob_index = body(as_alice.get("/admin/")), body(as_bob.get("/admin/"))
    for section in ("contacts", "api tokens", ">settings<", ">members<", ">recipients<"):
        assert section in alice_index
    assert "contacts" in bob_index and ">recipients<" in bob_index and ">conversions<" in bob_index
    assert "api tokens" not in bob_index and ">members<" not in bob_index and ">settings<" not in bob_index


def test_staff_without_membership_sees_nothing(acme_world):
    stranger = client_for(UserFactory(username="stranger"))
    assert "contacts" not in body(stranger.get("/admin/"))
    assert stranger.get(url("customers.customer", "changelist")).status_code == 403


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("view", ["change", "delete", "history"])
def test_editing_the_id_in_the_url_never_reaches_another_workspace(as_alice, acme_world, globex_world, model, view):
    target = globex_world.objects()[model]
    response = as_alice.get(url(model, view, target.pk))
    assert "globex" not in body(response)
    if view == "delete" and model != "workspaces.membership":
        # Rows nobody may delete (history is kept) answer 403 before any lookup.
        assert response.status_code == 403
        return
    assert response.status_code == 302
    assert response.url == reverse("admin:index")
    assert "globex" not in body(as_alice.get(response.url))


@pytest.mark.parametrize("model", MODELS)
def test_posting_to_another_workspaces_row_changes_and_deletes_nothing(as_alice, acme_world, globex_world, model):
    target = globex_world.objects()[model]
    as_alice.post(url(model, "change", target.pk), {"name": "Hacked", "title": "Hacked", "allowed_origins": ""})
    as_alice.post(url(model, "delete", target.pk), {"post": "yes"})
    reloaded = type(target).objects.get(pk=target.pk)
    assert getattr(reloaded, "name", None) != "Hacked" and getattr(reloaded, "title", None) != "Hacked"


def test_revoke_screen_of_a_foreign_token_redirects(as_alice, globex_world):
    response = as_alice.post(
        reverse("admin:workspaces_apitoken_revoke", args=[globex_world.token.pk]), {"confirm": "yes"}
    )
    assert response.status_code == 302 and response.url == reverse("admin:index")
    assert ApiToken.objects.get(pk=globex_world.token.pk).revoked_at is None


def test_revoke_action_with_foreign_ids_touches_only_own_tokens(as_alice, acme_world, globex_world):
    response = as_alice.post(
        reverse("admin:workspaces_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [acme_world.token.pk, globex_world.token.pk], "confirm": "yes"},
    )
    assert response.status_code == 302
    assert ApiToken.objects.get(pk=acme_world.token.pk).revoked_at is not None
    assert ApiToken.objects.get(pk=globex_world.token.pk).revoked_at is None


@pytest.mark.parametrize("who", ["as_alice", "as_bob", "as_root"])
def test_contacts_are_never_deleted_from_the_admin(request, who, acme_world):
    # Deleting a contact would take enrollments, sends and campaign leads with it.
    contact = acme_world.contact
    assert (
        request.getfixturevalue(who).post(url("customers.customer", "delete", contact.pk), {"post": "yes"}).status_code
        == 403
    )
    assert Customer.objects.filter(pk=contact.pk).exists()


def test_foreign_key_choices_hold_only_own_workspace_rows(as_alice, acme_world, globex_world):
    page = as_alice.get(url("clicks.post", "change", acme_world.post.pk))
    assert page.status_code == 200 and "globex" not in body(page)
    response = as_alice.post(
        url("clicks.post", "change", acme_world.post.pk),
        {
            "title": "Renamed",
            "campaign": globex_world.campaign.pk,
            "links-TOTAL_FORMS": 1,
            "links-INITIAL_FORMS": 1,
            "links-MIN_NUM_FORMS": 0,
            "links-MAX_NUM_FORMS": 1000,
            "links-0-id": acme_world.link.pk,
            "links-0-post": acme_world.post.pk,
        },
    )
    assert response.status_code == 200  # the form again, with an error
    assert "select a valid choice" in body(response)
    acme_world.post.refresh_from_db()
    assert acme_world.post.title != "Renamed" and not CampaignPost.objects.filter(post=acme_world.post).exists()


def test_autocomplete_searches_only_own_workspace(as_alice, acme_world, globex_world):
    params = {"app_label": "conversions", "model_name": "conversionevent", "field_name": "customer", "term": "ada"}
    assert [row["text"] for row in as_alice.get("/admin/autocomplete/", params).json()["results"]] == [
        "acme-ada@example.com"
    ]


def test_list_filters_never_name_another_workspaces_rows(as_alice, acme_world, globex_world):
    page = body(as_alice.get(url("campaigns.enrollment", "changelist")))
    assert "acme spring campaign" in page and "globex spring campaign" not in page
    tampered = as_alice.get(
        url("campaigns.enrollment", "changelist"), {"campaign__id__exact": globex_world.campaign.pk}
    )
    assert "globex" not in body(tampered) and "0 enrollments" in body(tampered)
    tampered = as_alice.get(url("customers.customer", "changelist"), {"workspace": globex_world.workspace.pk})
    assert "globex" not in body(tampered)


@pytest.fixture
def dave(acme, globex):
    """Owner of acme, only an editor of globex."""
    user = UserFactory(username="dave")
    MembershipFactory(user=user, workspace=acme, role=Membership.Role.OWNER)
    MembershipFactory(user=user, workspace=globex, role=Membership.Role.EDITOR)
    return user


def test_roles_are_per_workspace(dave, acme_world, globex_world):
    client = client_for(dave)
    contacts = body(client.get(url("customers.customer", "changelist")))
    assert "acme-ada" in contacts and "globex-ada" in contacts  # an editor of globex still browses it
    tokens = body(client.get(url("workspaces.apitoken", "changelist")))
    assert "acme server" in tokens and "globex server" not in tokens
    assert client.get(url("workspaces.apitoken", "change", globex_world.token.pk)).status_code == 302
    assert client.post(url("customers.customer", "delete", globex_world.contact.pk), {"post": "yes"}).status_code == 403
    assert Customer.objects.filter(pk=globex_world.contact.pk).exists()
    response = client.post(
        url("customers.customer", "changelist"),
        {"action": "delete_selected", "_selected_action": [globex_world.contact.pk], "post": "yes"},
    )
    assert Customer.objects.filter(pk=globex_world.contact.pk).exists(), response
    settings_page = client.get(url("workspaces.workspace", "change", globex_world.workspace.pk))
    assert settings_page.status_code == 302
    assert Workspace.objects.get(pk=globex_world.workspace.pk).name == "Globex"
    assert Enrollment.objects.get(pk=globex_world.enrollment.pk).state == "active"


def test_autocomplete_never_lists_users_to_owners(as_alice, charlie):
    params = {"app_label": "workspaces", "model_name": "membership", "field_name": "user", "term": "char"}
    response = as_alice.get("/admin/autocomplete/", params)
    assert response.status_code == 403 and "charlie" not in response.content.decode()
