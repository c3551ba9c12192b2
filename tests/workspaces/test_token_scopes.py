"""Token scopes: a token created with scopes may do only those; one created without (and every token made
before scopes) may do everything. A missing scope is 403 `forbidden` and changes nothing."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from campaigns.models import Enrollment, Suppression
from clicks.models import Tag
from conversions.models import ConversionEvent
from tests.factories import CampaignEmailFactory, CampaignFactory, ClickFactory
from workspaces.models import ApiToken
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def doors(acme):
    """Each scoped endpoint with a body it would accept, and what storing it leaves behind."""
    click = ClickFactory(link__post__workspace=acme)
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1)
    return {
        "conversions:write": ("/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, ConversionEvent),
        "leads:write": ("/api/v1/campaigns/spring/leads", {"email": "ada@example.com"}, Enrollment),
        "email_events:write": ("/api/v1/email-events", {"type": "bounce", "email": "bob@example.com"}, Suppression),
        "links:write": ("/api/v1/links", {"destination": "https://shop.example.com/", "tags": ["new"]}, Tag),
    }


@pytest.mark.parametrize("scope", ["conversions:write", "leads:write", "email_events:write", "links:write"])
def test_a_scoped_token_opens_its_door_only(api, acme, doors, scope):
    token = api_token_create(workspace=acme, name="narrow", scopes=[scope]).secret
    for door, (path, body, model) in doors.items():
        response = api.post(path, body, token=token)
        if door == scope:
            assert response.status_code in (200, 201) and model.objects.count() == 1
        else:
            assert response.status_code == 403 and response.json() == {"error": "forbidden"}
            assert model.objects.count() == 0


def test_a_read_only_token_writes_nothing(api, acme, doors):
    token = api_token_create(workspace=acme, name="reader", scopes=["read"]).secret
    for path, body, model in doors.values():
        assert api.post(path, body, token=token).status_code == 403
        assert model.objects.count() == 0


def test_tokens_without_scopes_do_everything(api, acme, acme_token, doors):
    for token in (acme_token, api_token_create(workspace=acme, name="all").secret):
        for path, body, _ in doors.values():
            assert api.post(path, body, token=token).status_code in (200, 201)


def test_a_missing_scope_is_checked_after_authentication(api, acme, doors):
    path, body, _ = doors["conversions:write"]
    assert api.post(path, body, token="lf_" + "x" * 43).status_code == 401


def test_unknown_scopes_are_refused(acme):
    with pytest.raises(Exception, match="unknown scope: write:all"):
        api_token_create(workspace=acme, name="x", scopes=["write:all"])
    assert not ApiToken.objects.exists()


def test_the_cli_creates_scoped_tokens(api, acme, doors):
    out = StringIO()
    call_command("token", "create", "acme", "--scope", "read", "--scope", "conversions:write", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["scopes"] == ["conversions:write", "read"]
    assert ApiToken.objects.get(pk=printed["id"]).scopes == "conversions:write read"
    path, body, _ = doors["leads:write"]
    assert api.post(path, body, token=printed["token"]).status_code == 403
    out = StringIO()
    call_command("token", "create", "acme", stdout=out)
    assert json.loads(out.getvalue())["scopes"] == [
        "conversions:write",
        "leads:write",
        "email_events:write",
        "read",
        "webhooks",
        "links:read",
        "links:write",
        "customers:read",
        "customers:write",
    ]


def test_the_customer_scopes_open_export_and_erasure_only(api, acme):
    """customers:read exports, customers:write erases; neither reads nor writes anything else, and a `read` token
    does neither (tests/customers/test_erasure.py checks what they do)."""
    from customers.services import customer_match

    ada = customer_match(workspace=acme, channel="api", email="ada@example.com").customer
    exporter = api_token_create(workspace=acme, name="export", scopes=["customers:read"]).secret
    eraser = api_token_create(workspace=acme, name="erase", scopes=["customers:write"]).secret
    for token in (exporter, eraser):
        assert api.get("/api/v1/customers", token=token).status_code == 403
    assert api.delete(f"/api/v1/customers/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {exporter}").status_code == 403
    assert api.get(f"/api/v1/customers/{ada.pk}/export", token=eraser).status_code == 403
    assert api.get(f"/api/v1/customers/{ada.pk}/export", token=exporter).status_code == 200
    assert api.delete(f"/api/v1/customers/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {eraser}").status_code == 204


def test_every_routed_action_of_a_token_view_names_its_scope():
    """A scope is checked only where a view names one for the action: an action added without one would be
    open to every scoped token (a `read` token deleting webhooks), so each route's actions must be listed."""
    from django.urls import get_resolver

    from workspaces.auth import HasWorkspaceToken

    def routes(patterns):
        for pattern in patterns:
            yield from routes(pattern.url_patterns) if hasattr(pattern, "url_patterns") else [pattern.callback]

    unnamed = [
        (view.cls.__name__, action)
        for view in routes(get_resolver().url_patterns)
        if HasWorkspaceToken in getattr(getattr(view, "cls", None), "permission_classes", [])
        for action in (getattr(view, "actions", None) or {}).values()
        if action not in getattr(view.cls, "required_scopes", {})
    ]
    assert unnamed == []
