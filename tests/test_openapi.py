"""OpenAPI: docs/openapi.json is what the code generates, it is served, and live answers of every operation conform."""

import difflib
import json
from pathlib import Path
from unittest import mock

import pytest
import requests
import schemathesis
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django.db import OperationalError
from django.test import override_settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    EndpointFactory,
    EnrollmentFactory,
    SuppressionFactory,
)
from workspaces.tokens import api_token_create

SCHEMA_FILE = Path(settings.BASE_DIR) / "docs" / "openapi.json"
REFRESH = "make openapi"
REFRESH_LONG = "DEBUG=1 .venv/bin/python manage.py spectacular --format openapi-json --validate --fail-on-warn --file docs/openapi.json"
CONVERSIONS = "/api/v1/conversions"
LEADS = "/api/v1/campaigns/{slug}/leads"
BROWSER = "/api/v1/browser/conversions"
EMAIL_EVENTS = "/api/v1/email-events"
CUSTOMERS = "/api/v1/customers"
ENROLLMENTS = "/api/v1/campaigns/{slug}/enrollments"
CUSTOMER = "/api/v1/customers/{id}"
ACTIVITY = "/api/v1/customers/{id}/activity"
EXPORT = "/api/v1/customers/{id}/export"
TAGS = "/api/v1/customers/{customer_id}/tags"
TAG = "/api/v1/customers/{customer_id}/tags/{tag}"
ANALYTICS = "/api/v1/analytics"
WEBHOOKS = "/api/v1/webhooks"
WEBHOOK = "/api/v1/webhooks/{id}"
ROTATE = "/api/v1/webhooks/{id}/rotate-secret"
REFUNDS = "/api/v1/conversions/{conversion_id}/refunds"
LINKS = "/api/v1/links"
LINK = "/api/v1/links/{id}"
LINKS_BULK = "/api/v1/links/bulk"
SHOP = "https://shop.acme.example"


def committed_schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())


def test_committed_schema_is_what_the_code_generates(tmp_path):
    fresh = tmp_path / "openapi.json"
    # The refresh command itself, writing elsewhere: --fail-on-warn and --validate keep the schema clean.
    call_command(*f"spectacular --format openapi-json --validate --fail-on-warn --file {fresh}".split())
    generated, committed = fresh.read_text(), SCHEMA_FILE.read_text()
    if generated != committed:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                generated.splitlines(keepends=True),
                "docs/openapi.json (committed)",
                "generated from the code",
                n=2,
            )
        )
        pytest.fail(
            f"docs/openapi.json no longer matches the API the code describes. Refresh it with `{REFRESH}` "
            f"({REFRESH_LONG}), review the diff and commit it.\n\n{diff[:6000]}",
            pytrace=False,
        )


@pytest.mark.django_db
def test_schema_is_served_as_json_without_credentials(api):
    resp = api.get("/api/v1/openapi.json", HTTP_AUTHORIZATION="Bearer lf_not-a-token")
    assert resp.status_code == 200
    assert resp["Content-Type"] == "application/json"
    assert resp.json() == committed_schema()


@pytest.mark.django_db
def test_schema_endpoint_answers_other_methods_with_the_error_body(api):
    resp = api.post("/api/v1/openapi.json", {})
    assert (resp.status_code, resp.json()) == (405, {"error": "method not allowed"})


def test_every_v1_operation_is_described():
    paths = committed_schema()["paths"]
    assert {(path, method) for path, item in paths.items() for method in item} == {
        (CONVERSIONS, "post"),
        (CONVERSIONS, "get"),
        (LEADS, "post"),
        (BROWSER, "post"),
        (BROWSER, "options"),
        (EMAIL_EVENTS, "post"),
        (CUSTOMERS, "get"),
        (CUSTOMER, "get"),
        (ENROLLMENTS, "get"),
        (ACTIVITY, "get"),
        (EXPORT, "get"),
        (CUSTOMER, "delete"),
        (ANALYTICS, "get"),
        (WEBHOOKS, "get"),
        (WEBHOOKS, "post"),
        (WEBHOOK, "get"),
        (WEBHOOK, "patch"),
        (WEBHOOK, "delete"),
        (ROTATE, "post"),
        (REFUNDS, "post"),
        (LINKS, "get"),
        (LINKS, "post"),
        (LINKS_BULK, "post"),
        (LINK, "get"),
        (LINK, "patch"),
        (LINK, "delete"),
        (TAGS, "post"),
        (TAG, "delete"),
    }


