"""The contacts list's lifetime value: leads, sales and net revenue columns from the stored totals, sortable, the
revenue sorted in the workspace's currency with the other currencies shown beside it; another workspace's contacts
never listed; the same number of queries whatever the rows."""

import re

import pytest
from django.urls import reverse

from backoffice.customers import CustomerAdmin
from conversions.refunds import refund_record
from tests.factories import ClickFactory, ConversionEventFactory, CustomerFactory

pytestmark = pytest.mark.django_db

LIST = reverse("admin:customers_customer_changelist")


def column(name: str) -> int:
    """The `o` parameter's number for a list column (Django counts from 1, the checkbox left out)."""
    return CustomerAdmin.list_display.index(name) + 1


def emails(client, **params) -> list[str]:
    response = client.get(LIST, params)
    assert response.status_code == 200
    return [c.email for c in response.context["cl"].result_list]


@pytest.fixture
def buyers(acme, globex):
    """Ada: 3 leads, 1 sale of 90.00 USD refunded down to 40.00; Grace: 1 lead, 2 sales of 30.00 USD and 500.00 EUR;
    Alan: nothing. In globex, Gina: the biggest buyer of all."""
    click = ClickFactory(link__post__workspace=acme)
    ada, grace, alan = (
        CustomerFactory(workspace=acme, email=f"{name}@example.com") for name in ("ada", "grace", "alan")
    )
    for _ in range(3):
        ConversionEventFactory(click=click, customer=ada, event="lead")
    sale = ConversionEventFactory(click=click, customer=ada, event="sale", value_cents=9000)
    refund_record(workspace=acme, sale_id=sale.pk, amount_cents=5000)
    ConversionEventFactory(click=click, customer=grace, event="lead")
    ConversionEventFactory(click=click, customer=grace, event="sale", value_cents=3000)
    ConversionEventFactory(click=click, customer=grace, event="sale", value_cents=50000, currency="EUR")
    gina = CustomerFactory(workspace=globex, email="gina@example.com")
    other = ClickFactory(link__post__workspace=globex)
    ConversionEventFactory(click=other, customer=gina, event="sale", value_cents=10**9)
    return {"ada": ada, "grace": grace, "alan": alan, "gina": gina}


def test_the_list_shows_each_contacts_lifetime_value(as_alice, buyers):
    response = as_alice.get(LIST, {"o": f"-{column('net_revenue')}"})
    html = response.content.decode()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html, re.S)
    text = {email: next(row for row in rows if email in row) for email in ("ada@", "grace@", "alan@")}
    assert re.search(
        r'field-leads">3<.*field-sales">1<.*field-net_revenue">40\.00 USD \(gross 90\.00 USD, refunded '
        r"50\.00 USD\)<",
        text["ada@"],
        re.S,
    )
    assert re.search(
        r'field-leads">1<.*field-sales">2<.*field-net_revenue">30\.00 USD<br>500\.00 EUR<', text["grace@"], re.S
    )
    assert re.search(r'field-leads">0<.*field-sales">0<.*field-net_revenue">-<', text["alan@"], re.S)
    assert "gina@" not in html


@pytest.mark.parametrize(
    ("name", "descending", "expected"),
    [
        ("leads", True, ["ada@example.com", "grace@example.com", "alan@example.com"]),
        ("leads", False, ["alan@example.com", "grace@example.com", "ada@example.com"]),
        ("sales", True, ["grace@example.com", "ada@example.com", "alan@example.com"]),
        # In USD, the workspace's currency: Ada's 40.00 net before Grace's 30.00 (her 500.00 EUR not added in).
        ("net_revenue", True, ["ada@example.com", "grace@example.com", "alan@example.com"]),
        ("net_revenue", False, ["alan@example.com", "grace@example.com", "ada@example.com"]),
    ],
)
def test_the_list_sorts_by_lifetime_value(as_alice, buyers, name, descending, expected):
    assert emails(as_alice, o=f"{'-' if descending else ''}{column(name)}") == expected


def test_revenue_sorts_in_the_workspaces_own_currency(as_alice, acme, buyers):
    acme.currency = "EUR"
    acme.save(update_fields=["currency"])
    # Ada sold in USD only: nothing in EUR, level with Alan, the newer contact first.
    assert emails(as_alice, o=f"-{column('net_revenue')}") == [
        "grace@example.com",
        "alan@example.com",
        "ada@example.com",
    ]
    html = as_alice.get(LIST, {"o": f"-{column('net_revenue')}"}).content.decode()
    assert "500.00 EUR<br>30.00 USD" in html  # the sorted currency first


def test_another_workspaces_contacts_stay_out_of_every_order(as_charlie, buyers):
    assert emails(as_charlie, o=f"-{column('net_revenue')}") == ["gina@example.com"]


def test_the_sorted_list_costs_the_same_queries_for_more_contacts(
    as_alice, acme, buyers, django_assert_max_num_queries
):
    click = ClickFactory(link__post__workspace=acme)
    for i in range(30):
        buyer = CustomerFactory(workspace=acme)
        ConversionEventFactory(
            click=click, customer=buyer, event="sale", value_cents=100 * i, currency=["USD", "EUR"][i % 2]
        )
    as_alice.get(LIST)  # warm the session and content types
    for name in ("leads", "sales", "net_revenue"):
        with django_assert_max_num_queries(10):
            response = as_alice.get(LIST, {"o": f"-{column(name)}"})
        assert len(response.context["cl"].result_list) == 33
