"""lftrack.ratelimit: the client address behind N trusted proxies, and the counters on the cache."""

import runpy
import socket
import time

import pytest
import time_machine
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory, override_settings

import lftrack.settings
from lftrack.errors import RateLimited
from lftrack.ratelimit import CircuitBreaker, Limit, address_key, breaker, client_ip, ip_key, limits_enforce, rate_parse


@pytest.fixture(autouse=True)
def frozen_clock():
    """Counters live in fixed windows: a test straddling a window's end would see its count reset."""
    with time_machine.travel("2026-03-01 12:00:00+00:00", tick=False):
        yield


def request(remote="192.0.2.10", forwarded=None):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return RequestFactory().post("/api/v1/conversions", REMOTE_ADDR=remote, **extra)


@pytest.mark.parametrize(
    ("proxies", "remote", "forwarded", "expected"),
    [
        # No proxy: the socket's address, whatever the client claims.
        (0, "203.0.113.5", None, "203.0.113.5"),
        (0, "203.0.113.5", "6.6.6.6", "203.0.113.5"),
        # One proxy: the address it appended, the last one.
        (1, "10.0.0.2", "198.51.100.4", "198.51.100.4"),
        (1, "10.0.0.2", "6.6.6.6, 198.51.100.4", "198.51.100.4"),
        (1, "10.0.0.2", " 6.6.6.6 ,198.51.100.4 ", "198.51.100.4"),
        # Two proxies: the outer one appended the client, the inner one appended the outer proxy.
        (2, "10.0.0.3", "198.51.100.4, 10.0.0.2", "198.51.100.4"),
        (2, "10.0.0.3", "6.6.6.6, 7.7.7.7, 198.51.100.4, 10.0.0.2", "198.51.100.4"),
        # Fewer entries than trusted proxies (a request that bypassed one): fall back to the socket.
        (2, "10.0.0.3", "198.51.100.4", "10.0.0.3"),
        (1, "10.0.0.2", None, "10.0.0.2"),
        (1, "10.0.0.2", "", "10.0.0.2"),
        (1, "10.0.0.2", " , ", "10.0.0.2"),
        (1, "10.0.0.2", "6.6.6.6, 2001:db8::1", "2001:db8::1"),
    ],
)
def test_client_ip_trusts_only_what_our_proxies_wrote(proxies, remote, forwarded, expected):
    with override_settings(TRUSTED_PROXY_COUNT=proxies):
        assert client_ip(request(remote, forwarded)) == expected


LIMITS = (Limit("test-ip", ip_key, "RATELIMIT_TEST_IP"),)


@override_settings(RATELIMIT_TEST_IP="2/m")
def test_limits_count_per_key_and_report_what_is_left():
    assert limits_enforce(request("198.51.100.1"), LIMITS) == (2, 1)
    assert limits_enforce(request("198.51.100.1"), LIMITS) == (2, 0)
    with pytest.raises(RateLimited) as refused:
        limits_enforce(request("198.51.100.1"), LIMITS)
    assert refused.value.headers()["X-RateLimit-Remaining"] == "0"
    assert 1 <= refused.value.retry_after <= 60
    assert limits_enforce(request("198.51.100.2"), LIMITS) == (2, 1)


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.5", "203.0.113.5"),
        ("2001:db8:1:2::1", "2001:db8:1:2::"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::"),
        ("2001:0DB8:0001:0002:0:0:0:7", "2001:db8:1:2::"),
        ("fe80::1%eth0", "fe80::"),
        ("::ffff:198.51.100.4", "198.51.100.4"),  # a dual-stack socket's IPv4 client
        ("not an address", "not an address"),
        ("", ""),
    ],
)
def test_an_ipv6_client_is_keyed_by_its_64(address, key):
    assert address_key(address) == key


@override_settings(RATELIMIT_TEST_IP="2/m")
def test_addresses_of_one_ipv6_64_share_a_limit():
    assert limits_enforce(request("2001:db8:1:2::1"), LIMITS) == (2, 1)
    assert limits_enforce(request("2001:db8:1:2:a:b:c:d"), LIMITS) == (2, 0)
    with pytest.raises(RateLimited):
        limits_enforce(request("2001:db8:1:2::ffff"), LIMITS)
    assert limits_enforce(request("2001:db8:1:3::1"), LIMITS) == (2, 1)  # the next /64 is someone else


