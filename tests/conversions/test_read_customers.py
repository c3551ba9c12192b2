"""GET /api/v1/customers and /customers/{id}: contacts read back with their totals and suppression, found
by email, by the integrator's own id (`ext_`), or by a part of them; never another workspace's."""

from datetime import timedelta

import pytest

from tests.conftest import assert_api_error
from tests.factories import ClickFactory, ConversionEventFactory, CustomerFactory, SuppressionFactory
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db
URL = "/api/v1/customers"


@pytest.fixture
def people(acme, globex):
    ada = CustomerFactory(
        workspace=acme,
        email="Ada@Example.com",
        name="Ada Lovelace",
        external_id="user.42",
        avatar_url="https://img.example/ada.png",
    )
    bob = CustomerFactory(workspace=acme, email="bob@example.com", name="Bob")
    click = ClickFactory(link__post__workspace=acme)
    ConversionEventFactory(click=click, customer=ada, event="lead")
    ConversionEventFactory(click=click, customer=ada, event="sale", value_cents=49000)
    ConversionEventFactory(click=click, customer=ada, event="sale", value_cents=None)
    SuppressionFactory(workspace=acme, email="bob@example.com", reason="bounced")
    stranger = CustomerFactory(workspace=globex, email="ada@example.com", external_id="user.42")
    return ada, bob, stranger


def test_a_customer_by_id_or_by_the_integrators_id(api, acme_token, people):
    ada, bob, _ = people
    by_id = api.get(f"{URL}/{ada.pk}", token=acme_token)
    assert by_id.status_code == 200
    assert by_id.json() == {
        "id": ada.pk,
        "email": "Ada@Example.com",
        "name": "Ada Lovelace",
        "avatar_url": "https://img.example/ada.png",
        "external_id": "user.42",
        "source": "api",
        "created_at": by_id.json()["created_at"],
        "totals": {
            "leads": 1,
            "sales": 2,
            "revenue": [{"currency": "USD", "sales": 2, "gross_cents": 49000, "refunded_cents": 0, "net_cents": 49000}],
        },
        "suppressed": None,
    }
    assert api.get(f"{URL}/ext_user.42", token=acme_token).json()["id"] == ada.pk
    bob_read = api.get(f"{URL}/{bob.pk}", token=acme_token).json()
    assert bob_read["totals"] == {"leads": 0, "sales": 0, "revenue": []}
    assert bob_read["suppressed"]["reason"] == "bounced" and bob_read["external_id"] is None


@pytest.mark.parametrize("reference", ["999999", "ext_nobody", "ext_", "x", "-1", "99999999999999999999"])
def test_unknown_references_are_404(api, acme_token, people, reference):
    assert_api_error(api.get(f"{URL}/{reference}", token=acme_token), 404, "unknown customer")


def test_another_workspaces_customer_is_404_and_never_listed(api, acme_token, globex_token, people):
    ada, _bob, stranger = people
    assert_api_error(api.get(f"{URL}/{stranger.pk}", token=acme_token), 404, "unknown customer")
    assert_api_error(api.get(f"{URL}/{ada.pk}", token=globex_token), 404, "unknown customer")
    assert api.get(f"{URL}/ext_user.42", token=globex_token).json()["id"] == stranger.pk
    assert [c["id"] for c in api.get(URL, token=globex_token).json()["data"]] == [stranger.pk]


def test_find_by_email_external_id_or_search(api, acme_token, people):
    ada, bob, _ = people

    def ids(**params):
        return [c["id"] for c in api.get(URL, params, token=acme_token).json()["data"]]

    assert ids() == [bob.pk, ada.pk]
    assert ids(email="ADA@example.COM") == [ada.pk]
    assert ids(external_id="user.42") == [ada.pk]
    assert ids(search="lovel") == [ada.pk]
    assert ids(search="example.com") == [bob.pk, ada.pk]
    assert ids(email="nobody@example.com") == []


