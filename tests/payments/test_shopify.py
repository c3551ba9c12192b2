"""Shopify's orders/paid and refunds/create posted to a real server, signed with the shop's secret."""

import pytest

from conversions.models import ConversionEvent, Refund
from payments.models import Delivery
from tests.payments.providers import post, shopify_order, shopify_refund, shopify_signed

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_order_from_a_tracked_landing_page_is_one_sale_with_exact_amounts(shopify_url, click):
    order = shopify_order(
        order_id=820982911946154508,
        total="199.99",
        landing_site=f"/products/notebook?utm_source=x&lf_cid={click.click_id}",
    )
    answer = post(shopify_url, *shopify_signed(order, "orders/paid"))
    assert answer.status_code == 200 and answer.json()["outcome"] == "sale", answer.content
    sale = ConversionEvent.objects.get()
    assert (sale.value_cents, sale.currency, sale.invoice_id, sale.click_id) == (
        19999,
        "USD",
        "820982911946154508",
        click.pk,
    )
    assert sale.customer.email == "grace@example.com" and sale.customer.name == "Grace Hopper"


def test_a_note_attribute_names_the_click_and_decimals_convert_exactly(shopify_url, click):
    for order_id, total, currency, stored in [
        (1, "1500", "JPY", 1500),
        (2, "12.345", "KWD", 12345),
        (3, "0.10", "EUR", 10),
        (4, "1.005", "USD", None),
    ]:
        order = shopify_order(
            order_id=order_id,
            total=total,
            currency=currency,
            note_attributes=[{"name": "lf_cid", "value": click.click_id}],
        )
        answer = post(shopify_url, *shopify_signed(order, "orders/paid")).json()
        if stored is None:  # a tenth of a cent is no amount in USD: refused, never rounded
            assert answer["outcome"] == "ignored" and "more decimals than USD" in answer["reason"]
        else:
            assert answer["outcome"] == "sale"
            assert ConversionEvent.objects.get(invoice_id=str(order_id)).value_cents == stored


def test_refunds_partial_then_full_and_one_before_its_order(shopify_url, click):
    order = shopify_order(order_id=5001, total="50.00", landing_site=f"/?lf_cid={click.click_id}")
    early = post(
        shopify_url, *shopify_signed(shopify_refund(refund_id=9001, order_id=5001, amounts=["5.00"]), "refunds/create")
    )
    assert early.json()["outcome"] == "waiting"
    assert post(shopify_url, *shopify_signed(order, "orders/paid")).json()["outcome"] == "sale"
    assert Refund.objects.get().amount_cents == 500  # applied when the order arrived
    rest = shopify_refund(refund_id=9002, order_id=5001, amounts=["20.00", "25.00"])
    assert post(shopify_url, *shopify_signed(rest, "refunds/create")).json()["outcome"] == "refund"
    assert sorted(Refund.objects.values_list("amount_cents", flat=True)) == [500, 4500]
    restock_only = shopify_refund(refund_id=9003, order_id=5001, amounts=[])
    assert post(shopify_url, *shopify_signed(restock_only, "refunds/create")).json()["outcome"] == "ignored"


def test_duplicates_by_webhook_id_and_by_order_id_count_once(shopify_url, click):
    order = shopify_order(order_id=6001, total="10.00", landing_site=f"/?lf_cid={click.click_id}")
    body, headers = shopify_signed(order, "orders/paid", webhook_id="dup-webhook-1")
    assert post(shopify_url, body, headers).json()["outcome"] == "sale"
    assert post(shopify_url, body, headers).json()["outcome"] == "duplicate"  # the same delivery again
    other_delivery = post(shopify_url, *shopify_signed(order, "orders/paid", webhook_id="dup-webhook-2")).json()
    assert other_delivery["outcome"] == "duplicate" and "6001" in other_delivery["reason"]
    assert ConversionEvent.objects.count() == 1


def test_a_test_order_lands_in_test_mode_and_its_refund_follows(shopify_url, click):
    order = shopify_order(order_id=7001, total="8.00", test=True, landing_site=f"/?lf_cid={click.click_id}")
    assert post(shopify_url, *shopify_signed(order, "orders/paid")).json()["outcome"] == "sale"
    refund = shopify_refund(refund_id=9101, order_id=7001, amounts=["8.00"])
    assert post(shopify_url, *shopify_signed(refund, "refunds/create")).json()["outcome"] == "refund"
    assert ConversionEvent.objects.get().is_test and Refund.objects.get().is_test
    assert Delivery.objects.filter(is_test=True).count() == 2


def test_a_bad_hmac_is_refused_and_an_order_without_a_click_is_not_attributed(shopify_url, click):
    order = shopify_order(order_id=8001, total="10.00", landing_site="/collections/all")
    body, headers = shopify_signed(order, "orders/paid", secret="not-the-shops-secret")
    refused = post(shopify_url, body, headers)
    assert (refused.status_code, refused.json()) == (400, {"error": "invalid signature"})
    answer = post(shopify_url, *shopify_signed(order, "orders/paid"))
    assert answer.status_code == 200 and answer.json()["outcome"] == "not_attributed"
    assert ConversionEvent.objects.count() == 0
