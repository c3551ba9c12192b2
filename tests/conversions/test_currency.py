"""A sale's currency: ISO 4217, any letter case, the workspace's by default; amounts in its minor unit, and
never added across currencies in the read API."""

import pytest

from conversions.models import ConversionEvent
from lftrack.currencies import MINOR_UNITS, amount_text
from tests.conftest import assert_api_error
from tests.factories import ClickFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/conversions"


def sale(click, **extra):
    return {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": 49000,
        "customer": {"email": "ada@example.com"},
        **extra,
    }


def test_a_sale_in_euros_is_stored_in_euros(api, acme, acme_token):
    click = ClickFactory(link__post__workspace=acme)
    assert api.post(URL, sale(click, currency="eur"), token=acme_token).status_code == 201
    assert ConversionEvent.objects.get().currency == "EUR"
    (item,) = api.get(URL, token=acme_token).json()["data"]
    assert (item["value_cents"], item["currency"], item["refunded_cents"], item["net_cents"]) == (
        49000,
        "EUR",
        0,
        49000,
    )


def test_without_a_currency_the_workspaces_is_used_and_leads_carry_none(api, acme, acme_token):
    acme.currency = "GBP"
    acme.save()
    click = ClickFactory(link__post__workspace=acme)
    assert api.post(URL, sale(click), token=acme_token).status_code == 201
    assert (
        api.post(URL, {"event": "lead", "click_id": click.click_id, "currency": "JPY"}, token=acme_token).status_code
        == 201
    )
    assert list(ConversionEvent.objects.order_by("pk").values_list("event", "currency")) == [
        ("sale", "GBP"),
        ("lead", "GBP"),
    ]
    lead, sold = api.get(URL, token=acme_token).json()["data"]
    assert (lead["currency"], lead["refunded_cents"], lead["net_cents"]) == (None, None, None)
    assert sold["currency"] == "GBP"


@pytest.mark.parametrize(
    ("currency", "message"),
    [
        ("EURO", "currency must be an ISO 4217 code"),
        ("XYZ", "currency must be an ISO 4217 code"),
        ("XAU", "currency must be an ISO 4217 code"),  # gold has no minor unit: no amount can be in it
        ("", "currency must be an ISO 4217 code"),
        ("€", "currency must be an ISO 4217 code"),
        (978, "currency must be a string"),
    ],
)
def test_an_unknown_currency_is_422_and_stores_nothing(api, acme, acme_token, currency, message):
    click = ClickFactory(link__post__workspace=acme)
    assert_api_error(api.post(URL, sale(click, currency=currency), token=acme_token), 422, message)
    assert not ConversionEvent.objects.exists()


@pytest.mark.parametrize("currency", ["nonsense", "XYZ", "", 978, ["EUR"], {"code": "EUR"}, True, "x" * 5000])
def test_a_leads_currency_is_ignored_whatever_it_holds(api, acme, acme_token, currency):
    """docs/api.md: currency is for sales only, ignored on a lead, as value_cents is."""
    click = ClickFactory(link__post__workspace=acme)
    resp = api.post(URL, {"event": "lead", "click_id": click.click_id, "currency": currency}, token=acme_token)
    assert resp.status_code == 201
    assert ConversionEvent.objects.get().currency == "USD"  # the workspace's, unused on a lead


@pytest.mark.parametrize(
    ("currency", "value", "shown"),
    [
        ("JPY", 5000, "5,000 JPY"),
        ("KWD", 1500, "1.500 KWD"),
        ("USD", 49000, "490.00 USD"),
        ("CLF", 12345, "1.2345 CLF"),
    ],
)
def test_zero_two_and_three_decimal_currencies_keep_their_minor_units(api, acme, acme_token, currency, value, shown):
    click = ClickFactory(link__post__workspace=acme)
    assert api.post(URL, sale(click, currency=currency, value_cents=value), token=acme_token).status_code == 201
    stored = ConversionEvent.objects.get()
    assert (stored.currency, stored.value_cents) == (currency, value)
    assert amount_text(stored.value_cents, stored.currency) == shown
    assert (MINOR_UNITS["JPY"], MINOR_UNITS["USD"], MINOR_UNITS["KWD"]) == (0, 2, 3)


def test_a_customers_revenue_is_per_currency_net_of_refunds(api, acme, acme_token):
    click = ClickFactory(link__post__workspace=acme)
    for currency, value in [("EUR", 1000), ("USD", 2000), ("EUR", 500)]:
        api.post(
            URL,
            sale(
                click, currency=currency, value_cents=value, customer={"email": "ada@example.com", "external_id": "u1"}
            ),
            token=acme_token,
        )
    eur = ConversionEvent.objects.filter(currency="EUR").first()
    assert api.post(f"{URL}/{eur.pk}/refunds", {"amount_cents": 300}, token=acme_token).status_code == 201
    totals = api.get("/api/v1/customers/ext_u1", token=acme_token).json()["totals"]
    assert totals == {
        "leads": 0,
        "sales": 3,
        "revenue": [
            {"currency": "EUR", "sales": 2, "gross_cents": 1500, "refunded_cents": 300, "net_cents": 1200},
            {"currency": "USD", "sales": 1, "gross_cents": 2000, "refunded_cents": 0, "net_cents": 2000},
        ],
    }
