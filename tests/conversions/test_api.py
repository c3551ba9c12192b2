"""POST /api/v1/conversions: the fields, statuses and error messages of docs/api.md, exact bodies, nothing stored on errors."""

from datetime import UTC, datetime

import pytest
import time_machine

from conversions.models import ConversionEvent, IdempotencyKey
from customers.models import Customer, CustomerActivity
from lftrack.currencies import MONEY_MAX
from tests.conftest import ApiClient, assert_api_error, run_in_threads
from tests.factories import ApiTokenFactory, ClickFactory, CustomerFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/conversions"


@pytest.fixture
def click(acme):
    return ClickFactory(link__post__workspace=acme, workspace=acme)


@pytest.fixture
def globex_click(globex):
    return ClickFactory(link__post__workspace=globex, workspace=globex)


def stored() -> dict[str, int]:
    return {
        "events": ConversionEvent.objects.count(),
        "customers": Customer.objects.count(),
        "activities": CustomerActivity.objects.count(),
        "idempotency_keys": IdempotencyKey.objects.count(),
    }


NOTHING = {"events": 0, "customers": 0, "activities": 0, "idempotency_keys": 0}


# The 201 answer.


def test_sale_answers_exactly_the_stored_event(api, acme_token, click):
    moment = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    with time_machine.travel(moment, tick=False):
        resp = api.post(
            URL,
            {
                "event": "sale",
                "click_id": click.click_id,
                "value_cents": 49000,
                "event_name": "Annual plan",
                "customer": {"email": "Ada@Example.com", "external_id": "user_42", "name": "Ada"},
                "meta": {"order": {"id": "ord_1", "items": [1, 2.5, None, True]}, "note": "crème brûlée"},
            },
            token=acme_token,
        )
    assert resp.status_code == 201, resp.content
    assert resp["Content-Type"] == "application/json"
    event = ConversionEvent.objects.get()
    customer = Customer.objects.get()
    assert resp.json() == {
        "id": event.pk,
        "event": "sale",
        "click_id": click.click_id,
        "link_id": click.link_id,
        "customer": {"id": customer.pk, "external_id": "user_42"},
        "occurred_at": "2026-03-01T12:00:00.123456Z",
    }
    assert (event.click, event.link, event.workspace, event.customer) == (click, click.link, click.workspace, customer)
    assert (event.value_cents, event.event_name, event.channel, event.occurred_at) == (
        49000,
        "Annual plan",
        "api",
        moment,
    )
    assert event.meta == {"order": {"id": "ord_1", "items": [1, 2.5, None, True]}, "note": "crème brûlée"}
    assert (customer.email, customer.name, customer.source) == ("Ada@Example.com", "Ada", "api")


def test_customer_is_null_when_none_is_sent(api, acme_token, click):
    resp = api.post(URL, {"event": "lead", "click_id": click.click_id}, token=acme_token)
    assert resp.status_code == 201
    assert resp.json()["customer"] is None
    event = ConversionEvent.objects.get()
    assert (event.customer, event.value_cents, event.event_name, event.meta) == (None, None, "", {})
    assert not Customer.objects.exists()


def test_explicit_nulls_count_as_absent(api, acme_token, click):
    body = {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": None,
        "event_name": None,
        "customer": None,
        "meta": None,
    }
    resp = api.post(URL, body, token=acme_token)
    assert resp.status_code == 201
    assert resp.json()["customer"] is None
    event = ConversionEvent.objects.get()
    assert (event.value_cents, event.event_name, event.meta) == (None, "", {})


def test_external_id_is_null_when_the_customer_has_none(api, acme_token, click):
    resp = api.post(
        URL, {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}}, token=acme_token
    )
    assert resp.status_code == 201
    assert resp.json()["customer"] == {"id": Customer.objects.get().pk, "external_id": None}


def test_customer_with_only_an_external_id_is_accepted(api, acme_token, click):
    resp = api.post(
        URL, {"event": "lead", "click_id": click.click_id, "customer": {"external_id": "user_42"}}, token=acme_token
    )
    assert resp.status_code == 201
    customer = Customer.objects.get()
    assert resp.json()["customer"] == {"id": customer.pk, "external_id": "user_42"}
    assert customer.email == ""


def test_known_email_reuses_the_customer_and_keeps_its_name(api, acme_token, click):
    ada = CustomerFactory(workspace=acme_token.workspace, email="ada@example.com", name="Ada", external_id="")
    body = {
        "event": "sale",
        "click_id": click.click_id,
        "customer": {"email": "ADA@example.com", "name": "Other", "external_id": "u1"},
    }
    resp = api.post(URL, body, token=acme_token)
    assert resp.json()["customer"] == {"id": ada.pk, "external_id": "u1"}
    ada.refresh_from_db()
    assert (ada.name, ada.email, ada.external_id) == ("Ada", "ada@example.com", "u1")


def test_second_lead_on_the_same_click_is_a_second_event(api, acme_token, click):
    body = {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}}
    first = api.post(URL, body, token=acme_token).json()
    second = api.post(URL, body, token=acme_token).json()
    assert first["id"] != second["id"]
    assert ConversionEvent.objects.filter(click=click, event="lead").count() == 2
    assert first["customer"] == second["customer"]
    assert Customer.objects.count() == 1


