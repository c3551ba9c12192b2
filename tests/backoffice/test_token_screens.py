"""Settings › Connect your site › Manage tokens: create (secret shown once), list, revoke; the API follows."""

import hashlib
import re

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils.html import escape

from tests.conftest import assert_api_error
from tests.factories import ClickFactory
from workspaces.models import ApiToken

pytestmark = pytest.mark.django_db

ADD = reverse("admin:workspaces_apitoken_add")
LIST = reverse("admin:workspaces_apitoken_changelist")
SECRET_RE = re.compile(r'id="token-secret" value="(lf_[A-Za-z0-9_-]{43})"')


def nonce_of(page) -> str:
    return re.search(r'name="nonce" value="([^"]+)"', page.content.decode()).group(1)


def create_token(client, workspace, name="Checkout server"):
    form = client.get(ADD)
    assert form.status_code == 200
    response = client.post(ADD, {"workspace": workspace.pk, "name": name, "nonce": nonce_of(form)})
    assert response.status_code == 200
    return response, SECRET_RE.search(response.content.decode()).group(1)


def everything_stored(client) -> str:
    """Every place a secret could hide after the page: sessions, cookies (messages included)."""
    sessions = " ".join(str(s.get_decoded()) + s.session_data for s in Session.objects.all())
    cookies = " ".join(morsel.value for morsel in client.cookies.values())
    return sessions + cookies


def test_created_token_is_shown_once_and_only_its_digest_is_stored(as_alice, acme):
    response, secret = create_token(as_alice, acme)
    page = response.content.decode()
    assert "shown only once" in page and 'data-copy="token-secret"' in page
    assert response["Cache-Control"].startswith("max-age=0") and "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get(workspace=acme, name="Checkout server")
    assert token.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert token.prefix == secret[3:11]
    assert token.created_by.username == "alice"
    assert secret not in str(ApiToken.objects.filter(pk=token.pk).values().first())
    assert secret not in everything_stored(as_alice)
    # Never again: not on the list, the token's page, or its history.
    for path in (
        LIST,
        reverse("admin:workspaces_apitoken_change", args=[token.pk]),
        reverse("admin:workspaces_apitoken_history", args=[token.pk]),
    ):
        later = as_alice.get(path)
        assert later.status_code == 200
        assert secret not in later.content.decode()
    assert f"lf_{token.prefix}…" in as_alice.get(LIST).content.decode()


