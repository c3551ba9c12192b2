"""A sale's invoice_id: one sale per workspace and invoice, forever; a repeat answers with the first sale
(200, Idempotent-Replayed) whatever its body, and stores nothing, also under concurrent repeats."""

import pytest

from conversions.models import ConversionEvent
from customers.models import Customer
from tests.conftest import assert_api_error, run_in_threads
from tests.factories import ClickFactory

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/v1/conversions"


def sale(click, invoice_id="in_1PQx9z", email="ada@example.com", value=49000):
    return {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": value,
        "invoice_id": invoice_id,
        "customer": {"email": email},
    }


def test_a_repeated_invoice_answers_the_first_sale_and_stores_nothing(api, acme, acme_token):
    click, other_click = ClickFactory(link__post__workspace=acme), ClickFactory(link__post__workspace=acme)
    first = api.post(URL, sale(click), token=acme_token)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    repeat = api.post(URL, sale(other_click, email="someone.else@example.com", value=1), token=acme_token)
    assert repeat.status_code == 200 and repeat["Idempotent-Replayed"] == "true"
    assert repeat.json() == first.json()
    assert ConversionEvent.objects.count() == 1
    assert not Customer.objects.filter(email="someone.else@example.com").exists()  # the match rolled back
    unknown_click = api.post(URL, {**sale(click), "click_id": "no-such-click"}, token=acme_token)
    assert unknown_click.status_code == 200 and unknown_click.json() == first.json()


def test_sixteen_concurrent_repeats_store_one_sale(acme, acme_token):
    from django.test import Client

    click = ClickFactory(link__post__workspace=acme)

    def post(i):
        client = Client()
        response = client.post(
            URL,
            sale(click, email=f"buyer{i}@example.com"),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}",
        )
        return response.status_code, response.json()["id"]

    results = run_in_threads(16, post)
    assert sorted(status for status, _ in results) == [200] * 15 + [201]
    assert len({pk for _, pk in results}) == 1
    assert ConversionEvent.objects.count() == 1
    assert Customer.objects.filter(workspace=acme).count() == 1  # the 15 repeats' customers rolled back


def test_invoices_are_per_workspace_ignored_on_leads_and_bounded(api, acme, globex, acme_token, globex_token):
    click, globex_click = ClickFactory(link__post__workspace=acme), ClickFactory(link__post__workspace=globex)
    assert api.post(URL, sale(click), token=acme_token).status_code == 201
    assert api.post(URL, sale(globex_click), token=globex_token).status_code == 201
    lead = {"event": "lead", "click_id": click.click_id, "invoice_id": "in_1PQx9z"}
    assert api.post(URL, lead, token=acme_token).status_code == 201
    assert ConversionEvent.objects.filter(event="lead").get().invoice_id == ""
    assert_api_error(api.post(URL, sale(click, invoice_id="x" * 256), token=acme_token), 422, "invoice_id is too long")
    listed = api.get(URL, {"event": "sale"}, token=acme_token).json()["data"]
    assert [item["invoice_id"] for item in listed] == ["in_1PQx9z"]


def test_with_an_idempotency_key_too(api, acme, acme_token):
    click = ClickFactory(link__post__workspace=acme)
    first = api.post(URL, sale(click), token=acme_token, HTTP_IDEMPOTENCY_KEY="k1")
    again = api.post(URL, sale(click), token=acme_token, HTTP_IDEMPOTENCY_KEY="k1")
    other_key = api.post(URL, sale(click), token=acme_token, HTTP_IDEMPOTENCY_KEY="k2")
    assert first.status_code == 201 and again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert other_key.status_code == 200 and other_key.json() == first.json()
    assert ConversionEvent.objects.count() == 1