def test_sale_without_a_value_is_stored_without_revenue(api, acme_token, click):
    assert api.post(URL, {"event": "sale", "click_id": click.click_id}, token=acme_token).status_code == 201
    assert ConversionEvent.objects.get().value_cents is None


@pytest.mark.parametrize("value", [0, 1, MONEY_MAX])
def test_sale_values_are_stored_as_sent(api, acme_token, click, value):
    assert (
        api.post(URL, {"event": "sale", "click_id": click.click_id, "value_cents": value}, token=acme_token).status_code
        == 201
    )
    assert ConversionEvent.objects.get().value_cents == value


@pytest.mark.parametrize("value", [-1, 1.5, "100", True, None, [], {"a": 1}, 100.0])
def test_value_cents_on_a_lead_is_ignored_whatever_it_holds(api, acme_token, click, value):
    resp = api.post(URL, {"event": "lead", "click_id": click.click_id, "value_cents": value}, token=acme_token)
    assert resp.status_code == 201
    assert ConversionEvent.objects.get().value_cents is None


def test_meta_of_exactly_16_kib_is_accepted(api, acme_token, click):
    meta = {"blob": "x" * (16 * 1024 - len('{"blob": ""}'))}
    assert (
        api.post(URL, {"event": "lead", "click_id": click.click_id, "meta": meta}, token=acme_token).status_code == 201
    )
    assert ConversionEvent.objects.get().meta == meta


@pytest.mark.parametrize(
    ("field", "limit"),
    [("email", 254), ("name", 200), ("external_id", 255), ("avatar_url", 2048)],
)
def test_customer_strings_at_their_length_limit_are_accepted(api, acme_token, click, field, limit):
    values = {
        "email": "a" * (limit - len("@example.com")) + "@example.com",
        "name": "n" * limit,
        "external_id": "e" * limit,
        "avatar_url": "https://cdn.example.com/" + "a" * (limit - len("https://cdn.example.com/")),
    }
    customer = {"external_id": "user_42", field: values[field]}
    resp = api.post(URL, {"event": "lead", "click_id": click.click_id, "customer": customer}, token=acme_token)
    assert resp.status_code == 201, resp.content
    assert getattr(Customer.objects.get(), field) == values[field]


# Errors: the exact message, and nothing stored.


def conversion(click_id, **fields):
    return {"event": "sale", "click_id": click_id, **fields}


REJECTED = [
    # event
    ({"click_id": "{click}"}, "invalid event"),
    ({"event": "purchase", "click_id": "{click}"}, "invalid event"),
    ({"event": "Lead", "click_id": "{click}"}, "invalid event"),
    ({"event": 1, "click_id": "{click}"}, "invalid event"),
    ({"event": None, "click_id": "{click}"}, "invalid event"),
    ({"event": ["lead"], "click_id": "{click}"}, "invalid event"),
    # click_id
    ({"event": "lead"}, "click_id is required"),
    ({"event": "lead", "click_id": None}, "click_id is required"),
    ({"event": "lead", "click_id": ""}, "click_id is required"),
    ({"event": "lead", "click_id": 12345}, "click_id must be a string"),
    ({"event": "lead", "click_id": "c" * 65}, "click_id is too long"),
    ({"event": "lead", "click_id": "no-such-click"}, "unknown click_id"),
    # value_cents on a sale
    (conversion("{click}", value_cents=-1), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents=1.5), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents=100.0), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents="100"), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents=True), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents=False), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents=[100]), "value_cents must be a non-negative integer"),
    (conversion("{click}", value_cents=MONEY_MAX + 1), f"value_cents must be at most {MONEY_MAX}"),
    (conversion("{click}", value_cents=2**63), "value_cents must be at most 9007199254740991"),
    # event_name
    (conversion("{click}", event_name=5), "event_name must be a string"),
    (conversion("{click}", event_name="e" * 256), "event_name is too long"),
    # meta
    (conversion("{click}", meta=[1, 2]), "meta must be an object"),
    (conversion("{click}", meta="{}"), "meta must be an object"),
    (conversion("{click}", meta=5), "meta must be an object"),
    (conversion("{click}", meta={"blob": "x" * (16 * 1024)}), "meta is too long"),
    # customer
    (conversion("{click}", customer={}), "customer needs email or external_id"),
    (conversion("{click}", customer={"name": "Ada"}), "customer needs email or external_id"),
    (conversion("{click}", customer={"email": "", "external_id": ""}), "customer needs email or external_id"),
    (conversion("{click}", customer={"email": None, "external_id": None}), "customer needs email or external_id"),
    (conversion("{click}", customer="ada@example.com"), "customer must be an object"),
    (conversion("{click}", customer={"email": "not-an-email"}), "invalid email"),
    (conversion("{click}", customer={"email": "ada@"}), "invalid email"),
    (conversion("{click}", customer={"email": "a" * 243 + "@example.com"}), "email is too long"),
    (conversion("{click}", customer={"email": 42}), "email must be a string"),
    (conversion("{click}", customer={"external_id": 42}), "external_id must be a string"),
    (conversion("{click}", customer={"external_id": "e" * 256}), "external_id is too long"),
    (conversion("{click}", customer={"external_id": "u", "name": ["Ada"]}), "name must be a string"),
    (conversion("{click}", customer={"external_id": "u", "name": "n" * 201}), "name is too long"),
    (conversion("{click}", customer={"external_id": "u", "avatar_url": 5}), "avatar_url must be a string"),
    (
        conversion("{click}", customer={"external_id": "u", "avatar_url": "not a url"}),
        "avatar_url must be an http or https URL",
    ),
    (
        conversion("{click}", customer={"external_id": "u", "avatar_url": "ftp://x.example/a.png"}),
        "avatar_url must be an http or https URL",
    ),
    (
        conversion("{click}", customer={"external_id": "u", "avatar_url": "https://x.example/" + "a" * 2040}),
        "avatar_url is too long",
    ),
    # a valid customer on an unknown click is rolled back with the rest
    (conversion("no-such-click", customer={"email": "ada@example.com", "external_id": "u"}), "unknown click_id"),
]


