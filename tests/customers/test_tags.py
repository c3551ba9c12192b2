"""Contact tags: the service's bounds and cleaning, and POST / DELETE /api/v1/customers/{id}/tags; never another
workspace's contact."""

import pytest

from customers.models import ContactTag
from customers.tags import MAX_TAGS, contact_tags, contact_tags_add, contact_tags_remove, contact_tags_set, tags_parse
from lftrack.errors import Unprocessable
from tests.conftest import assert_api_error, run_in_threads
from tests.factories import CustomerFactory
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(acme):
    return CustomerFactory(workspace=acme, email="ada@example.com", external_id="u.42")


def test_tags_are_stored_lower_cased_once_each_and_added_idempotently(ada):
    assert contact_tags_add(customer=ada, names=["VIP", " early   bird ", "vip"]) == ["early bird", "vip"]
    assert contact_tags_add(customer=ada, names=["vip", "beta"]) == ["beta", "early bird", "vip"]
    assert ContactTag.objects.filter(customer=ada).count() == 3
    assert contact_tags_remove(customer=ada, names=["Beta", "unknown"]) == ["early bird", "vip"]
    assert contact_tags_set(customer=ada, names=["vip", "paid"]) == ["paid", "vip"]
    assert tags_parse("a, B ,,c") == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["  "], "tag is empty"),
        (["x" * 51], "tag is too long"),
        (["<script>"], "tag has characters other than letters, digits, spaces and . : / + & -"),
        (["a,b"], "tag has characters other than letters, digits, spaces and . : / + & -"),
    ],
)
def test_ill_formed_tags_are_refused_and_change_nothing(ada, names, message):
    with pytest.raises(Unprocessable) as raised:
        contact_tags_add(customer=ada, names=["ok", *names])
    assert raised.value.message == message
    assert contact_tags(ada) == []


def test_a_contact_has_at_most_fifty_tags(ada):
    contact_tags_add(customer=ada, names=[f"t{n}" for n in range(MAX_TAGS)])
    with pytest.raises(Unprocessable, match="at most 50 tags"):
        contact_tags_add(customer=ada, names=["one more"])
    assert contact_tags_add(customer=ada, names=["t1"]) == sorted(f"t{n}" for n in range(MAX_TAGS))  # nothing new


@pytest.mark.django_db(transaction=True)
def test_two_additions_at_once_respect_the_bound_together(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    contact_tags_add(customer=ada, names=[f"t{n}" for n in range(MAX_TAGS - 1)])

    def add(i: int):
        try:
            return contact_tags_add(customer=ada, names=[f"new{i}"])
        except Unprocessable as exc:
            return exc.message

    outcomes = run_in_threads(2, add)
    assert ContactTag.objects.filter(customer=ada).count() == MAX_TAGS
    assert sorted(outcome for outcome in outcomes if isinstance(outcome, str)) == ["a contact has at most 50 tags"]


def test_the_api_adds_and_removes_tags(api, acme_token, ada):
    response = api.post(f"/api/v1/customers/{ada.pk}/tags", {"tags": ["VIP", "beta"]}, token=acme_token)
    assert response.status_code == 200, response.content
    assert response.json() == {"id": ada.pk, "tags": ["beta", "vip"]}
    by_external = api.post("/api/v1/customers/ext_u.42/tags", {"tags": ["paid"]}, token=acme_token)
    assert by_external.json() == {"id": ada.pk, "tags": ["beta", "paid", "vip"]}

    removed = api.delete(f"/api/v1/customers/{ada.pk}/tags/VIP", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert removed.status_code == 200
    assert removed.json() == {"id": ada.pk, "tags": ["beta", "paid"]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "tags is required"),
        ({"tags": "vip"}, "tags must be a list of strings"),
        ({"tags": [1]}, "tags must be a list of strings"),
        ({"tags": ["x" * 51]}, "tag is too long"),
        ({"tags": [f"t{n}" for n in range(51)]}, "tags is too long"),
    ],
)
def test_bad_tags_are_422(api, acme_token, ada, body, message):
    assert_api_error(api.post(f"/api/v1/customers/{ada.pk}/tags", body, token=acme_token), 422, message)
    assert contact_tags(ada) == []


def test_another_workspaces_contact_is_unknown_and_the_scope_is_needed(api, acme, globex_token, ada):
    assert_api_error(
        api.post(f"/api/v1/customers/{ada.pk}/tags", {"tags": ["x"]}, token=globex_token), 404, "unknown customer"
    )
    reader = api_token_create(workspace=acme, name="reader", scopes=["read"]).secret
    assert_api_error(api.post(f"/api/v1/customers/{ada.pk}/tags", {"tags": ["x"]}, token=reader), 403, "forbidden")
    assert contact_tags(ada) == []
