"""POST /api/v1/conversions/{id}/refunds: what is left of a sale by default, never more than the sale (also
under 16 concurrent refunds), a provider's refund_id once, Idempotency-Key, and the numbers net of refunds."""

import pytest
from django.test import Client

from conversions.models import Refund
from rollups.selectors import money_of
from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error, run_in_threads
from tests.factories import ConversionEventFactory
from workspaces.tokens import api_token_create

URL = "/api/v1/conversions/{}/refunds"


@pytest.fixture
def eur_sale(acme):
    return ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=10000, currency="EUR")


@pytest.mark.django_db
def test_a_partial_refund_then_the_rest(api, acme_token, eur_sale):
    first = api.post(
        URL.format(eur_sale.pk), {"amount_cents": 2500, "reason": "damaged", "refund_id": "re_1"}, token=acme_token
    )
    assert first.status_code == 201
    body = first.json()
    assert body["conversion_id"] == eur_sale.pk and body["created_at"].endswith("Z")
    assert {k: body[k] for k in ("amount_cents", "currency", "reason", "refund_id")} == {
        "amount_cents": 2500,
        "currency": "EUR",
        "reason": "damaged",
        "refund_id": "re_1",
    }
    assert body["sale"] == {
        "id": eur_sale.pk,
        "currency": "EUR",
        "value_cents": 10000,
        "refunded_cents": 2500,
        "net_cents": 7500,
    }
    rest = api.post(URL.format(eur_sale.pk), {}, token=acme_token).json()  # the default: what is left
    assert (rest["amount_cents"], rest["reason"], rest["refund_id"]) == (7500, None, None)
    assert rest["sale"]["net_cents"] == 0
    assert_api_error(
        api.post(URL.format(eur_sale.pk), {"amount_cents": 1}, token=acme_token), 422, "refund exceeds the sale"
    )
    assert_api_error(api.post(URL.format(eur_sale.pk), {}, token=acme_token), 422, "refund exceeds the sale")
    assert Refund.objects.count() == 2
    (listed,) = api.get("/api/v1/conversions", token=acme_token).json()["data"]
    assert (listed["refunded_cents"], listed["net_cents"]) == (10000, 0)


@pytest.mark.django_db
def test_the_numbers_follow_net_of_refunds(api, acme, acme_token, eur_sale):
    numbers_roll_up()
    api.post(URL.format(eur_sale.pk), {"amount_cents": 1000}, token=acme_token)
    for _ in range(2):  # in the tail, then rolled up
        (eur,) = money_of(group="link", link_ids=[eur_sale.link_id])[eur_sale.link_id]
        assert (eur["gross_cents"], eur["refunded_cents"], eur["net_cents"]) == (10000, 1000, 9000)
        total = api.get("/api/v1/analytics", token=acme_token).json()["total"]
        assert total["revenue"] == [
            {"currency": "EUR", "sales": 1, "gross_cents": 10000, "refunded_cents": 1000, "net_cents": 9000}
        ]
        numbers_roll_up()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"amount_cents": 0}, "amount_cents must be a positive integer"),
        ({"amount_cents": -5}, "amount_cents must be a positive integer"),
        ({"amount_cents": 1.5}, "amount_cents must be a positive integer"),
        ({"amount_cents": "100"}, "amount_cents must be a positive integer"),
        ({"amount_cents": 10001}, "refund exceeds the sale"),
        ({"reason": "x" * 501}, "reason is too long"),
        ({"refund_id": 7}, "refund_id must be a string"),
    ],
)
def test_bad_refunds_are_422_and_store_nothing(api, acme_token, eur_sale, body, message):
    assert_api_error(api.post(URL.format(eur_sale.pk), body, token=acme_token), 422, message)
    assert not Refund.objects.exists()


@pytest.mark.django_db
def test_a_lead_cannot_be_refunded(api, acme, acme_token):
    lead = ConversionEventFactory(click__link__post__workspace=acme, event="lead")
    assert_api_error(api.post(URL.format(lead.pk), {}, token=acme_token), 422, "only a sale can be refunded")


@pytest.mark.django_db
def test_another_workspaces_sale_and_unknown_ids_are_404(api, acme_token, globex_token, eur_sale):
    assert_api_error(api.post(URL.format(eur_sale.pk), {}, token=globex_token), 404, "unknown conversion")
    for pk in ("999999", "abc", "1" * 30):
        assert_api_error(api.post(URL.format(pk), {}, token=acme_token), 404, "unknown conversion")
    assert not Refund.objects.exists()


@pytest.mark.django_db
def test_a_token_without_conversions_write_is_403(api, acme, eur_sale):
    reader = api_token_create(workspace=acme, name="r", scopes=["read"]).secret
    assert_api_error(api.post(URL.format(eur_sale.pk), {}, token=reader), 403, "forbidden")


