"""Big lists count at most CappedCountPaginator.CAP rows, and say so."""

import pytest
from django.urls import reverse

from backoffice.paginator import CappedCountPaginator
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db


def test_small_lists_show_the_exact_count(as_alice, acme):
    CustomerFactory.create_batch(3, workspace=acme)
    page = as_alice.get(reverse("admin:customers_customer_changelist")).content.decode()
    assert "3 contacts" in page and "more than" not in page


def test_lists_past_the_cap_say_more_than(as_alice, acme, monkeypatch):
    monkeypatch.setattr(CappedCountPaginator, "CAP", 4)
    CustomerFactory.create_batch(6, workspace=acme)
    page = as_alice.get(reverse("admin:customers_customer_changelist")).content.decode()
    assert "more than 4 contacts" in page


def test_the_count_stops_at_the_cap(acme):
    from customers.models import Customer

    CustomerFactory.create_batch(5, workspace=acme)
    paginator = CappedCountPaginator(Customer.objects.order_by("pk"), 2)
    paginator.CAP = 3
    assert paginator.count == 4 and paginator.capped