def test_security_schemes_and_strict_field_types():
    schema = committed_schema()
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert (schemes["trackingKey"]["in"], schemes["trackingKey"]["name"]) == ("header", "X-Tracking-Key")
    paths = schema["paths"]
    assert paths[CONVERSIONS]["post"]["security"] == [{"bearerAuth": []}]
    parameters = {p["name"]: p for p in paths[CONVERSIONS]["post"]["parameters"]}
    assert (
        parameters["Idempotency-Key"]["in"] == "header" and parameters["Idempotency-Key"]["schema"]["maxLength"] == 255
    )
    headers = paths[CONVERSIONS]["post"]["responses"]["201"]["headers"]
    assert {"Idempotent-Replayed", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-Request-ID"} <= set(headers)
    assert {"Retry-After", "X-RateLimit-Limit"} <= set(paths[CONVERSIONS]["post"]["responses"]["429"]["headers"])
    assert paths[BROWSER]["post"]["security"] == [{"trackingKey": []}, {}]  # or the body's `key`
    schemas = schema["components"]["schemas"]
    conversion = schemas["ConversionInput"]["properties"]
    assert conversion["click_id"] == {"type": "string", "maxLength": 64, "minLength": 1}
    assert conversion["value_cents"]["type"] == "integer" and conversion["value_cents"]["minimum"] == 0
    assert conversion["meta"]["type"] == "object"
    customer = schemas["CustomerInput"]["properties"]
    assert {"type": "string", "maxLength": 254, "format": "email"} in customer["email"]["oneOf"]
    assert {"type": "string", "maxLength": 2048, "format": "uri"} in customer["avatar_url"]["oneOf"]
    assert schemas["ConversionEventEnum"]["enum"] == ["lead", "sale"]
    assert schemas["Error"] == {
        "type": "object",
        "description": "Every error answer: exactly one key, its documented message.",
        "properties": {"error": {"type": "string"}},
        "required": ["error"],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------------------------------------
# Live answers: every documented status of every operation, produced for real and checked against
# the committed schema with schemathesis' conformance checks.


@pytest.fixture(scope="module")
def openapi():
    return schemathesis.openapi.from_dict(committed_schema())


@pytest.fixture
def world(acme, acme_token, public_dns):
    cache.clear()
    acme.allowed_origins = SHOP
    acme.save()
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign)
    enrolled = EnrollmentFactory(campaign=campaign, customer__email="enrolled@example.com")
    SuppressionFactory(workspace=acme, email="gone@example.com")
    yield {
        "token": acme_token,
        "workspace": acme,
        "click": ClickFactory(link__post__workspace=acme),
        "sale": ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=10000),
        "campaign": campaign,
        "enrolled": enrolled,
        "endpoint": EndpointFactory(workspace=acme),
    }
    cache.clear()


def _conversion(w):
    return {
        "event": "sale",
        "click_id": w["click"].click_id,
        "value_cents": 100,
        "customer": {"email": "ada@example.com"},
    }


def _browser(w):
    return {"key": w["workspace"].tracking_key, "event": "lead", "click_id": w["click"].click_id}


def _post(api, w, path, body, *, token=True, **extra):
    if path == BROWSER:  # the pixel's endpoint: a page on the workspace's shop, the key in the body
        extra.setdefault("HTTP_ORIGIN", SHOP)
        token = False
    return api.post(path, body, token=w["token"] if token else None, **extra)


def _raw(api, w, path, raw, **extra):
    return _post(api, w, path, None, raw=raw, **extra)


def _twice(setting, path, body_of):
    def scenario(api, w):
        with override_settings(**{setting: "1/m"}):
            _post(api, w, path, body_of(w))
            return _post(api, w, path, body_of(w))

    return scenario


def _lead(w):
    return {"email": "new@example.com", "name": "Ada"}


def _event(w):
    return {"type": "bounce", "email": "ada@example.com"}


