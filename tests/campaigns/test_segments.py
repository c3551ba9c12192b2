"""Segments: each filter selects the contacts it says, all filters together, never another workspace's, a test or an
erased contact; the whole filter is one query."""

from datetime import UTC, datetime

import pytest
from django.db import connection

from campaigns.segments import segment_contacts, segment_count, segment_save
from customers.tags import contact_tags_add
from lftrack.errors import Unprocessable
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    CustomerFactory,
    EnrollmentFactory,
    LinkFactory,
)

pytestmark = pytest.mark.django_db


def emails(acme, **filters) -> list[str]:
    return sorted(segment_contacts(workspace_id=acme.pk, filters=filters).values_list("email", flat=True))


@pytest.fixture
def people(acme, globex):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", source="api")
    bo = CustomerFactory(workspace=acme, email="bo@example.com", source="pixel")
    cy = CustomerFactory(workspace=acme, email="cy@example.com", source="manual")
    CustomerFactory(workspace=acme, email="", external_id="no-address")  # nobody to mail
    CustomerFactory(workspace=acme, email="test@example.com", is_test=True)
    CustomerFactory(workspace=acme, email="gone@example.com", erased_at=datetime(2026, 1, 1, tzinfo=UTC))
    CustomerFactory(workspace=globex, email="ada@globex.example")
    return ada, bo, cy


def test_an_empty_filter_is_every_live_contact_with_an_address(acme, people):
    assert emails(acme) == ["ada@example.com", "bo@example.com", "cy@example.com"]
    assert segment_count(workspace_id=acme.pk, filters={}) == 3


def test_tags_source_campaign_state_conversion_first_touch_and_creation_each_filter(acme, people):
    ada, bo, cy = people
    contact_tags_add(customer=ada, names=["vip"])
    contact_tags_add(customer=bo, names=["beta", "vip"])
    spring = CampaignFactory(workspace=acme, slug="spring")
    EnrollmentFactory(campaign=spring, customer=ada, state="active")
    EnrollmentFactory(campaign=spring, customer=bo, state="completed")
    newsletter, shop = LinkFactory(post__workspace=acme), LinkFactory(post__workspace=acme)
    first = ClickFactory(link=newsletter)
    ConversionEventFactory(click=first, customer=cy)
    ConversionEventFactory(click=ClickFactory(link=shop), customer=cy, event="sale", value_cents=100)
    ConversionEventFactory(click=ClickFactory(link=shop), customer=bo)
    type(ada).objects.filter(pk=ada.pk).update(created_at=datetime(2026, 1, 5, 12, tzinfo=UTC))

    assert emails(acme, tags=["vip"]) == ["ada@example.com", "bo@example.com"]
    assert emails(acme, tags=["beta", "nope"]) == ["bo@example.com"]
    assert emails(acme, sources=["pixel", "manual"]) == ["bo@example.com", "cy@example.com"]
    assert emails(acme, campaign_id=spring.pk) == ["ada@example.com", "bo@example.com"]
    assert emails(acme, campaign_id=spring.pk, enrollment_states=["completed"]) == ["bo@example.com"]
    assert emails(acme, converted=True) == ["bo@example.com", "cy@example.com"]
    assert emails(acme, converted=False) == ["ada@example.com"]
    assert emails(acme, first_touch_link_id=newsletter.pk) == ["cy@example.com"]
    assert emails(acme, first_touch_link_id=shop.pk) == ["bo@example.com"]
    assert emails(acme, first_touch_post_id=newsletter.post_id) == ["cy@example.com"]
    assert emails(acme, created_from="2026-01-05", created_to="2026-01-05") == ["ada@example.com"]
    assert emails(acme, created_to="2026-01-04") == []
    assert emails(acme, tags=["vip"], converted=True, sources=["pixel"]) == ["bo@example.com"]


def test_the_filter_is_one_query(acme, people, django_assert_num_queries):
    filters = {
        "tags": ["vip"],
        "campaign_id": 1,
        "converted": True,
        "first_touch_link_id": 1,
        "created_from": "2026-01-01",
    }
    with django_assert_num_queries(1):
        segment_count(workspace_id=acme.pk, filters=filters)


def test_a_tag_filter_is_served_by_the_tag_index(acme):
    for n in range(300):
        contact_tags_add(customer=CustomerFactory(workspace=acme), names=[f"t{n % 30}"])
    sql, params = segment_contacts(workspace_id=acme.pk, filters={"tags": ["t1"]}).query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE customers_contacttag")
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: what the planner can use, not its guess
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "customers_contacttag_by_name" in plan or "customers_contacttag_one_per_name" in plan, plan


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"color": "red"}, "unknown filter: color"),
        ({"sources": ["fax"]}, "unknown source"),
        ({"campaign_id": 999999}, "unknown campaign"),
        ({"enrollment_states": ["active"]}, "enrollment states need a campaign"),
        ({"converted": "yes"}, "converted must be true or false"),
        ({"first_touch_link_id": 999999}, "unknown link"),
        ({"created_from": "last week"}, "created_from must be a date (YYYY-MM-DD)"),
        ({"tags": ["<b>"]}, "tag has characters other than letters, digits, spaces and . : / + & -"),
    ],
)
def test_a_bad_filter_is_refused_on_save(acme, filters, message):
    with pytest.raises(Unprocessable) as raised:
        segment_save(workspace=acme, name="Bad", filters=filters)
    assert raised.value.message == message


def test_another_workspaces_campaign_cannot_be_named(acme, globex):
    other = CampaignFactory(workspace=globex, slug="theirs")
    with pytest.raises(Unprocessable, match="unknown campaign"):
        segment_save(workspace=acme, name="Theirs", filters={"campaign_id": other.pk})


def test_a_segment_name_is_unique_per_workspace(acme, globex):
    segment_save(workspace=acme, name="VIPs", filters={"tags": ["VIP"]})
    segment_save(workspace=globex, name="VIPs", filters={})
    with pytest.raises(Unprocessable, match="a segment of that name exists"):
        segment_save(workspace=acme, name="VIPs", filters={})
