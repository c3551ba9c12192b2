"""Schema-driven fuzzing: schemathesis against the WSGI application, every v1 operation, real credentials and data."""

import json
import os

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from lftrack.wsgi import application
from tests.factories import (
    ApiTokenFactory,
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    CustomerFactory,
    PostFactory,
)

# Bounded for CI on 2 cores: a fixed number of generated requests per operation and generation mode,
# always the same ones (derandomized), beside schemathesis' examples and coverage (boundary) cases:
# about 25 s on PostgreSQL. FUZZ_EXAMPLES=2000 FUZZ_RANDOM=1 digs deeper by hand.
MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or 200)
DERANDOMIZE = not os.environ.get("FUZZ_RANDOM")
SHOP = "https://shop.acme.example"
NO_LIMITS = "1000000/m"
BROWSER = "/api/v1/browser/conversions"


@schemathesis.check
def error_body_is_exact(ctx, response, case) -> bool | None:
    """docs/api.md, errors: every non-2xx answer under /api/v1 is exactly `{"error": <string>}`."""
    if response.status_code < 300:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(f"{response.status_code} without a JSON body: {response.content[:200]!r}") from None
    if not (isinstance(body, dict) and list(body) == ["error"] and isinstance(body["error"], str)):
        raise AssertionError(f'{response.status_code} body is not {{"error": <string>}}: {body!r}')
    return True


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    error_body_is_exact,
    unsupported_method,  # coverage phase: other methods answer 405 with an Allow header
    ignored_auth,  # requests without the bearer token are refused
]


# Loaded from the application itself at import; pytest-django has set Django up by then. The Host
# header schemathesis' WSGI client sends must be allowed (the suite runs with DEBUG off).
with override_settings(ALLOWED_HOSTS=["localhost"]):
    schema = schemathesis.openapi.from_wsgi(
        "/api/v1/openapi.json",
        application,
        config=schemathesis.Config.from_dict(
            {"generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "deterministic": DERANDOMIZE}}
        ),
    )
# What the `world` fixture seeded for the running test, read by the hooks while they generate.
SEEDED: dict = {}


@pytest.fixture
def world(db, settings, acme, globex, public_dns):
    """acme with a token, the shop origin, clicks and a campaign, so that valid requests succeed."""
    for name in (
        "RATELIMIT_CONVERSIONS_TOKEN",
        "RATELIMIT_CONVERSIONS_IP",
        "RATELIMIT_CAMPAIGN_LEADS_TOKEN",
        "RATELIMIT_BROWSER_IP",
        "RATELIMIT_BROWSER_KEY",
        "RATELIMIT_WEBHOOKS_TOKEN",
        "RATELIMIT_READ_TOKEN",
        "RATELIMIT_READ_IP",
        "RATELIMIT_WEBHOOKS_IP",
        "RATELIMIT_ERASURES_TOKEN",
    ):
        setattr(settings, name, NO_LIMITS)  # fuzzing sends far more than a minute's allowance
    settings.ALLOWED_HOSTS = ["localhost"]
    cache.clear()
    acme.allowed_origins = SHOP
    acme.save()
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign)
    CustomerFactory(workspace=acme, email="known@example.com", external_id="user_1")
    token = ApiTokenFactory(workspace=acme)
    SEEDED.update(
        click_ids=[ClickFactory(link__post__workspace=acme).click_id for _ in range(3)]
        + [ClickFactory(link__post=PostFactory(workspace=acme, campaign=campaign)).click_id]
        + [ClickFactory(link__post__workspace=globex).click_id],  # another workspace's: unknown here
        token=token.secret,
        tracking_key=acme.tracking_key,
    )
    # Django closes the connection around every request it serves; here that would end the test's
    # transaction (Django's test client unhooks this too, schemathesis' WSGI client does not).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield SEEDED
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
        SEEDED.clear()
        cache.clear()


@schema.hook
def flatmap_body(context, body):
    if not isinstance(body, dict):
        return st.just(body)
    strategy = st.just(body)
    # Seeded clicks most of the time, so that leads and sales get recorded; the generated id otherwise.
    if isinstance(body.get("click_id"), str):
        strategy = st.sampled_from([*SEEDED["click_ids"], body["click_id"]]).map(lambda cid: {**body, "click_id": cid})
    # The pixel's body key (the header is then left out): the workspace's own half of the time.
    if isinstance(body.get("key"), str):
        strategy = strategy.flatmap(
            lambda b: st.sampled_from([SEEDED["tracking_key"], b["key"]]).map(lambda key: {**b, "key": key})
        )
    return strategy


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    if isinstance(path_parameters, dict) and "slug" in path_parameters:
        return st.sampled_from(["spring", path_parameters["slug"]]).map(lambda slug: {**path_parameters, "slug": slug})
    return st.just(path_parameters)


@schema.hook
def flatmap_headers(context, headers):
    # The preflight: an allowed origin half of the time.
    if isinstance(headers, dict) and "Origin" in headers:
        return st.sampled_from([SHOP, headers["Origin"]]).map(lambda origin: {**headers, "Origin": origin})
    return st.just(headers)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=DERANDOMIZE,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_v1_api_holds_to_its_schema(case, world):
    # Real credentials on every request: the bearer token, or the pixel's tracking key (header or body).
    if case.operation.path != BROWSER:
        headers = {"Authorization": f"Bearer {world['token']}"}
    elif case.method == "POST" and not (isinstance(case.body, dict) and "key" in case.body):
        headers = {"X-Tracking-Key": world["tracking_key"]}
    else:
        headers = {}
    case.call_and_validate(headers=headers, checks=CHECKS)