@pytest.mark.parametrize(("body", "message"), REJECTED)
def test_rejected_conversion_gets_its_message_and_stores_nothing(api, acme_token, click, body, message):
    body = {k: (click.click_id if v == "{click}" else v) for k, v in body.items()}
    assert_api_error(api.post(URL, body, token=acme_token), 422, message)
    assert stored() == NOTHING


def test_another_workspaces_click_is_unknown(api, acme_token, globex_click):
    body = {
        "event": "sale",
        "click_id": globex_click.click_id,
        "value_cents": 100,
        "customer": {"email": "a@example.com"},
    }
    assert_api_error(api.post(URL, body, token=acme_token), 422, "unknown click_id")
    assert stored() == NOTHING


def test_a_rejected_request_leaves_existing_customers_untouched(api, acme_token):
    holder = CustomerFactory(workspace=acme_token.workspace, email="old@example.com", external_id="user_42", name="")
    body = {
        "event": "lead",
        "click_id": "no-such-click",
        "customer": {"email": "new@example.com", "external_id": "user_42", "name": "N"},
    }
    assert_api_error(api.post(URL, body, token=acme_token), 422, "unknown click_id")
    holder.refresh_from_db()
    assert (holder.external_id, holder.name) == ("user_42", "")
    assert Customer.objects.count() == 1 and not CustomerActivity.objects.exists()


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer lf_not-a-real-token", "Basic dXNlcjpwYXNz", "Token abc"],
)
def test_missing_or_bad_token_is_401_and_stores_nothing(api, click, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    assert_api_error(api.post(URL, {"event": "lead", "click_id": click.click_id}, **extra), 401, "unauthorized")
    assert stored() == NOTHING


def test_revoked_token_is_401(api, acme_token, click):
    from workspaces.tokens import api_token_revoke

    api_token_revoke(workspace=acme_token.workspace, token_id=acme_token.pk)
    assert_api_error(
        api.post(URL, {"event": "lead", "click_id": click.click_id}, token=acme_token), 401, "unauthorized"
    )
    assert stored() == NOTHING


def test_globex_token_cannot_record_on_acme_clicks_nor_see_acme_customers(api, click, globex_token, globex_click):
    acme_customer = CustomerFactory(workspace=click.workspace, email="ada@example.com", external_id="user_42")
    assert_api_error(
        api.post(URL, {"event": "lead", "click_id": click.click_id}, token=globex_token), 422, "unknown click_id"
    )
    resp = api.post(
        URL,
        {
            "event": "lead",
            "click_id": globex_click.click_id,
            "customer": {"email": "ada@example.com", "external_id": "user_42"},
        },
        token=globex_token,
    )
    assert resp.status_code == 201
    assert resp.json()["customer"]["id"] != acme_customer.pk
    assert Customer.objects.get(pk=resp.json()["customer"]["id"]).workspace == globex_click.workspace
    acme_customer.refresh_from_db()
    assert acme_customer.external_id == "user_42"


# Concurrency: 16 simultaneous conversions for one new person, on PostgreSQL.


@pytest.mark.django_db(transaction=True)
def test_sixteen_simultaneous_conversions_for_one_new_email_make_one_customer(acme):
    token = ApiTokenFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme, workspace=acme)

    def convert(i):
        body = {
            "event": "sale",
            "click_id": click.click_id,
            "value_cents": 100 + i,
            "customer": {"email": "ada@example.com" if i % 2 else "ADA@example.com", "external_id": "user_42"},
        }
        return ApiClient().post(URL, body, token=token)

    answers = run_in_threads(16, convert)
    assert [a.status_code for a in answers] == [201] * 16, [a.content for a in answers if a.status_code != 201]
    customer = Customer.objects.get()
    assert {a.json()["customer"]["id"] for a in answers} == {customer.pk}
    assert ConversionEvent.objects.filter(customer=customer).count() == 16
    assert CustomerActivity.objects.filter(kind=CustomerActivity.Kind.CREATED).count() == 1
