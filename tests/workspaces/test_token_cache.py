"""Each process keeps the tokens it looked up while the token generation in Redis stands; a revocation replaces it."""

import logging
import socket
import time

import pytest
from django.core.cache import caches
from django.utils import timezone

from lftrack.ratelimit import breaker
from lftrack.sharedcache import redis_cache
from tests.factories import ApiTokenFactory
from workspaces.models import ApiToken
from workspaces.origins import workspace_origin_allow
from workspaces.services import workspace_settings_update
from workspaces.tokens import api_token_authenticate, api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis():
    if redis_cache() is None:
        pytest.skip("needs Redis: REDIS_URL, or redis-server on PATH for make test to start one")
    return redis_cache()


def looked_up(secret: str, django_assert_num_queries, queries: int) -> ApiToken | None:
    with django_assert_num_queries(queries):
        return api_token_authenticate(secret)


def test_a_token_looked_up_once_is_served_without_a_query(redis, acme, django_assert_num_queries):
    token = ApiTokenFactory(workspace=acme)
    api_token_authenticate(token.secret)
    api_token_authenticate(token.secret)  # the first lookup of a fresh Redis only sets the generation
    served = looked_up(token.secret, django_assert_num_queries, 0)
    assert (served.pk, served.workspace, served.workspace.slug) == (token.pk, acme, "acme")
    assert served is not looked_up(token.secret, django_assert_num_queries, 0)  # a fresh object each time


def test_a_revoked_token_is_refused_at_once(redis, acme, django_assert_num_queries, django_capture_on_commit_callbacks):
    token = ApiTokenFactory(workspace=acme)
    for _ in range(3):
        assert api_token_authenticate(token.secret) is not None
    with django_capture_on_commit_callbacks(execute=True):
        api_token_revoke(workspace=acme, token_id=token.pk)
    assert looked_up(token.secret, django_assert_num_queries, 1) is None


def test_the_copies_stand_until_the_generation_changes(redis, acme, settings, django_assert_num_queries):
    """What makes revocation go through api_token_revoke: a change behind its back is seen when copies expire."""
    settings.TOKEN_CACHE_SECONDS = 60
    token = ApiTokenFactory(workspace=acme)
    for _ in range(2):
        api_token_authenticate(token.secret)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert looked_up(token.secret, django_assert_num_queries, 0).pk == token.pk
    settings.TOKEN_CACHE_SECONDS = 0.2
    api_token_authenticate(ApiTokenFactory(workspace=acme).secret)  # copies made from now on live 0.2 s
    caches["default"].clear()  # Redis forgot the generation (a restart): no copy is served
    assert looked_up(token.secret, django_assert_num_queries, 1) is None


def test_copies_expire(redis, acme, settings, django_assert_num_queries):
    settings.TOKEN_CACHE_SECONDS = 0.2
    token = ApiTokenFactory(workspace=acme)
    for _ in range(2):
        api_token_authenticate(token.secret)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    time.sleep(0.25)
    assert looked_up(token.secret, django_assert_num_queries, 1) is None


def test_without_redis_every_lookup_reads_the_database(acme, settings, django_assert_num_queries):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    token = ApiTokenFactory(workspace=acme)
    api_token_authenticate(token.secret)  # and writes last_used_at
    for _ in range(3):
        assert looked_up(token.secret, django_assert_num_queries, 1).pk == token.pk


@pytest.fixture
def redis_down(settings):
    """CACHES on a port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    }


def test_with_redis_unreachable_lookups_read_the_database_and_a_revocation_waits_out_the_copies(
    redis_down, acme, settings, django_assert_num_queries, django_capture_on_commit_callbacks, caplog
):
    settings.TOKEN_CACHE_SECONDS = 0.5
    token = ApiTokenFactory(workspace=acme)
    api_token_authenticate(token.secret)  # and writes last_used_at
    for _ in range(2):
        assert looked_up(token.secret, django_assert_num_queries, 1).pk == token.pk
    breaker.reset()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        api_token_revoke(workspace=acme, token_id=token.pk)
    assert time.monotonic() - started >= 0.5  # any copy another process made before Redis went has expired
    assert "token revoked; waiting 0.5 s for the processes' copies to expire: cache unavailable" in caplog.text
    assert token.secret not in caplog.text
    assert looked_up(token.secret, django_assert_num_queries, 1) is None


def test_a_copy_carries_the_test_flag_and_the_currency_and_a_settings_change_is_seen_at_once(
    redis, acme, django_assert_num_queries, django_capture_on_commit_callbacks
):
    secret = api_token_create(workspace=acme, name="staging", test=True).secret
    for _ in range(2):
        api_token_authenticate(secret)
    served = looked_up(secret, django_assert_num_queries, 0)
    assert (served.is_test, served.workspace.currency) == (True, acme.currency)
    with django_capture_on_commit_callbacks(execute=True):
        workspace_settings_update(
            workspace=acme, name=acme.name, allowed_origins="https://shop.example.com", currency="JPY"
        )
    served = looked_up(secret, django_assert_num_queries, 1)
    assert (served.is_test, served.workspace.currency, served.workspace.allowed_origins) == (
        True,
        "JPY",
        "https://shop.example.com",
    )
    with django_capture_on_commit_callbacks(execute=True):
        workspace_origin_allow(workspace=acme, origin="https://blog.example.com")
    served = looked_up(secret, django_assert_num_queries, 1)
    assert served.workspace.allowed_origins == "https://shop.example.com\nhttps://blog.example.com"
