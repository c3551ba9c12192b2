"""Two real processes keep copies of a token; once a revocation returns, neither accepts it."""

import json
import os

import pytest
import requests
from django.utils import timezone

from lftrack.sharedcache import redis_cache
from tests.conftest import database_url
from tests.factories import ApiTokenFactory, ClickFactory
from tests.faults.conftest import running_gunicorn
from workspaces.models import ApiToken
from workspaces.tokens import api_token_revoke, api_tokens_changed

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]


def lead(base: str, token, click) -> int:
    body = json.dumps({"event": "lead", "click_id": click.click_id})
    headers = {"Authorization": f"Bearer {token.secret}", "Content-Type": "application/json"}
    return requests.post(f"{base}/api/v1/conversions", data=body, headers=headers, timeout=10).status_code


def test_a_revoked_token_is_refused_by_every_process_as_soon_as_the_revocation_returns(acme):
    if redis_cache() is None:
        pytest.skip("needs Redis: REDIS_URL, or redis-server on PATH for make test to start one")
    click = ClickFactory(link__post__workspace=acme)
    kept, revoked = ApiTokenFactory(workspace=acme), ApiTokenFactory(workspace=acme)
    env = {"REDIS_URL": os.environ["REDIS_URL"], "TOKEN_CACHE_SECONDS": "300"}
    # Two gunicorns of one worker each: two processes, and each request goes to the one it names.
    with (
        running_gunicorn(database=database_url(), **env) as (first, _),
        running_gunicorn(database=database_url(), **env) as (second, _),
    ):
        for base in (first, second):
            for token in (kept, revoked):
                assert [lead(base, token, click) for _ in range(3)] == [201] * 3
        # Behind the service's back: both processes still serve their copies (so copies are in use)...
        ApiToken.objects.filter(pk=kept.pk).update(revoked_at=timezone.now())
        assert [lead(base, kept, click) for base in (first, second)] == [201, 201]
        api_tokens_changed()  # ...until the generation changes: both read the database again at once
        assert [lead(base, kept, click) for base in (first, second)] == [401, 401]
        # Through the service, as the back office and the CLI revoke: refused as soon as it returns.
        assert [lead(base, revoked, click) for base in (first, second)] == [201, 201]
        api_token_revoke(workspace=acme, token_id=revoked.pk)
        assert [lead(base, revoked, click) for base in (first, second) for _ in range(3)] == [401] * 6