def _common(path, body_of, bad_422, *, auth=True):
    """The statuses every JSON POST answers the same way."""
    scenarios = {
        "400": lambda api, w: _raw(api, w, path, "{"),
        "413": lambda api, w: _raw(api, w, path, json.dumps({"pad": "x" * 70_000})),
        "415": lambda api, w: _raw(api, w, path, "<a/>", content_type="application/xml"),
        "422": lambda api, w: _post(api, w, path, bad_422(w)),
    }
    if auth:
        scenarios["401"] = lambda api, w: _post(api, w, path, body_of(w), token=False)
        # A token whose scopes leave this operation out (workspaces/auth.py).
        scenarios["403"] = lambda api, w: api.post(
            path, body_of(w), token=api_token_create(workspace=w["workspace"], name="read only", scopes=["read"]).secret
        )
    return scenarios


def _get_twice(api, w, path=CONVERSIONS):
    with override_settings(RATELIMIT_READ_TOKEN="1/m"):
        api.get(path, token=w["token"])
        return api.get(path, token=w["token"])


def _writer(w) -> str:
    """A token whose scopes leave reading out."""
    return api_token_create(workspace=w["workspace"], name="writer", scopes=["conversions:write"]).secret


def _customer_path(w) -> str:
    return CUSTOMER.replace("{id}", str(w["enrolled"].customer_id))


def _reads(path_of, bad_422=None, *, breaks: str) -> dict:
    """The statuses every read answers the same way; `breaks` is the selector a 500 or 503 scenario breaks."""
    scenarios = {
        "200": lambda api, w: api.get(path_of(w), token=w["token"]),
        "400": lambda api, w: api.get(path_of(w) + "?x=%00", token=w["token"]),
        "401": lambda api, w: api.get(path_of(w)),
        "403": lambda api, w: api.get(path_of(w), token=_writer(w)),
        "429": lambda api, w: _get_twice(api, w, path_of(w)),
        "500": (breaks, None),
        "503": (breaks, None, OperationalError),
    }
    if bad_422 is not None:
        scenarios["422"] = lambda api, w: api.get(path_of(w), bad_422, token=w["token"])
    return scenarios


