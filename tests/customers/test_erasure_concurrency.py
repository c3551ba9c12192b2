"""Erasure against a conversion for the same person, at the same moment, with real threads on PostgreSQL: whichever
commits first, the state is one of the two consistent ones (docs/concurrency.md, "Erasure against a conversion")."""

import pytest
from django.utils import timezone

from conversions.models import ConversionEvent
from conversions.services import conversion_record
from customers.erasure import customer_erase
from customers.models import Customer, CustomerActivity
from customers.services import customer_match
from tests.conftest import run_in_threads
from tests.factories import ClickFactory, LinkFactory, WorkspaceFactory

EMAIL, NAME = "ada@example.com", "Ada Lovelace"


def assert_consistent(erased_id: int, conversions: int) -> None:
    """The erased row is empty and nothing points to it; every conversion is there, pointing to nobody or to a live
    contact of the address (the person came back after the erasure, as a new contact)."""
    erased = Customer.objects.get(pk=erased_id)
    assert erased.erased_at is not None
    assert (erased.email, erased.name, erased.avatar_url, erased.external_id) == ("", "", "", "")
    # an activity a late request logged keeps its kind and time only
    for activity in CustomerActivity.objects.filter(customer_id=erased_id):
        assert (activity.external_id, activity.other_customer_id, activity.detail) == ("", None, {})
    events = list(ConversionEvent.objects.all())
    assert len(events) == conversions
    for event in events:
        assert event.customer_id != erased_id
        if event.customer_id is None:
            assert event.meta == {} and event.event_name == ""
        else:
            back = Customer.objects.get(pk=event.customer_id)
            assert back.erased_at is None and back.email == EMAIL


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("round_", range(6))
def test_erasure_racing_a_conversion_leaves_a_consistent_state(round_):
    workspace = WorkspaceFactory()
    click = ClickFactory(link=LinkFactory(post__workspace=workspace), workspace=workspace)
    ada = customer_match(workspace=workspace, channel="api", email=EMAIL).customer

    def work(i: int):
        if i == 0:
            return customer_erase(customer=ada)
        return conversion_record(
            workspace=workspace,
            channel="api",
            event="lead",
            click_id=click.click_id,
            event_name=f"signup of {NAME}",
            meta={"who": NAME},
            customer={"email": EMAIL, "name": NAME, "external_id": "crm-ada"},
        )

    results = run_in_threads(2, work)
    assert not any(isinstance(r, Exception) for r in results), results
    assert_consistent(ada.pk, conversions=1)


@pytest.mark.django_db
def test_a_request_that_read_the_person_before_the_erasure_writes_nothing_of_them(acme):
    """The interleaving the threads hit only sometimes, forced: the request holds the contact as read before the
    erasure committed, then writes its conversion, activity and name fill after."""
    click = ClickFactory(link=LinkFactory(post__workspace=acme), workspace=acme)
    stale = customer_match(workspace=acme, channel="api", email=EMAIL).customer
    customer_erase(customer=stale)
    sale = ConversionEvent.objects.create(
        workspace=acme,
        click=click,
        link=click.link,
        customer=stale,
        event="sale",
        value_cents=100,
        event_name=f"for {NAME}",
        meta={"email": EMAIL},
        occurred_at=timezone.now(),
        channel="api",
    )
    sale.refresh_from_db()
    assert (sale.customer_id, sale.meta, sale.event_name) == (None, {}, "")
    CustomerActivity.objects.create(
        workspace=acme,
        customer=stale,
        kind="email_added",
        channel="api",
        external_id="crm-ada",
        detail={"email": EMAIL},
    )
    assert list(CustomerActivity.objects.filter(customer=stale).values_list("kind", "external_id", "detail")) == [
        ("email_added", "", {})
    ]
    assert Customer.objects.filter(pk=stale.pk, name="").update(name=NAME) == 0
    assert_consistent(stale.pk, conversions=1)
