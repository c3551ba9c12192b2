"""A contact's stored lifetime totals (CustomerTotals): leads, sales and net revenue per currency, written in the
statement that writes each conversion and refund, equal to plain sums of the rows at every moment, under concurrent
writers too; test mode apart, erasure taking them, retention keeping them, the migration filling them."""

import importlib

import pytest
import time_machine
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Sum

from conversions.models import ConversionEvent, CustomerTotals, Refund
from conversions.refunds import refund_record
from conversions.selectors import customer_totals
from conversions.services import conversion_record
from customers.erasure import customer_erase
from customers.models import Customer
from rollups.retention import retention_purge
from rollups.services import numbers_roll_up
from tests.conftest import run_in_threads
from tests.factories import ClickFactory, ConversionEventFactory, CustomerFactory, LinkFactory, RefundFactory
from workspaces.services import workspace_retention_set
from workspaces.tokens import api_token_create

EMAIL = "ada@example.com"


def plain(customer: Customer) -> dict:
    """The totals summed from the rows, as the customers API showed them before they were stored."""
    events = ConversionEvent.objects.filter(customer=customer)
    revenue = []
    for currency in sorted(set(events.filter(event="sale").values_list("currency", flat=True))):
        sales = events.filter(event="sale", currency=currency)
        gross = sales.aggregate(total=Sum("value_cents"))["total"] or 0
        refunded = Refund.objects.filter(conversion__in=sales).aggregate(total=Sum("amount_cents"))["total"] or 0
        revenue.append(
            {
                "currency": currency,
                "sales": sales.count(),
                "gross_cents": gross,
                "refunded_cents": refunded,
                "net_cents": gross - refunded,
            }
        )
    leads, sales = events.filter(event="lead").count(), events.filter(event="sale").count()
    return {"leads": leads, "sales": sales, "revenue": revenue}


def stored(customer: Customer) -> dict:
    return customer_totals(customer_ids=[customer.pk])[customer.pk]


def record(workspace, click, event: str, value: int | None = None, currency: str | None = None, test: bool = False):
    return conversion_record(
        workspace=workspace,
        channel="api",
        event=event,
        click_id=click.click_id,
        value_cents=value,
        currency=currency,
        customer={"email": EMAIL},
        test=test,
    )


@pytest.mark.django_db
def test_conversions_and_refunds_through_the_api_keep_the_totals(api, acme, acme_token):
    click = ClickFactory(link__post__workspace=acme)
    post = lambda body: api.post("/api/v1/conversions", {"click_id": click.click_id, **body}, token=acme_token)  # noqa: E731
    post({"event": "lead", "customer": {"email": EMAIL}})
    usd = post({"event": "sale", "value_cents": 4900, "customer": {"email": EMAIL}}).json()
    post({"event": "sale", "value_cents": 1000, "currency": "EUR", "customer": {"email": EMAIL}})
    post({"event": "sale", "value_cents": 700})  # nobody's: no contact's totals
    refund = api.post(f"/api/v1/conversions/{usd['id']}/refunds", {"amount_cents": 900}, token=acme_token)
    assert refund.status_code == 201
    ada = Customer.objects.get(email=EMAIL)
    answer = api.get(f"/api/v1/customers/{ada.pk}", token=acme_token).json()["totals"]
    assert answer == {
        "leads": 1,
        "sales": 2,
        "revenue": [
            {"currency": "EUR", "sales": 1, "gross_cents": 1000, "refunded_cents": 0, "net_cents": 1000},
            {"currency": "USD", "sales": 1, "gross_cents": 4900, "refunded_cents": 900, "net_cents": 4000},
        ],
    }
    assert answer == plain(ada)
    assert CustomerTotals.objects.count() == 3  # counts, EUR, USD: the sale of nobody made none


@pytest.mark.django_db
def test_test_mode_conversions_count_only_for_the_test_contact(api, acme, acme_token):
    test_token = api_token_create(workspace=acme, name="trying", test=True).secret
    click = ClickFactory(link__post__workspace=acme)
    for token, value in ((acme_token, 4900), (test_token, 100000)):
        body = {"event": "sale", "click_id": click.click_id, "value_cents": value, "customer": {"email": EMAIL}}
        assert api.post("/api/v1/conversions", body, token=token).status_code == 201
    live, test = Customer.objects.get(email=EMAIL, is_test=False), Customer.objects.get(email=EMAIL, is_test=True)
    assert stored(live)["revenue"][0]["net_cents"] == 4900
    assert stored(test)["revenue"][0]["net_cents"] == 100000
    listed = api.get("/api/v1/customers", token=acme_token).json()["data"]
    assert [(c["id"], c["totals"]["sales"], c["totals"]["revenue"][0]["gross_cents"]) for c in listed] == [
        (live.pk, 1, 4900)
    ]


