"""lftrack.db: the API's hot statements are prepared once per PostgreSQL connection."""

import time

import pytest
from django.db import close_old_connections, connection, connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from conversions.models import ConversionEvent
from customers.models import Customer
from lftrack.db import from_row, prepared_cursor
from tests.factories import ClickFactory

pytestmark = pytest.mark.django_db


def prepared(prefix: str) -> list[tuple[str, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            [prefix + "%"],
        )
        return cursor.fetchall()


def test_hot_statements_are_prepared_once_and_reused(api, acme_token):
    # The connection outlives single tests: count the runs this test adds.
    before = dict(prepared("WITH event AS (INSERT INTO conversions_conversionevent"))
    click = ClickFactory(link__post__workspace=acme_token.workspace, workspace=acme_token.workspace)
    for n in range(3):
        body = {"event": "lead", "click_id": click.click_id, "customer": {"email": f"p{n}@example.com"}}
        assert api.post("/api/v1/conversions", body, token=acme_token).status_code == 201
    [(statement, runs)] = prepared("WITH event AS (INSERT INTO conversions_conversionevent")
    assert "$1" in statement  # parameters bound server-side
    assert runs - before.get(statement, 0) == 3  # one prepared statement, run three times
    assert any(
        "SELECT TRUE AS created, id" in sql for sql, _ in prepared("WITH created AS (INSERT INTO customers_customer")
    )
    assert prepared("SELECT t.id, t.workspace_id")  # the token lookup


def test_django_own_queries_are_not_prepared():
    for _ in range(6):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'not prepared', %s", [1])
    assert prepared("SELECT 'not prepared'") == []


@override_settings(DB_PREPARED_STATEMENTS=False)
def test_preparing_can_be_switched_off_for_poolers():
    with prepared_cursor() as cursor:
        cursor.execute("SELECT 'switched off' AS label, %(n)s AS n", {"n": 1})
        assert cursor.fetchone() == ("switched off", 1)
    assert prepared("SELECT 'switched off'") == []


def test_prepared_cursor_is_a_django_cursor_on_any_database():
    with prepared_cursor() as cursor:
        cursor.execute("SELECT %(a)s + %(b)s AS total", {"a": 2, "b": 3})
        assert cursor.fetchone().total == 5  # rows are named


def test_an_open_connection_is_usable():
    connection.ensure_connection()
    assert connection.is_usable()


@pytest.mark.django_db(transaction=True)
def test_a_request_on_a_connection_postgresql_dropped_reconnects_instead_of_failing(api, acme_token):
    """A restart or failover drops persistent connections; the next request on one must not be a 500."""
    click = ClickFactory(link__post__workspace=acme_token.workspace, workspace=acme_token.workspace)
    body = {"event": "lead", "click_id": click.click_id}
    persistent = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = None  # the suite closes connections after each request
    try:
        assert api.post("/api/v1/conversions", body, token=acme_token).status_code == 201
        pid = connection.connection.info.backend_pid
        other = connections.create_connection("default")
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        other.close()
        deadline = time.monotonic() + 5
        while connection.is_usable() and time.monotonic() < deadline:  # the notice is on its way
            time.sleep(0.01)
        assert not connection.is_usable()

        close_old_connections()  # what every request starts with under gunicorn; the test client skips it
        assert api.post("/api/v1/conversions", body, token=acme_token).status_code == 201
        assert connection.connection.info.backend_pid != pid
        assert ConversionEvent.objects.filter(click=click).count() == 2
    finally:
        connection.settings_dict["CONN_MAX_AGE"] = persistent
        connection.close()


def test_from_row_builds_a_saved_instance_with_what_the_row_lacks_deferred(acme):
    row = {"id": 7, "workspace_id": acme.pk, "email": "ada@example.com", "owns_email": True}  # a key of no field
    customer = from_row(Customer, row, workspace=acme)
    assert (customer._state.adding, customer._state.db) == (False, "default")
    assert (customer.pk, customer.email) == (7, "ada@example.com")
    given = {"id", "workspace_id", "email"}
    assert customer.get_deferred_fields() == {f.attname for f in Customer._meta.concrete_fields} - given
    assert "name" in customer.get_deferred_fields()
    with CaptureQueriesContext(connection) as queries:
        assert customer.workspace is acme  # set from what was at hand: no query
    assert len(queries) == 0