SCENARIOS = {
    (CONVERSIONS, "post"): {
        "201": lambda api, w: _post(api, w, CONVERSIONS, _conversion(w)),
        "200": lambda api, w: [_post(api, w, CONVERSIONS, {**_conversion(w), "invoice_id": "in_1"}) for _ in range(2)][
            -1
        ],
        **_common(CONVERSIONS, _conversion, lambda w: {**_conversion(w), "click_id": "unknown"}),
        "429": _twice("RATELIMIT_CONVERSIONS_TOKEN", CONVERSIONS, _conversion),
        "500": ("conversions.api.conversion_record", _conversion),
        "503": ("conversions.api.conversion_record", _conversion, OperationalError),
    },
    (LEADS, "post"): {
        "201": lambda api, w: _post(api, w, "/api/v1/campaigns/spring/leads", _lead(w)),
        "200": lambda api, w: _post(api, w, "/api/v1/campaigns/spring/leads", {"email": "enrolled@example.com"}),
        **_common("/api/v1/campaigns/spring/leads", _lead, lambda w: {"email": "not an address"}),
        "404": lambda api, w: _post(api, w, "/api/v1/campaigns/nope/leads", _lead(w)),
        "429": _twice("RATELIMIT_CAMPAIGN_LEADS_TOKEN", "/api/v1/campaigns/spring/leads", _lead),
        "500": ("campaigns.api.campaign_lead_add", _lead),
        "503": ("campaigns.api.campaign_lead_add", _lead, OperationalError),
    },
    (BROWSER, "post"): {
        "201": lambda api, w: _post(api, w, BROWSER, _browser(w)),
        "200": lambda api, w: [_post(api, w, BROWSER, _browser(w)) for _ in range(4)][-1],
        **_common(BROWSER, _browser, lambda w: {**_browser(w), "event": "sale"}),
        "401": lambda api, w: _post(api, w, BROWSER, {**_browser(w), "key": "pk_wrong"}),
        "403": lambda api, w: _post(api, w, BROWSER, _browser(w), HTTP_ORIGIN="https://evil.example"),
        "429": _twice("RATELIMIT_BROWSER_IP", BROWSER, _browser),
        "500": ("conversions.pixel_api.pixel_lead_record", _browser),
        "503": ("conversions.pixel_api.pixel_lead_record", _browser, OperationalError),
    },
    (BROWSER, "options"): {
        "204": lambda api, w: api.options(BROWSER, HTTP_ORIGIN=SHOP, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"),
        "400": lambda api, w: api.options(BROWSER + "?x=%00"),
        "413": lambda api, w: api.options(BROWSER, CONTENT_LENGTH="70000"),
        "429": lambda api, w: _options_twice(api),
        "500": ("conversions.pixel_api.origin_allowed_anywhere", None),
        "503": ("conversions.pixel_api.origin_allowed_anywhere", None, OperationalError),
    },
    (CONVERSIONS, "get"): _reads(lambda w: CONVERSIONS, {"limit": "500"}, breaks="conversions.api.conversions_page"),
    (CUSTOMERS, "get"): _reads(lambda w: CUSTOMERS, {"limit": "0"}, breaks="conversions.customers_api.customers_page"),
    (ENROLLMENTS, "get"): {
        **_reads(
            lambda w: ENROLLMENTS.replace("{slug}", "spring"),
            {"state": "gone"},
            breaks="campaigns.api.enrollments_page",
        ),
        "404": lambda api, w: api.get(ENROLLMENTS.replace("{slug}", "nope"), token=w["token"]),
    },
    (ACTIVITY, "get"): {
        **_reads(
            lambda w: _customer_path(w) + "/activity",
            {"cursor": "x"},
            breaks="conversions.customers_api.customer_timeline",
        ),
        "404": lambda api, w: api.get(ACTIVITY.replace("{id}", "ext_nobody"), token=w["token"]),
    },
    (CUSTOMER, "get"): {
        **_reads(_customer_path, breaks="conversions.customers_api.customer_by_reference"),
        "404": lambda api, w: api.get(CUSTOMER.replace("{id}", "ext_nobody"), token=w["token"]),
    },
    (ANALYTICS, "get"): {
        **_reads(lambda w: ANALYTICS, {"group_by": "week"}, breaks="rollups.api.daily_numbers"),
        "404": lambda api, w: api.get(ANALYTICS, {"campaign": "nope"}, token=w["token"]),
    },
    (REFUNDS, "post"): {
        "201": lambda api, w: _post(api, w, _refunds(w), {"amount_cents": 100}),
        "200": lambda api, w: [_post(api, w, _refunds(w), {"refund_id": "re_1"}) for _ in range(2)][-1],
        "400": lambda api, w: _raw(api, w, _refunds(w), "{"),
        "401": lambda api, w: _post(api, w, _refunds(w), {}, token=False),
        "403": lambda api, w: api.post(
            _refunds(w), {}, token=api_token_create(workspace=w["workspace"], name="read only", scopes=["read"]).secret
        ),
        "404": lambda api, w: _post(api, w, REFUNDS.replace("{conversion_id}", "999999999"), {}),
        "413": lambda api, w: _raw(api, w, _refunds(w), json.dumps({"pad": "x" * 70_000})),
        "415": lambda api, w: _raw(api, w, _refunds(w), "<a/>", content_type="application/xml"),
        "422": lambda api, w: _post(api, w, _refunds(w), {"amount_cents": 10001}),
        "429": lambda api, w: _refund_twice(api, w),
        "500": ("conversions.refunds_api.refund_record", lambda w: {}),
        "503": ("conversions.refunds_api.refund_record", lambda w: {}, OperationalError),
    },
    (EMAIL_EVENTS, "post"): {
        "200": lambda api, w: _post(api, w, EMAIL_EVENTS, _event(w)),
        **_common(EMAIL_EVENTS, _event, lambda w: {"type": "delivered", "email": "ada@example.com"}),
        "429": _twice("RATELIMIT_EMAIL_EVENTS_TOKEN", EMAIL_EVENTS, _event),
        "500": ("campaigns.api.email_event_record", _event),
        "503": ("campaigns.api.email_event_record", _event, OperationalError),
    },
}


def _hook(w):
    return {"url": "https://crm.example.com/hooks", "event_types": ["sale.created"]}


def _webhook_path(w, path=WEBHOOK) -> str:
    return path.replace("{id}", str(w["endpoint"].pk))


def _send(api, w, method: str, path: str, body=None, *, token=None, raw=None, **extra):
    """PATCH and DELETE with the test client: JSON, the bearer token (the workspace's unless given)."""
    secret = token if token is not None else w["token"].secret
    if secret:
        extra["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    data = raw if raw is not None else json.dumps(body if body is not None else {})
    return api.generic(method, path, data, content_type=extra.pop("content_type", "application/json"), **extra)


def _webhook_writes(method: str, path_of, body_of, bad_422) -> dict:
    """The statuses of PATCH /webhooks/{id} and POST /webhooks/{id}/rotate-secret."""

    def call(api, w, **kwargs):
        return _send(api, w, method, path_of(w), body_of(w), **kwargs)

    def twice(api, w):
        with override_settings(RATELIMIT_WEBHOOKS_TOKEN="1/m"):
            call(api, w)
            return call(api, w)

    return {
        "200": call,
        "400": lambda api, w: _send(api, w, method, path_of(w), raw="{"),
        "401": lambda api, w: call(api, w, token=""),
        "403": lambda api, w: call(api, w, token=_writer(w)),
        "404": lambda api, w: _send(api, w, method, path_of(w).replace(str(w["endpoint"].pk), "0"), body_of(w)),
        "413": lambda api, w: _send(api, w, method, path_of(w), raw=json.dumps({"pad": "x" * 70_000})),
        "415": lambda api, w: _send(api, w, method, path_of(w), raw="<a/>", content_type="application/xml"),
        "422": lambda api, w: _send(api, w, method, path_of(w), bad_422),
        "429": twice,
    }


def _webhook_reads(method: str, path_of, ok: str, limit: str) -> dict:
    def twice(api, w):
        with override_settings(**{limit: "1/m"}):
            _send(api, w, method, path_of(w))
            return _send(api, w, method, path_of(w))

    return {
        ok: lambda api, w: _send(api, w, method, path_of(w)),
        "400": lambda api, w: _send(api, w, method, path_of(w) + "?x=%00"),
        "401": lambda api, w: _send(api, w, method, path_of(w), token=""),
        "403": lambda api, w: _send(api, w, method, path_of(w), token=_writer(w)),
        "429": twice,
    }


SCENARIOS.update(
    {
        (WEBHOOKS, "get"): {
            **_webhook_reads("GET", lambda w: WEBHOOKS, "200", "RATELIMIT_READ_TOKEN"),
            "500": ("webhooks.api.endpoint_out", None),
            "503": ("webhooks.api.endpoint_out", None, OperationalError),
        },
        (WEBHOOKS, "post"): {
            "201": lambda api, w: _post(api, w, WEBHOOKS, _hook(w)),
            **_common(WEBHOOKS, _hook, lambda w: {**_hook(w), "event_types": ["sale.deleted"]}),
            "429": _twice("RATELIMIT_WEBHOOKS_TOKEN", WEBHOOKS, _hook),
            "500": ("webhooks.api.endpoint_create", _hook),
            "503": ("webhooks.api.endpoint_create", _hook, OperationalError),
        },
        (WEBHOOK, "get"): {
            **_webhook_reads("GET", _webhook_path, "200", "RATELIMIT_READ_TOKEN"),
            "404": lambda api, w: _send(api, w, "GET", WEBHOOK.replace("{id}", "0")),
            "500": ("webhooks.api.endpoint_out", None),
            "503": ("webhooks.api.endpoint_out", None, OperationalError),
        },
        (WEBHOOK, "patch"): {
            **_webhook_writes("PATCH", _webhook_path, lambda w: {"description": "CRM"}, {"enabled": "yes"}),
            "500": ("webhooks.api.endpoint_update", lambda w: {"description": "CRM"}),
            "503": ("webhooks.api.endpoint_update", lambda w: {"description": "CRM"}, OperationalError),
        },
        (WEBHOOK, "delete"): {
            **_webhook_reads("DELETE", _webhook_path, "204", "RATELIMIT_WEBHOOKS_TOKEN"),
            "404": lambda api, w: _send(api, w, "DELETE", WEBHOOK.replace("{id}", "0")),
            "500": ("webhooks.api.endpoint_delete", None),
            "503": ("webhooks.api.endpoint_delete", None, OperationalError),
        },
        (ROTATE, "post"): {
            **_webhook_writes("POST", lambda w: _webhook_path(w, ROTATE), lambda w: {}, {"overlap_hours": 99}),
            "500": ("webhooks.api.endpoint_secret_rotate", lambda w: {}),
            "503": ("webhooks.api.endpoint_secret_rotate", lambda w: {}, OperationalError),
        },
    }
)


def _link_body(w):
    return {"destination": "https://shop.example.com/", "tags": ["spring"], "utm_source": "ig"}


def _bulk_body(w):
    return {"links": [_link_body(w), _link_body(w)]}


def _link_path(w) -> str:
    return LINK.replace("{id}", str(w["click"].link_id))


def _broken(target: str, call, error=RuntimeError):
    """A scenario that breaks `target` (a name the view calls) with `error`: a 500, or the database's 503."""

    def scenario(api, w):
        with mock.patch(target, side_effect=error("boom")):
            return call(api, w)

    return scenario


def _link_calls(method: str, path_of, body_of, bad_422, limit: str, ok: str, broken: str) -> dict:
    """The statuses of an operation on one link (GET, PATCH, DELETE /links/{id})."""

    def call(api, w, **kwargs):
        return _send(api, w, method, path_of(w), body_of(w), **kwargs)

    def twice(api, w):
        with override_settings(**{limit: "1/m"}):
            call(api, w)
            return call(api, w)

    scenarios = {
        ok: call,
        "400": lambda api, w: _send(api, w, method, path_of(w) + "?x=%00", body_of(w)),
        "401": lambda api, w: call(api, w, token=""),
        "403": lambda api, w: call(api, w, token=_writer(w)),
        "404": lambda api, w: _send(api, w, method, LINK.replace("{id}", "0"), body_of(w)),
        "429": twice,
        "500": _broken(broken, call),
        "503": _broken(broken, call, OperationalError),
    }
    if bad_422 is not None:
        scenarios.update(
            {
                "413": lambda api, w: _send(api, w, method, path_of(w), raw=json.dumps({"pad": "x" * 70_000})),
                "415": lambda api, w: _send(api, w, method, path_of(w), raw="<a/>", content_type="application/xml"),
                "422": lambda api, w: _send(api, w, method, path_of(w), bad_422),
            }
        )
    return scenarios


def _link_post(path: str, body_of, broken: str) -> dict:
    def call(api, w):
        return _post(api, w, path, body_of(w))

    return {
        "201": call,
        **_common(path, body_of, lambda w: {**_link_body(w), "key": "no spaces"}),
        "429": _twice("RATELIMIT_LINKS_TOKEN", path, body_of),
        "500": _broken(broken, call),
        "503": _broken(broken, call, OperationalError),
    }


def _link_list(api, w):
    return api.get(LINKS, token=w["token"])


SCENARIOS.update(
    {
        (LINKS, "get"): {
            **{
                k: v
                for k, v in _reads(lambda w: LINKS, {"archived": "x"}, breaks="").items()
                if k not in ("500", "503")
            },
            "500": _broken("rollups.links_api.page_out", _link_list),
            "503": _broken("rollups.links_api.page_out", _link_list, OperationalError),
        },
        (LINKS, "post"): _link_post(LINKS, _link_body, "rollups.links_api.campaign_link_create"),
        (LINKS_BULK, "post"): _link_post(LINKS_BULK, _bulk_body, "rollups.links_api.campaign_links_create"),
        (LINK, "get"): _link_calls(
            "GET", _link_path, lambda w: None, None, "RATELIMIT_READ_TOKEN", "200", "rollups.links_api.link_numbers"
        ),
        (LINK, "patch"): _link_calls(
            "PATCH",
            _link_path,
            lambda w: {"destination": "https://shop.example.com/new", "tags": ["b"]},
            {"key": "no spaces"},
            "RATELIMIT_LINKS_TOKEN",
            "200",
            "rollups.links_api.link_update",
        ),
        (LINK, "delete"): _link_calls(
            "DELETE", _link_path, lambda w: None, None, "RATELIMIT_LINKS_TOKEN", "204", "rollups.links_api.link_delete"
        ),
    }
)

SCENARIOS.update(
    {
        (EXPORT, "get"): {
            **_reads(lambda w: _customer_path(w) + "/export", breaks="conversions.customers_api.customer_export"),
            "404": lambda api, w: api.get(EXPORT.replace("{id}", "ext_nobody"), token=w["token"]),
        },
        (CUSTOMER, "delete"): {
            **_webhook_reads("DELETE", _customer_path, "204", "RATELIMIT_ERASURES_TOKEN"),
            "404": lambda api, w: _send(api, w, "DELETE", CUSTOMER.replace("{id}", "ext_nobody")),
            "500": ("conversions.customers_api.customer_erase", None),
            "503": ("conversions.customers_api.customer_erase", None, OperationalError),
        },
    }
)


def _tags_path(w) -> str:
    return TAGS.replace("{customer_id}", str(w["enrolled"].customer_id))


def _tag_path(w) -> str:
    return TAG.replace("{customer_id}", str(w["enrolled"].customer_id)).replace("{tag}", "vip")


def _broken(method: str, path_of, body, target: str, error: type[Exception]):
    """A scenario whose service raises: the unexpected error (500) or the database's (503)."""

    def scenario(api, w):
        with mock.patch(target, side_effect=error("boom")):
            return _send(api, w, method, path_of(w), body)

    return scenario


def _tag_writer(w) -> str:
    return api_token_create(workspace=w["workspace"], name="reader", scopes=["read"]).secret


SCENARIOS.update(
    {
        (TAGS, "post"): {
            "200": lambda api, w: _send(api, w, "POST", _tags_path(w), {"tags": ["VIP"]}),
            "400": lambda api, w: _send(api, w, "POST", _tags_path(w), raw="{"),
            "401": lambda api, w: _send(api, w, "POST", _tags_path(w), {"tags": ["vip"]}, token=""),
            "403": lambda api, w: _send(api, w, "POST", _tags_path(w), {"tags": ["vip"]}, token=_tag_writer(w)),
            "404": lambda api, w: _send(api, w, "POST", TAGS.replace("{customer_id}", "ext_nobody"), {"tags": ["a"]}),
            "413": lambda api, w: _send(api, w, "POST", _tags_path(w), raw=json.dumps({"pad": "x" * 70_000})),
            "415": lambda api, w: _send(api, w, "POST", _tags_path(w), raw="<a/>", content_type="application/xml"),
            "422": lambda api, w: _send(api, w, "POST", _tags_path(w), {"tags": ["x" * 51]}),
            "429": _webhook_reads("POST", _tags_path, "200", "RATELIMIT_READ_TOKEN")["429"],
            "500": _broken("POST", _tags_path, {"tags": ["a"]}, "customers.tags_api.contact_tags_add", RuntimeError),
            "503": _broken(
                "POST", _tags_path, {"tags": ["a"]}, "customers.tags_api.contact_tags_add", OperationalError
            ),
        },
        (TAG, "delete"): {
            **_webhook_reads("DELETE", _tag_path, "200", "RATELIMIT_READ_TOKEN"),
            "403": lambda api, w: _send(api, w, "DELETE", _tag_path(w), token=_tag_writer(w)),
            "404": lambda api, w: _send(api, w, "DELETE", TAG.replace("{customer_id}", "0").replace("{tag}", "vip")),
            "422": lambda api, w: _send(api, w, "DELETE", _tags_path(w) + "/%3Cb%3E"),
            "500": _broken("DELETE", _tag_path, None, "customers.tags_api.contact_tags_remove", RuntimeError),
            "503": _broken("DELETE", _tag_path, None, "customers.tags_api.contact_tags_remove", OperationalError),
        },
    }
)


def _refunds(w) -> str:
    return REFUNDS.replace("{conversion_id}", str(w["sale"].pk))


def _refund_twice(api, w):
    with override_settings(RATELIMIT_CONVERSIONS_TOKEN="1/m"):
        _post(api, w, _refunds(w), {"amount_cents": 1})
        return _post(api, w, _refunds(w), {"amount_cents": 1})


def _options_twice(api):
    with override_settings(RATELIMIT_BROWSER_IP="1/m"):
        api.options(BROWSER, HTTP_ORIGIN=SHOP)
        return api.options(BROWSER, HTTP_ORIGIN=SHOP)


def as_schemathesis_response(resp) -> schemathesis.Response:
    request = requests.Request(
        resp.request["REQUEST_METHOD"], "http://testserver" + resp.request["PATH_INFO"]
    ).prepare()
    return schemathesis.Response(
        status_code=resp.status_code,
        headers={name.lower(): [value] for name, value in resp.headers.items()},
        content=resp.content,
        request=request,
        elapsed=0.0,
        verify=True,
    )


def test_scenarios_cover_every_documented_status():
    documented = {
        (path, method): set(operation["responses"])
        for path, item in committed_schema()["paths"].items()
        for method, operation in item.items()
    }
    assert {op: set(statuses) for op, statuses in SCENARIOS.items()} == documented


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("operation", "status"),
    [(op, status) for op, statuses in SCENARIOS.items() for status in statuses],
    ids=lambda value: value if isinstance(value, str) else f"{value[1].upper()} {value[0]}",
)
def test_live_answer_conforms_to_the_schema(api, world, openapi, monkeypatch, operation, status):
    scenario = SCENARIOS[operation][status]
    path, method = operation
    if isinstance(scenario, tuple):  # (service to break, body[, error]): an unexpected error, or the database's
        target, body_of, error = (*scenario, RuntimeError)[:3]

        def explode(*args, **kwargs):
            raise error("boom")

        monkeypatch.setattr(target, explode)
        if path.startswith(WEBHOOKS):
            resp = _send(api, world, method.upper(), _webhook_path(world, path), body_of(world) if body_of else None)
        elif method == "options":
            resp = api.options(BROWSER, HTTP_ORIGIN=SHOP)
        elif method == "delete":
            resp = _send(api, world, "DELETE", _customer_path(world))
        elif method == "get":
            target_path = path.replace("{id}", str(world["enrolled"].customer_id)).replace("{slug}", "spring")
            resp = api.get(target_path, token=world["token"])
        else:
            resp = _post(
                api,
                world,
                path.replace("{slug}", "spring").replace("{conversion_id}", str(world["sale"].pk)),
                body_of(world),
            )
    else:
        resp = scenario(api, world)
    assert str(resp.status_code) == status, resp.content
    if not status.startswith("2"):
        assert set(resp.json()) == {"error"} and isinstance(resp.json()["error"], str)
    assert_conforms(openapi, path, method, resp)


def assert_conforms(openapi, path: str, method: str, resp) -> None:
    parameters = (
        {"slug": "spring"}
        if "{slug}" in path
        else {"id": "1"}
        if "{id}" in path
        else {"conversion_id": "1"}
        if "{conversion_id}" in path
        else {"customer_id": "1", "tag": "vip"}
        if "{customer_id}" in path
        else None
    )
    case = openapi[path][method.upper()].Case(path_parameters=parameters)
    case.validate_response(
        as_schemathesis_response(resp),
        checks=[
            status_code_conformance,
            content_type_conformance,
            response_headers_conformance,
            response_schema_conformance,
        ],
    )


@pytest.mark.django_db
def test_suppressed_lead_conforms_with_a_null_enrollment(api, world, openapi):
    resp = _post(api, world, "/api/v1/campaigns/spring/leads", {"email": "GONE@example.com"})
    assert resp.status_code == 200 and resp.json()["enrollment"] is None
    assert_conforms(openapi, LEADS, "post", resp)


@pytest.mark.django_db
def test_idempotent_replay_and_reused_key_conform(api, world, openapi):
    body, key = _conversion(world), {"HTTP_IDEMPOTENCY_KEY": "order-1001"}
    first = _post(api, world, CONVERSIONS, body, **key)
    replay = _post(api, world, CONVERSIONS, body, **key)
    assert (first.status_code, replay.status_code, replay.json()) == (201, 201, first.json())
    assert replay["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    reused = _post(api, world, CONVERSIONS, {**body, "value_cents": 200}, **key)
    assert (reused.status_code, reused.json()) == (422, {"error": "idempotency key reused with a different body"})
    for resp in (first, replay, reused):
        assert_conforms(openapi, CONVERSIONS, "post", resp)


@pytest.mark.django_db
def test_refused_preflight_conforms(api, world, openapi):
    resp = api.options(BROWSER, HTTP_ORIGIN="https://evil.example")
    assert resp.status_code == 204 and "Access-Control-Allow-Origin" not in resp
    assert_conforms(openapi, BROWSER, "options", resp)