@pytest.mark.django_db
def test_a_sale_without_value_counts_as_a_sale_of_nothing(acme):
    click = ClickFactory(link__post__workspace=acme)
    record(acme, click, "sale")
    ada = Customer.objects.get(email=EMAIL)
    assert (
        stored(ada)
        == plain(ada)
        == {
            "leads": 0,
            "sales": 1,
            "revenue": [{"currency": "USD", "sales": 1, "gross_cents": 0, "refunded_cents": 0, "net_cents": 0}],
        }
    )


@pytest.mark.django_db
def test_erasure_takes_the_totals_and_a_refund_afterwards_counts_for_nobody(acme):
    click = ClickFactory(link__post__workspace=acme)
    sale = record(acme, click, "sale", 5000)
    ada = Customer.objects.get(email=EMAIL)
    bob = CustomerFactory(workspace=acme)
    ConversionEventFactory(click=click, customer=bob, event="lead")
    customer_erase(customer=ada)
    assert not CustomerTotals.objects.filter(customer=ada).exists()
    refund_record(workspace=acme, sale_id=sale.pk, amount_cents=100)
    assert not CustomerTotals.objects.filter(customer=ada).exists()
    assert stored(bob)["leads"] == 1  # someone else's stay
    record(acme, click, "lead")  # the address again: a new contact, from zero
    back = Customer.objects.get(email=EMAIL, erased_at__isnull=True)
    assert stored(back) == {"leads": 1, "sales": 0, "revenue": []}


@pytest.mark.django_db
def test_retention_purges_the_rows_and_the_lifetime_totals_stay(acme):
    link = LinkFactory(post__workspace=acme)
    with time_machine.travel("2026-01-01T12:00:00Z", tick=False):
        sale = record(acme, ClickFactory(link=link), "sale", 5000)
        RefundFactory(conversion=sale, amount_cents=1000)
        record(acme, ClickFactory(link=link), "lead")
    ada = Customer.objects.get(email=EMAIL)
    before = stored(ada)
    assert before["revenue"][0]["net_cents"] == 4000
    numbers_roll_up()
    workspace_retention_set(workspace=acme, days=30)
    acme.refresh_from_db()
    with time_machine.travel("2026-06-01T12:00:00Z", tick=False):
        assert retention_purge().conversions == 2
    assert not ConversionEvent.objects.filter(customer=ada).exists()
    assert stored(ada) == before


@pytest.mark.django_db
def test_deleting_test_data_takes_the_test_contacts_totals(api, acme):
    from conversions.testdata import workspace_test_data_delete

    click = ClickFactory(link__post__workspace=acme)
    record(acme, click, "sale", 100, test=True)
    record(acme, click, "sale", 200)
    workspace_test_data_delete(workspace=acme)
    assert list(CustomerTotals.objects.values_list("customer__is_test", "currency", "sales")) in (
        [(False, "", 1), (False, "USD", 1)],
        [(False, "USD", 1), (False, "", 1)],
    )