@pytest.mark.django_db
def test_a_repeated_refund_id_answers_the_first_refund_and_stores_nothing(api, acme_token, eur_sale):
    first = api.post(URL.format(eur_sale.pk), {"amount_cents": 100, "refund_id": "re_9"}, token=acme_token)
    for repeat_body in ({"amount_cents": 100, "refund_id": "re_9", "reason": "again"}, {"refund_id": "re_9"}):
        repeat = api.post(URL.format(eur_sale.pk), repeat_body, token=acme_token)
        assert (first.status_code, repeat.status_code, repeat["Idempotent-Replayed"]) == (201, 200, "true")
        assert repeat.json() == first.json()
    assert Refund.objects.count() == 1


@pytest.mark.django_db
def test_a_refund_id_reused_for_another_sale_or_amount_is_422_and_stores_nothing(api, acme, acme_token, eur_sale):
    other = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=5000, currency="EUR")
    api.post(URL.format(eur_sale.pk), {"amount_cents": 100, "refund_id": "re_9"}, token=acme_token)
    for pk, body in [
        (eur_sale.pk, {"amount_cents": 999, "refund_id": "re_9"}),
        (other.pk, {"amount_cents": 100, "refund_id": "re_9"}),
        (other.pk, {"refund_id": "re_9"}),
    ]:
        assert_api_error(
            api.post(URL.format(pk), body, token=acme_token), 422, "refund_id reused for a different sale or amount"
        )
    assert list(Refund.objects.values_list("conversion_id", "amount_cents")) == [(eur_sale.pk, 100)]


@pytest.mark.django_db
def test_idempotency_key_replays_and_refuses_another_body(api, acme_token, eur_sale):
    headers = {"HTTP_IDEMPOTENCY_KEY": "evt_refund_1"}
    first = api.post(URL.format(eur_sale.pk), {"amount_cents": 100}, token=acme_token, **headers)
    again = api.post(URL.format(eur_sale.pk), {"amount_cents": 100}, token=acme_token, **headers)
    assert (first.status_code, again.status_code, again["Idempotent-Replayed"]) == (201, 201, "true")
    assert again.json() == first.json() and Refund.objects.count() == 1
    assert_api_error(
        api.post(URL.format(eur_sale.pk), {"amount_cents": 200}, token=acme_token, **headers),
        422,
        "idempotency key reused with a different body",
    )


def refund_threads(sale, token, body_of) -> list:
    def post(i):
        response = Client().post(
            URL.format(sale.pk),
            body_of(i),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token.secret}",
        )
        return response.status_code, response.json()

    return run_in_threads(16, post)


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_partial_refunds_never_exceed_the_sale(acme, acme_token):
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=10000, currency="EUR")
    results = refund_threads(sale, acme_token, lambda i: {"amount_cents": 1500})
    assert sorted(status for status, _ in results) == [201] * 6 + [422] * 10
    assert {body["error"] for status, body in results if status == 422} == {"refund exceeds the sale"}
    assert sum(Refund.objects.filter(conversion=sale).values_list("amount_cents", flat=True)) == 9000


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_repeats_of_a_refund_id_store_one(acme, acme_token):
    """Half of them with another amount: whichever amount commits first, the repeats of it answer that refund and
    the others are 422."""
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=10000)
    results = refund_threads(sale, acme_token, lambda i: {"amount_cents": 100 + i % 2, "refund_id": "re_same"})
    stored = Refund.objects.get()
    assert sorted(status for status, _ in results) == [200] * 7 + [201] + [422] * 8
    assert {body["id"] for status, body in results if status < 300} == {stored.pk}
    assert {body["error"] for status, body in results if status == 422} == {
        "refund_id reused for a different sale or amount"
    }


@pytest.mark.django_db
def test_a_refund_emits_sale_refunded_with_the_sale_net_of_it(acme):
    from conversions.refunds import refund_record
    from tests.factories import EndpointFactory
    from webhooks.models import Event
    from webhooks.outbox import events_dispatch
    from webhooks.payloads import payload_build

    live = EndpointFactory(workspace=acme, event_types=["sale.refunded"])
    sandbox = EndpointFactory(workspace=acme, event_types=["sale.refunded"], test=True)
    sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=10000, currency="EUR")
    test_sale = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=500, is_test=True)
    refund_record(workspace=acme, sale_id=sale.pk, amount_cents=2500)
    refund_record(workspace=acme, sale_id=test_sale.pk, test=True)
    refunded, tested = Event.objects.order_by("pk")
    events_dispatch(event_ids=[refunded.pk, tested.pk])  # what the worker's dispatch job does
    assert (refunded.type, refunded.subject_id, refunded.test) == ("sale.refunded", sale.pk, False)
    assert (tested.subject_id, tested.test) == (test_sale.pk, True)
    assert [d.endpoint_id for d in refunded.deliveries.all()] == [live.pk]
    assert [d.endpoint_id for d in tested.deliveries.all()] == [sandbox.pk]
    data = payload_build(refunded)
    assert (data["id"], data["currency"], data["refunded_cents"], data["net_cents"]) == (sale.pk, "EUR", 2500, 7500)