@override_settings(RATELIMIT_TEST_IP="2/m", RATELIMIT_ENABLE=False)
def test_limits_can_be_switched_off():
    for _ in range(5):
        assert limits_enforce(request(), LIMITS) is None


@override_settings(RATELIMIT_TEST_IP="3/m")
def test_a_counter_lives_for_its_window_and_a_new_one_starts_after_it():
    with time_machine.travel("2026-03-01 12:00:59+00:00", tick=False):
        assert limits_enforce(request("198.51.100.3"), LIMITS) == (3, 2)
        assert limits_enforce(request("198.51.100.3"), LIMITS) == (3, 1)
    with time_machine.travel("2026-03-01 12:01:00+00:00", tick=False):
        assert limits_enforce(request("198.51.100.3"), LIMITS) == (3, 2)


def test_a_changed_rate_starts_its_own_count():
    with override_settings(RATELIMIT_TEST_IP="2/m"):
        limits_enforce(request("198.51.100.4"), LIMITS)
        limits_enforce(request("198.51.100.4"), LIMITS)
    with override_settings(RATELIMIT_TEST_IP="5/m"):
        assert limits_enforce(request("198.51.100.4"), LIMITS) == (5, 4)


@pytest.mark.parametrize(
    ("rate", "parsed"), [("600/m", (600, 60)), ("1/s", (1, 1)), ("100/5m", (100, 300)), ("7/d", (7, 86400))]
)
def test_rates_parse(rate, parsed):
    assert rate_parse(rate) == parsed


@pytest.mark.parametrize("rate", ["600", "600/min", "/m", "x/m", "", "6/0", "6/0m"])
def test_bad_rates_are_refused_when_the_settings_load(monkeypatch, rate):
    monkeypatch.setenv("RATELIMIT_CONVERSIONS_IP", rate)
    with pytest.raises(ImproperlyConfigured, match="RATELIMIT_CONVERSIONS_IP must be a rate like 600/m"):
        runpy.run_path(lftrack.settings.__file__)


@pytest.fixture
def hung_redis():
    """CACHES on a port that accepts connections and never answers, like a Redis stuck on a full disk."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{server.getsockname()[1]}/0",
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    }
    server.close()


def test_a_hung_redis_fails_open_after_its_timeout(hung_redis, caplog):
    with override_settings(CACHES=hung_redis, RATELIMIT_TEST_IP="1/m"):
        assert limits_enforce(request(), LIMITS) is None
        assert limits_enforce(request(), LIMITS) is None  # over the limit, had it been counted
    assert "rate limits not enforced: cache unavailable (TimeoutError)" in caplog.text


def test_redis_settings_bound_every_cache_call(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    configured = runpy.run_path(lftrack.settings.__file__)  # the settings module as it reads this environment
    assert configured["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert configured["CACHES"]["default"]["OPTIONS"] == {"socket_connect_timeout": 0.25, "socket_timeout": 0.25}


def test_after_three_timeouts_in_a_row_a_hung_redis_costs_nothing(hung_redis, caplog):
    with override_settings(CACHES=hung_redis, RATELIMIT_TEST_IP="1/m"):
        for _ in range(3):  # each waits for its timeout
            assert limits_enforce(request(), LIMITS) is None
        assert breaker.is_open
        started = time.monotonic()
        for _ in range(20):
            assert limits_enforce(request(), LIMITS) is None
        assert (time.monotonic() - started) / 20 < 0.020
    opened = [r for r in caplog.records if "failed 3 times in a row" in r.getMessage()]
    assert len(opened) == 1  # logged once, not per request


def test_the_breaker_tries_again_after_its_pause():
    failing = CircuitBreaker(threshold=2, pause=30.0)
    failing.failed(TimeoutError())
    assert failing.allows()
    failing.failed(TimeoutError())
    assert not failing.allows()
    failing._open_until = time.monotonic() - 1  # its pause is over
    assert failing.allows()
    failing.succeeded()
    failing.failed(TimeoutError())
    assert failing.allows()  # one failure after a success does not open it again
