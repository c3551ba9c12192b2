"""Guards for places where the code goes around Django that no other test holds (docs/architecture.md,
"Around Django"): rows written by hand SQL come back as saved model instances, the pages' middleware passes
the API and the redirect through, every connection runs without JIT and with its lock timeout, and the
growing tables keep no index that another index already leads with, and the Redis connection the rate
limits keep per thread gets over a Redis that forgot their script or dropped the connection."""

import pytest
from django.conf import settings
from django.db import connection
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils.module_loading import import_string

from campaigns.services import campaign_lead_add
from conversions.services import conversion_record
from lftrack import ratelimit
from lftrack.ratelimit import Limit, ip_key, limits_enforce
from lftrack.sharedcache import redis_cache, redis_command
from tests.factories import CampaignEmailFactory, CampaignFactory, ClickFactory

pytestmark = pytest.mark.django_db


def test_rows_written_by_hand_sql_come_back_as_saved_instances(acme):
    """The conversion, its new customer and the enrollment are built from the statements' RETURNING rows by
    lftrack.db.from_row: Django must take them for saved rows, or a form's constraint check would find
    each one clashing with itself."""
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    conversion = conversion_record(
        workspace=acme, channel="api", event="lead", click_id=click.click_id, customer={"email": "ada@example.com"}
    )
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign)
    lead = campaign_lead_add(campaign=campaign, email="grace@example.com", name="Grace")
    for instance in (conversion, conversion.customer, lead.customer, lead.enrollment):
        assert (instance._state.adding, instance._state.db) == (False, "default"), instance
        instance.validate_constraints()  # a clash with itself raises ValidationError
        assert type(instance).objects.filter(pk=instance.pk).exists()


PAGES_ONLY = {"SessionMiddleware", "AuthenticationMiddleware", "MessageMiddleware"}


def passed_through(path: str) -> object:
    """The request as the view sees it behind the pages' three middleware, in settings.MIDDLEWARE's order."""
    seen = []

    def view(request):
        seen.append(request)
        return HttpResponse()

    chain = view
    for dotted in reversed(settings.MIDDLEWARE):
        if dotted.rsplit(".", 1)[1] in PAGES_ONLY:
            chain = import_string(dotted)(chain)
    chain(RequestFactory().get(path))
    return seen[0]


@pytest.mark.parametrize("path", ["/api/v1/conversions", "/l/abc"])
def test_the_api_and_the_redirect_skip_sessions_users_and_messages(path):
    """They authenticate by token or need no one (docs/benchmarks.md, "Middleware for the pages only")."""
    request = passed_through(path)
    assert [mark for mark in ("session", "user", "_messages") if hasattr(request, mark)] == []


def test_pages_get_sessions_users_and_messages():
    request = passed_through("/admin/")
    assert [mark for mark in ("session", "user", "_messages") if hasattr(request, mark)] == [
        "session",
        "user",
        "_messages",
    ]


def test_connections_run_without_jit_and_with_the_lock_timeout():
    """jit=off: the planner estimates the admin's per-row numbers high and JIT compiled one list for 1.5 s
    (docs/benchmarks.md, "Data growth"); the lock timeout is what turns a held row into a 503."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('jit'), current_setting('lock_timeout')::interval")
        jit, lock_timeout = cursor.fetchone()
    assert jit == "off"
    assert lock_timeout.total_seconds() * 1000 == settings.DB_LOCK_TIMEOUT


# The tables measured at 5,000,000 rows: each index costs every insert (docs/benchmarks.md, "Data growth").
GROWING = ["clicks_click", "conversions_conversionevent", "customers_customer", "customers_customeractivity"]


def test_the_growing_tables_keep_no_index_another_one_leads_with():
    """Django gives every foreign key an index of its own; on these tables a composite index that starts with
    the column serves its lookups, so the single one is dropped (`db_index=False`) and must stay dropped."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.relname, i.relname, x.indisunique, x.indpred IS NOT NULL,
                   string_to_array(x.indkey::text, ' ')::int[]
            FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
            WHERE t.relname = ANY(%s)
            """,
            [GROWING],
        )
        indexes = cursor.fetchall()
    assert {table for table, *_ in indexes} == set(GROWING)
    redundant = [
        (table, name, other)
        for table, name, unique, partial, keys in indexes
        if not unique and not partial and len(keys) == 1 and keys != [0]
        for table_b, other, _, partial_b, keys_b in indexes
        if table_b == table and other != name and not partial_b and keys_b[0] == keys[0]
    ]
    assert redundant == []


def test_the_kept_redis_connection_gets_over_a_forgotten_script_and_a_dropped_connection(settings, monkeypatch):
    """The rate limits send their script on a connection taken from the cache's pool and kept by the thread, not
    through Django's cache API (docs/benchmarks.md, "A kept Redis connection"): a Redis that restarted has
    forgotten the script, and a connection it dropped fails once (the request goes through) and is made again."""
    cache = redis_cache()
    if cache is None:
        pytest.skip("needs Redis: REDIS_URL, or redis-server on PATH for make test to start one")
    settings.RATELIMIT_KEPT_IP = "100/m"
    limits = (Limit("kept-connection", ip_key, "RATELIMIT_KEPT_IP"),)
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.77")
    assert limits_enforce(request, limits) == (100, 99)

    monkeypatch.setattr(ratelimit, "_COUNT_SHA", "0" * 40)  # as after a restart: no script by that digest
    assert limits_enforce(request, limits) == (100, 98)

    own_id = redis_command(cache, "CLIENT", "ID")
    cache._cache.get_client(write=True).execute_command("CLIENT", "KILL", "ID", own_id)
    assert limits_enforce(request, limits) is None  # the dropped connection: failed open, counted nothing
    assert limits_enforce(request, limits) == (100, 97)  # a new connection
    assert redis_command(cache, "CLIENT", "ID") != own_id
