"""/api/v1/webhooks: endpoints by the API, scoped to the token's workspace; SSRF refusals at creation."""

import json

import pytest
from standardwebhooks import Webhook

from tests.conftest import assert_api_error
from tests.factories import EndpointFactory
from webhooks.models import Endpoint
from webhooks.secrets import secret_open
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db
URL = "/api/v1/webhooks"


def patch(api, path, body, token):
    return api.generic(
        "PATCH", path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token.secret}"
    )


def test_create_shows_the_secret_once_and_stores_it_sealed(api, acme_token, public_dns):
    resp = api.post(
        URL, {"url": "https://crm.example.com/hooks", "event_types": ["sale.created", "lead.created"]}, token=acme_token
    )
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["secret"].startswith("whsec_") and body["event_types"] == ["lead.created", "sale.created"]
    assert {k: body[k] for k in ("url", "enabled", "test", "disabled_reason", "failures_in_row")} == {
        "url": "https://crm.example.com/hooks",
        "enabled": True,
        "test": False,
        "disabled_reason": None,
        "failures_in_row": 0,
    }
    endpoint = Endpoint.objects.get()
    assert body["secret"] not in endpoint.secret and secret_open(endpoint.secret) == body["secret"]
    Webhook(body["secret"])  # a secret the Standard Webhooks library reads
    listed = api.get(URL, token=acme_token).json()["data"]
    assert [e["id"] for e in listed] == [body["id"]] and "secret" not in listed[0]


@pytest.mark.parametrize(
    ("url", "resolved", "message"),
    [
        ("http://crm.example.com/hooks", None, "url must be https"),
        ("https://user:pw@crm.example.com/", None, "url must not carry credentials"),
        ("ftp://crm.example.com/", None, "url must be an absolute https URL"),
        ("https://127.0.0.1/hooks", None, "url resolves to a private, loopback or link-local address"),
        ("https://[::1]/hooks", None, "url resolves to a private, loopback or link-local address"),
        ("https://internal.example.com/", ["10.0.0.7"], "url resolves to a private, loopback or link-local address"),
        (
            "https://metadata.example.com/",
            ["169.254.169.254"],
            "url resolves to a private, loopback or link-local address",
        ),
        (
            "https://mapped.example.com/",
            ["::ffff:127.0.0.1"],
            "url resolves to a private, loopback or link-local address",
        ),
        (
            "https://cgnat.example.com/",
            ["100.100.100.200"],
            "url resolves to a private, loopback or link-local address",
        ),
        (
            "https://mixed.example.com/",
            ["93.184.215.14", "192.168.1.1"],
            "url resolves to a private, loopback or link-local address",
        ),
    ],
)
def test_urls_to_private_addresses_are_refused(api, acme_token, public_dns, url, resolved, message):
    if resolved:
        public_dns[url.split("//")[1].split("/")[0]] = resolved
    resp = api.post(URL, {"url": url, "event_types": ["sale.created"]}, token=acme_token)
    assert_api_error(resp, 422, message)
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "https://a.example.com/", "event_types": []}, "event_types must name at least one event type"),
        ({"url": "https://a.example.com/", "event_types": ["sale.deleted"]}, "unknown event type: sale.deleted"),
        ({"url": "https://a.example.com/", "event_types": "sale.created"}, "event_types must be a list of strings"),
        (
            {"url": "https://a.example.com/", "event_types": ["sale.created"], "enabled": "yes"},
            "enabled must be a boolean",
        ),
        ({"event_types": ["sale.created"]}, "url is required"),
    ],
)
def test_bad_input_is_422_and_stores_nothing(api, acme_token, public_dns, body, message):
    assert_api_error(api.post(URL, body, token=acme_token), 422, message)
    assert not Endpoint.objects.exists()


def test_another_workspaces_endpoint_is_unknown(api, acme_token, globex, public_dns):
    theirs = EndpointFactory(workspace=globex)
    assert_api_error(api.get(f"{URL}/{theirs.pk}", token=acme_token), 404, "unknown webhook")
    assert_api_error(patch(api, f"{URL}/{theirs.pk}", {"enabled": False}, acme_token), 404, "unknown webhook")
    assert_api_error(
        api.delete(f"{URL}/{theirs.pk}", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}"), 404, "unknown webhook"
    )
    assert_api_error(api.post(f"{URL}/{theirs.pk}/rotate-secret", {}, token=acme_token), 404, "unknown webhook")
    assert api.get(URL, token=acme_token).json() == {"data": []}
    assert Endpoint.objects.get().enabled


