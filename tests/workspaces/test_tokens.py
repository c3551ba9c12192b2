"""API tokens: shown once, stored hashed, every 401 case, revocation, last-used throttling."""

import hashlib
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from tests.conftest import assert_api_error
from tests.factories import ApiTokenFactory, ClickFactory
from workspaces.models import ApiToken
from workspaces.tokens import api_token_authenticate, api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def lead_for(click):
    return {"event": "lead", "click_id": click.click_id}


def test_token_secret_is_high_entropy_and_only_its_digest_is_stored(acme):
    issued = api_token_create(workspace=acme, name="Zapier")
    assert issued.secret.startswith("lf_") and len(issued.secret) == 46
    row = ApiToken.objects.get(pk=issued.token.pk)
    assert row.digest == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert row.prefix == issued.secret[3:11]
    stored = [str(value) for value in ApiToken.objects.filter(pk=row.pk).values().first().values()]
    assert issued.secret not in stored


def test_tokens_are_distinct(acme):
    secrets = {api_token_create(workspace=acme, name="t").secret for _ in range(20)}
    assert len(secrets) == 20


def test_valid_token_reaches_the_api(api, acme_token):
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    resp = api.post("/api/v1/conversions", lead_for(click), token=acme_token)
    assert resp.status_code == 201


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token lf_" + "a" * 43,
        "Bearer lf_short",
        "Bearer " + "x" * 46,
        "Bearer lf_" + "a" * 43,  # well formed, unknown
        "Bearer lf_" + "a" * 43 + " extra",
    ],
)
def test_bad_credentials_are_unauthorized(api, acme, header):
    click = ClickFactory(link__post__workspace=acme)
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    resp = api.post("/api/v1/conversions", lead_for(click), **extra)
    assert_api_error(resp, 401, "unauthorized")
    assert resp["WWW-Authenticate"] == "Bearer"


def test_scheme_name_is_case_insensitive(api, acme_token):
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    resp = api.post("/api/v1/conversions", lead_for(click), HTTP_AUTHORIZATION=f"bearer {acme_token.secret}")
    assert resp.status_code == 201


def test_token_with_a_matching_prefix_but_wrong_secret_is_unauthorized(api, acme_token):
    forged = acme_token.secret[:11] + ("A" if acme_token.secret[11] != "A" else "B") + acme_token.secret[12:]
    assert api_token_authenticate(forged) is None
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    assert_api_error(api.post("/api/v1/conversions", lead_for(click), token=forged), 401, "unauthorized")


def test_revoked_token_is_unauthorized(api, acme_token):
    api_token_revoke(workspace=acme_token.workspace, token_id=acme_token.pk)
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    resp = api.post("/api/v1/conversions", lead_for(click), token=acme_token)
    assert_api_error(resp, 401, "unauthorized")
    assert ApiToken.objects.get(pk=acme_token.pk).revoked_at is not None  # revoked, not deleted


def test_token_of_another_workspace_cannot_see_this_workspace_clicks(api, acme, globex_token):
    click = ClickFactory(link__post__workspace=acme)
    assert_api_error(api.post("/api/v1/conversions", lead_for(click), token=globex_token), 422, "unknown click_id")


def test_revoking_another_workspaces_token_is_refused(acme, globex_token):
    from lftrack.errors import NotFound

    with pytest.raises(NotFound):
        api_token_revoke(workspace=acme, token_id=globex_token.pk)
    assert ApiToken.objects.get(pk=globex_token.pk).revoked_at is None


def test_last_used_is_written_at_most_once_a_minute(acme):
    token = ApiTokenFactory(workspace=acme)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        api_token_authenticate(token.secret)
        first = ApiToken.objects.get(pk=token.pk).last_used_at
        assert first == start
    with time_machine.travel(start + timedelta(seconds=30), tick=False):
        api_token_authenticate(token.secret)
        assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        api_token_authenticate(token.secret)
        assert ApiToken.objects.get(pk=token.pk).last_used_at == start + timedelta(seconds=61)


def test_authentication_is_one_query_when_last_used_is_fresh(acme, django_assert_num_queries):
    token = ApiTokenFactory(workspace=acme)
    api_token_authenticate(token.secret)
    with django_assert_num_queries(1):
        assert api_token_authenticate(token.secret).workspace == acme
