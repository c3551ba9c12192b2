"""Money bounds (docs/api.md): every amount at most 2**53 - 1 minor units, in the API (422) and in the database
(CHECK constraints, added NOT VALID where older rows are over the bound, validated where none is)."""

import logging

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from conversions.models import ConversionEvent, Refund
from lftrack.currencies import MONEY_MAX
from tests.conftest import assert_api_error
from tests.factories import ClickFactory, ConversionEventFactory, RefundFactory

URL = "/api/v1/conversions"
VALUE_TOO_LARGE = "value_cents must be at most 9007199254740991"
AMOUNT_TOO_LARGE = "amount_cents must be at most 9007199254740991"
EVENT_CHECK = "conversions_event_value_bounded"


def test_the_bound_is_the_largest_integer_a_json_double_holds_exactly():
    assert MONEY_MAX == 2**53 - 1 == int(float(MONEY_MAX)) and int(float(MONEY_MAX + 2)) != MONEY_MAX + 2


@pytest.mark.django_db
def test_a_sale_at_the_bound_is_stored_and_one_more_is_422(api, acme, acme_token):
    click = ClickFactory(link__post__workspace=acme)
    sale = {"event": "sale", "click_id": click.click_id}
    assert_api_error(api.post(URL, {**sale, "value_cents": MONEY_MAX + 1}, token=acme_token), 422, VALUE_TOO_LARGE)
    assert_api_error(api.post(URL, {**sale, "value_cents": 2**63 - 1}, token=acme_token), 422, VALUE_TOO_LARGE)
    assert not ConversionEvent.objects.exists()
    assert api.post(URL, {**sale, "value_cents": MONEY_MAX}, token=acme_token).status_code == 201
    assert ConversionEvent.objects.get().value_cents == MONEY_MAX
    # On a lead value_cents is ignored, whatever it holds.
    assert (
        api.post(URL, {"event": "lead", "click_id": click.click_id, "value_cents": 2**70}, token=acme_token).status_code
        == 201
    )


@pytest.mark.django_db
def test_a_refund_at_the_bound_is_stored_and_one_more_is_422(api, acme, acme_token):
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=MONEY_MAX)
    refunds = f"{URL}/{sale.pk}/refunds"
    assert_api_error(api.post(refunds, {"amount_cents": MONEY_MAX + 1}, token=acme_token), 422, AMOUNT_TOO_LARGE)
    assert not Refund.objects.exists()
    assert api.post(refunds, {"amount_cents": MONEY_MAX}, token=acme_token).status_code == 201


@pytest.mark.django_db
def test_the_database_refuses_amounts_over_the_bound(acme):
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=100)
    with pytest.raises(IntegrityError, match=EVENT_CHECK), transaction.atomic():
        ConversionEventFactory(click=sale.click, event="sale", value_cents=MONEY_MAX + 1)
    with pytest.raises(IntegrityError, match="conversions_refund_amount_bounded"), transaction.atomic():
        RefundFactory(conversion=sale, amount_cents=MONEY_MAX + 1)


def stored_before_the_bound(sale: ConversionEvent, value: int) -> None:
    """`sale` given `value` as a database from before the bound could hold it: the check is dropped for the
    update and put back NOT VALID, as the migration leaves it on such a database."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no foreign-key check pending: the ALTER waits for none
        cursor.execute(f"ALTER TABLE {ConversionEvent._meta.db_table} DROP CONSTRAINT {EVENT_CHECK}")
        cursor.execute(f"UPDATE {ConversionEvent._meta.db_table} SET value_cents = %s WHERE id = %s", [value, sale.pk])
        cursor.execute(
            f"ALTER TABLE {ConversionEvent._meta.db_table} ADD CONSTRAINT {EVENT_CHECK}"
            f" CHECK (value_cents <= {MONEY_MAX}) NOT VALID"
        )


@pytest.mark.django_db
def test_a_sale_stored_before_the_bound_is_refunded_in_parts_within_it(api, acme, acme_token):
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=100)
    stored_before_the_bound(sale, 2**63 - 1)
    refunds = f"{URL}/{sale.pk}/refunds"
    assert_api_error(api.post(refunds, {}, token=acme_token), 422, AMOUNT_TOO_LARGE)  # all that is left: too much
    assert (
        api.post(refunds, {"amount_cents": MONEY_MAX}, token=acme_token).json()["sale"]["net_cents"]
        == 2**63 - 1 - MONEY_MAX
    )


def constraint_validated(name: str) -> bool | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT convalidated FROM pg_constraint WHERE conname = %s", [name])
        row = cursor.fetchone()
    return row and row[0]


def migrate(*targets) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(list(targets) or executor.loader.graph.leaf_nodes())
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_older_rows_over_the_bound_and_checks_new_ones(acme, caplog):
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=100)
    migrate(("conversions", "0007_unique_ids_per_mode"))
    try:
        assert constraint_validated(EVENT_CHECK) is None
        ConversionEvent.objects.filter(pk=sale.pk).update(value_cents=2**63 - 1)
        with caplog.at_level(logging.WARNING, logger="lftrack.migrations"):
            migrate(("conversions", "0008_money_bounded"))
    finally:
        migrate()
    assert constraint_validated(EVENT_CHECK) is False  # NOT VALID: the old row stays, as it was
    assert constraint_validated("conversions_refund_amount_bounded") is True
    (record,) = caplog.records
    assert (record.getMessage(), record.table, record.rows) == (
        "constraint left NOT VALID: stored amounts over the bound",
        "conversions_conversionevent",
        1,
    )
    assert ConversionEvent.objects.get(pk=sale.pk).value_cents == 2**63 - 1
    with pytest.raises(IntegrityError, match=EVENT_CHECK):
        ConversionEventFactory(click=sale.click, event="sale", value_cents=MONEY_MAX + 1)


@pytest.mark.django_db(transaction=True)
def test_the_migration_validates_the_checks_of_a_clean_database(acme):
    ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=MONEY_MAX)
    migrate(("conversions", "0007_unique_ids_per_mode"))
    migrate()
    assert (
        constraint_validated(EVENT_CHECK) is True and constraint_validated("conversions_refund_amount_bounded") is True
    )