def test_a_test_token_manages_test_endpoints_only_and_never_gets_live_events(api, acme, acme_token, public_dns):
    from tests.factories import ClickFactory
    from webhooks.models import Event
    from webhooks.outbox import events_dispatch

    test_token = api_token_create(workspace=acme, name="trying", test=True)
    live = EndpointFactory(workspace=acme)
    made = api.post(URL, {"url": "https://crm.example.com/try", "event_types": ["lead.created"]}, token=test_token)
    assert made.status_code == 201 and made.json()["test"] is True
    assert [e["id"] for e in api.get(URL, token=test_token).json()["data"]] == [made.json()["id"]]
    assert [e["id"] for e in api.get(URL, token=acme_token).json()["data"]] == [live.pk]
    for method, path in (("get", f"{URL}/{live.pk}"), ("post", f"{URL}/{live.pk}/rotate-secret")):
        assert_api_error(getattr(api, method)(path, token=test_token), 404, "unknown webhook")
    assert_api_error(
        patch(api, f"{URL}/{live.pk}", {"url": "https://attacker.example.com/"}, test_token), 404, "unknown webhook"
    )
    assert_api_error(api.get(f"{URL}/{made.json()['id']}", token=acme_token), 404, "unknown webhook")
    click = ClickFactory(link__post__workspace=acme)
    assert (
        api.post("/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=acme_token).status_code
        == 201
    )
    events_dispatch(event_ids=list(Event.objects.values_list("pk", flat=True)))
    assert [d.endpoint_id for d in Event.objects.get(type="lead.created").deliveries.all()] == [live.pk]
    assert Endpoint.objects.get(pk=live.pk).url == "https://hooks.example.com/lftrack"


def test_change_disable_reenable_and_delete(api, acme, acme_token, public_dns):
    endpoint = EndpointFactory(
        workspace=acme, enabled=False, disabled_reason="20 failed attempts in a row", failures_in_row=20
    )
    resp = patch(api, f"{URL}/{endpoint.pk}", {"enabled": True, "event_types": ["click.created"]}, acme_token)
    assert resp.status_code == 200, resp.content
    assert {k: resp.json()[k] for k in ("enabled", "failures_in_row", "disabled_reason", "event_types")} == {
        "enabled": True,
        "failures_in_row": 0,
        "disabled_reason": None,
        "event_types": ["click.created"],
    }
    resp = api.delete(f"{URL}/{endpoint.pk}", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert resp.status_code == 204 and not Endpoint.objects.exists()


def test_a_rotation_signs_with_both_secrets_during_the_overlap(api, acme, acme_token):
    from django.utils import timezone

    from webhooks.delivery import signature_headers

    endpoint = EndpointFactory(workspace=acme)
    old = endpoint.secret_clear
    resp = api.post(f"{URL}/{endpoint.pk}/rotate-secret", {"overlap_hours": 24}, token=acme_token)
    assert resp.status_code == 200, resp.content
    new = resp.json()["secret"]
    endpoint.refresh_from_db()
    body = b'{"type":"test"}'
    headers = signature_headers(endpoint, msg_id="evt_1", at=timezone.now(), body=body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):  # a receiver on either secret verifies
        Webhook(secret).verify(body, headers)
    resp = api.post(f"{URL}/{endpoint.pk}/rotate-secret", {"overlap_hours": 0}, token=acme_token)
    endpoint.refresh_from_db()
    headers = signature_headers(endpoint, msg_id="evt_1", at=timezone.now(), body=body)
    assert len(headers["webhook-signature"].split(" ")) == 1
    Webhook(resp.json()["secret"]).verify(body, headers)


def test_a_token_without_the_webhooks_scope_is_forbidden(api, acme, public_dns):
    reader = api_token_create(workspace=acme, name="reader", scopes=["read"]).secret
    resp = api.get(URL, HTTP_AUTHORIZATION=f"Bearer {reader}")
    assert_api_error(resp, 403, "forbidden")


def test_private_networks_outside_debug_fail_the_deploy_check(settings):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    with pytest.raises(SystemCheckError, match=r"lftrack.W001"):
        call_command("check", "--deploy", "--fail-level", "WARNING", "--tag", "security")