@pytest.mark.django_db(transaction=True)
def test_concurrent_conversions_and_refunds_for_one_contact_keep_exact_totals(acme):
    """Twenty-four threads at once on one contact: leads, sales in two currencies, and partial refunds of sales
    made before; the stored totals equal the rows' sums afterwards, nothing lost or counted twice."""
    click = ClickFactory(link__post__workspace=acme)
    earlier = [record(acme, click, "sale", 3000, currency) for currency in ("USD", "EUR", "USD", "EUR")]
    ada = Customer.objects.get(email=EMAIL)

    def work(i: int):
        kind = i % 4
        if kind == 0:
            return record(acme, click, "lead")
        if kind == 1:
            return record(acme, click, "sale", 1000 + i, "USD")
        if kind == 2:
            return record(acme, click, "sale", 500 + i, "EUR")
        return refund_record(workspace=acme, sale_id=earlier[(i // 4) % 4].pk, amount_cents=100 + i)

    results = run_in_threads(24, work)
    assert [repr(r) for r in results if isinstance(r, Exception)] == []
    totals = stored(ada)
    assert totals == plain(ada)
    assert (totals["leads"], totals["sales"]) == (6, 16)
    assert Refund.objects.count() == 6


def migrate(*targets) -> None:
    """To `targets`; none: to the newest migration of every app, where every later test expects the schema."""
    executor = MigrationExecutor(connection)
    executor.migrate(list(targets) or executor.loader.graph.leaf_nodes())
    connection.close()  # forget the prepared statements of the table dropped and made again


@pytest.mark.django_db(transaction=True)
def test_the_fill_counts_the_rows_before_the_triggers_and_the_triggers_the_rows_after(acme, globex, monkeypatch):
    """Rows before 0011, rows between 0011 and 0012 (a refund of an older sale among them, and an erasure), in
    batches of two contacts: afterwards every contact's totals equal the rows' sums, and a second fill changes
    nothing."""
    fill = importlib.import_module("conversions.migrations.0012_fill_customer_totals")
    monkeypatch.setattr(fill, "BATCH", 2)
    ada, bob, cy = (CustomerFactory(workspace=acme) for _ in range(3))
    test_contact = CustomerFactory(workspace=globex, is_test=True)
    click, other = ClickFactory(link__post__workspace=acme), ClickFactory(link__post__workspace=globex)
    migrate(("conversions", "0010_conversion_of_erased"))
    try:
        ConversionEventFactory(click=click, customer=ada, event="lead")
        sale = ConversionEventFactory(click=click, customer=ada, event="sale", value_cents=4900)
        ConversionEventFactory(click=click, customer=ada, event="sale", value_cents=2**53 - 1, currency="EUR")
        RefundFactory(conversion=sale, amount_cents=900)
        ConversionEventFactory(click=click, customer=cy, event="sale", value_cents=700)
        ConversionEventFactory(click=other, customer=test_contact, event="sale", value_cents=10, is_test=True)
        ConversionEventFactory(click=click, event="sale", value_cents=10)  # nobody's
        migrate(("conversions", "0011_customer_totals"))
        RefundFactory(conversion=sale, amount_cents=100)  # an older sale's refund, before the fill
        ConversionEventFactory(click=click, customer=ada, event="lead")
        ConversionEventFactory(click=click, customer=bob, event="sale", value_cents=300, currency="JPY")
        customer_erase(customer=cy)
    finally:
        migrate()
    for contact in (ada, bob, cy, test_contact):
        assert stored(contact) == plain(contact), contact
    assert stored(ada)["leads"] == 2 and stored(ada)["revenue"][1]["net_cents"] == 3900
    assert set(CustomerTotals.objects.values_list("workspace_id", "customer_id", "currency")) == {
        (acme.pk, ada.pk, ""),
        (acme.pk, ada.pk, "EUR"),
        (acme.pk, ada.pk, "USD"),
        (acme.pk, bob.pk, ""),
        (acme.pk, bob.pk, "JPY"),
        (globex.pk, test_contact.pk, ""),
        (globex.pk, test_contact.pk, "USD"),
    }
    before = list(CustomerTotals.objects.order_by("pk").values())
    with connection.schema_editor() as editor:
        fill.fill(None, editor)  # run again: the same totals
    assert list(CustomerTotals.objects.order_by("pk").values()) == before
    ConversionEventFactory(click=click, customer=ada, event="lead")  # and the triggers count what follows
    assert stored(ada)["leads"] == 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("round_", range(4))
def test_erasure_racing_a_refund_and_a_conversion_leaves_no_totals_and_no_deadlock(acme, round_):
    """The erasure, a refund of the person's sale and a new sale for the person, at once: none fails (no
    deadlock), the erased contact keeps no totals, and a contact the sale made afterwards has exact ones."""
    click = ClickFactory(link__post__workspace=acme)
    sale = record(acme, click, "sale", 5000)
    ada = Customer.objects.get(email=EMAIL)

    def work(i: int):
        if i == 0:
            return customer_erase(customer=ada)
        if i == 1:
            return refund_record(workspace=acme, sale_id=sale.pk, amount_cents=1000)
        return record(acme, click, "sale", 700)

    results = run_in_threads(3, work)
    assert [repr(r) for r in results if isinstance(r, Exception)] == []
    assert not CustomerTotals.objects.filter(customer=ada).exists()
    for contact in Customer.objects.filter(erased_at__isnull=True):
        assert stored(contact) == plain(contact)