def test_pages(api, acme_token, acme):
    made = [CustomerFactory(workspace=acme) for _ in range(5)]
    for i, customer in enumerate(made):  # distinct creation times, oldest first
        type(customer).objects.filter(pk=customer.pk).update(created_at=customer.created_at + timedelta(seconds=i))
    seen, cursor = [], None
    while True:
        page = api.get(URL, {"limit": 2, **({"cursor": cursor} if cursor else {})}, token=acme_token).json()
        seen += [c["id"] for c in page["data"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [c.pk for c in reversed(made)]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"search": "x" * 201}, "search is too long"),
        ({"limit": "1000"}, "limit must be 1 to 100"),
        ({"cursor": "AAAA"}, "invalid cursor"),
    ],
)
def test_bad_parameters_are_422(api, acme_token, params, message):
    assert_api_error(api.get(URL, params, token=acme_token), 422, message)


def test_reads_need_the_read_scope(api, acme, people):
    ada = people[0]
    writer = api_token_create(workspace=acme, name="writer", scopes=["leads:write"]).secret
    assert_api_error(api.get(f"{URL}/{ada.pk}", token=writer), 403, "forbidden")
    assert_api_error(api.get(URL, token=writer), 403, "forbidden")
    assert_api_error(api.get(URL), 401, "unauthorized")


def test_a_page_costs_the_same_queries_whatever_its_size(api, acme_token, acme, django_assert_max_num_queries):
    click = ClickFactory(link__post__workspace=acme)
    for _ in range(30):
        ConversionEventFactory(click=click, customer=CustomerFactory(workspace=acme), event="lead")
    with django_assert_max_num_queries(5):  # token, page, totals, suppressions, last-used
        assert len(api.get(URL, {"limit": 30}, token=acme_token).json()["data"]) == 30


def test_a_customers_timeline_newest_first_across_its_sources(api, acme_token, acme, people):
    from campaigns.services import campaign_lead_add, suppression_add
    from customers.services import customer_match
    from tests.factories import CampaignEmailFactory, CampaignFactory

    ada = people[0]
    spring = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=spring, position=1)
    campaign_lead_add(campaign=spring, email="ada@example.com")
    other = customer_match(workspace=acme, channel="api", email="new@example.com", external_id="user.42").customer
    suppression_add(workspace=acme, email="ada@example.com", reason="unsubscribed", channel="api")
    from conversions.models import ConversionEvent
    from conversions.refunds import refund_record

    sale = ConversionEvent.objects.filter(customer=ada, event="sale").order_by("pk").first()
    refund_record(workspace=acme, sale_id=sale.pk, amount_cents=100, reason="late", refund_id="re_7")

    timeline = api.get(f"{URL}/ext_user.42/activity", token=acme_token)  # user.42 is the new contact's now
    assert timeline.status_code == 200
    assert [item["type"] for item in timeline.json()["data"]][:2] == ["external_id_moved_in", "created"]

    items = api.get(f"{URL}/{ada.pk}/activity", token=acme_token).json()["data"]
    types = [item["type"] for item in items]
    assert types[:4] == ["refund", "suppressed", "external_id_moved_out", "enrolled"]
    assert types.count("sale") == 2 and types.count("lead") == 1
    assert all(item["detail"]["event_name"] is None for item in items if item["type"] == "lead")
    assert items[0]["detail"] == {
        "id": items[0]["detail"]["id"],
        "conversion_id": sale.pk,
        "amount_cents": 100,
        "currency": "USD",
        "reason": "late",
        "refund_id": "re_7",
    }
    moved = items[2]["detail"]
    assert moved["other_customer_id"] == other.pk and moved["external_id"] == "user.42"
    assert items[3]["detail"]["campaign"] == "spring" and items[1]["detail"]["reason"] == "unsubscribed"
    times = [item["at"] for item in items]
    assert times == sorted(times, reverse=True)

    paged, cursor = [], None
    while True:
        page = api.get(
            f"{URL}/{ada.pk}/activity", {"limit": 2, **({"cursor": cursor} if cursor else {})}, token=acme_token
        ).json()
        paged += page["data"]
        cursor = page["next"]
        if cursor is None:
            break
    assert paged == items


def test_the_timeline_of_another_workspaces_customer_is_404(api, globex_token, people):
    assert_api_error(api.get(f"{URL}/{people[0].pk}/activity", token=globex_token), 404, "unknown customer")