def test_created_token_works_on_the_api(as_alice, acme, api):
    _, secret = create_token(as_alice, acme)
    click = ClickFactory(link__post__workspace=acme)
    response = api.post("/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=secret)
    assert response.status_code == 201


def test_resubmitting_the_create_form_makes_no_second_token(as_alice, acme):
    form = as_alice.get(ADD)
    data = {"workspace": acme.pk, "name": "Once", "nonce": nonce_of(form)}
    assert as_alice.post(ADD, data).status_code == 200
    again = as_alice.post(ADD, data)
    assert again.status_code == 302 and again.url == LIST
    assert ApiToken.objects.filter(name="Once").count() == 1


def test_create_form_needs_a_name_and_an_own_workspace(as_alice, acme, globex):
    form = as_alice.get(ADD)
    response = as_alice.post(ADD, {"workspace": acme.pk, "name": "", "nonce": nonce_of(form)})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    response = as_alice.post(ADD, {"workspace": globex.pk, "name": "Sneaky", "nonce": nonce_of(form)})
    assert response.status_code == 200 and "token-secret" not in response.content.decode()
    assert not ApiToken.objects.exists()


def test_token_list_shows_name_prefix_dates_status_key_and_snippet(as_alice, acme_world, settings):
    acme = acme_world.workspace
    page = as_alice.get(LIST).content.decode()
    assert "Manage tokens" in page and "Create token" in page
    for text in (
        "Acme server",
        f"lf_{acme_world.token.prefix}…",
        "Active",
        acme.tracking_key,
        "Last used",
        "Created",
        "never",
    ):
        assert text in page, text
    snippet = f'<script src="{settings.PUBLIC_BASE_URL}/lf.js" data-key="{acme.tracking_key}" defer></script>'
    assert escape(snippet) in page


def test_revoke_asks_for_confirmation_then_the_api_answers_401(as_alice, acme_world, api):
    token = acme_world.token
    click = ClickFactory(link__post__workspace=acme_world.workspace)
    lead = {"event": "lead", "click_id": click.click_id}
    assert api.post("/api/v1/conversions", lead, token=token.secret).status_code == 201
    page = as_alice.get(reverse("admin:workspaces_apitoken_change", args=[token.pk])).content.decode()
    revoke_url = reverse("admin:workspaces_apitoken_revoke", args=[token.pk])
    assert revoke_url in page
    confirm = as_alice.get(revoke_url)
    assert confirm.status_code == 200 and "Yes, revoke" in confirm.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None  # a GET revokes nothing
    done = as_alice.post(revoke_url, {"confirm": "yes"})
    assert done.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert_api_error(api.post("/api/v1/conversions", lead, token=acme_world.token.secret), 401, "unauthorized")
    listing = as_alice.get(LIST + "?status=revoked").content.decode()
    assert "Acme server" in listing and "Revoked" in listing
    assert revoke_url not in as_alice.get(reverse("admin:workspaces_apitoken_change", args=[token.pk])).content.decode()


def test_revoke_action_confirms_then_revokes_the_selection(as_alice, acme_world, api):
    data = {"action": "revoke_tokens", "_selected_action": [acme_world.token.pk]}
    confirm = as_alice.post(LIST, data)
    assert confirm.status_code == 200 and "Yes, revoke" in confirm.content.decode()
    assert ApiToken.objects.get(pk=acme_world.token.pk).revoked_at is None
    done = as_alice.post(LIST, {**data, "confirm": "yes"})
    assert done.status_code == 302
    assert ApiToken.objects.get(pk=acme_world.token.pk).revoked_at is not None
    click = ClickFactory(link__post__workspace=acme_world.workspace)
    response = api.post(
        "/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=acme_world.token.secret
    )
    assert_api_error(response, 401, "unauthorized")


def test_tokens_are_never_edited_or_deleted(as_alice, as_root, acme_world):
    change = reverse("admin:workspaces_apitoken_change", args=[acme_world.token.pk])
    for client in (as_alice, as_root):
        assert client.post(change, {"name": "renamed"}).status_code == 403
        delete = reverse("admin:workspaces_apitoken_delete", args=[acme_world.token.pk])
        assert client.post(delete, {"post": "yes"}).status_code == 403
    assert ApiToken.objects.get(pk=acme_world.token.pk).name == "Acme server"


def test_settings_page_shows_connect_your_site_and_edits_origins(as_alice, acme, settings):
    page_url = reverse("admin:workspaces_workspace_change", args=[acme.pk])
    page = as_alice.get(page_url).content.decode()
    assert "Connect your site" in page and acme.tracking_key in page and "/lf.js" in page
    assert reverse("admin:workspaces_apitoken_changelist") + f"?workspace={acme.pk}" in page
    response = as_alice.post(
        page_url, {"name": "Acme Inc", "allowed_origins": "https://Shop.Acme.test/\nhttp://localhost:3000"}
    )
    assert response.status_code == 302
    acme.refresh_from_db()
    assert (acme.name, acme.allowed_origins) == ("Acme Inc", "https://shop.acme.test\nhttp://localhost:3000")
    response = as_alice.post(page_url, {"name": "Acme Inc", "allowed_origins": "ftp://shop.acme.test"})
    assert response.status_code == 200 and "invalid origin" in response.content.decode()
    acme.refresh_from_db()
    assert acme.allowed_origins == "https://shop.acme.test\nhttp://localhost:3000"


def test_settings_keep_the_key_and_sending_limit_read_only(as_alice, acme):
    before = acme.tracking_key
    as_alice.post(
        reverse("admin:workspaces_workspace_change", args=[acme.pk]),
        {"name": "Acme", "allowed_origins": "", "tracking_key": "pk_mine", "daily_send_limit": 10**6},
    )
    acme.refresh_from_db()
    assert acme.tracking_key == before and acme.daily_send_limit is None


def test_owners_pick_scopes_and_the_list_shows_them(as_alice, acme):
    form = as_alice.get(ADD)
    assert 'value="email_events:write"' in form.content.decode() and "None ticked: everything" in form.content.decode()
    response = as_alice.post(
        ADD, {"workspace": acme.pk, "name": "Zapier", "scopes": ["leads:write"], "nonce": nonce_of(form)}
    )
    assert response.status_code == 200 and ApiToken.objects.get(name="Zapier").scopes == "leads:write"
    create_token(as_alice, acme, "Everything")
    listing = as_alice.get(LIST).content.decode()
    assert "leads:write" in listing and "everything" in listing
