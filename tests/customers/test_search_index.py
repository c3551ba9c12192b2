"""The admin's contact search is served by the trigram indexes (customers 0002), not a full scan."""

import pytest
from django.contrib.admin.sites import site
from django.db import connection
from django.test import RequestFactory

from customers.models import Customer


@pytest.mark.django_db
def test_admin_search_sql_uses_the_trigram_indexes(alice):
    request = RequestFactory().get("/admin/customers/customer/", {"q": "person42"})
    request.user = alice
    model_admin = site._registry[Customer]
    queryset, _ = model_admin.get_search_results(request, Customer.objects.all(), "person42")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny test table would be scanned anyway
        plan = queryset.explain()
    for field in ("email", "name", "external_id"):
        assert f"customers_search_{field}" in plan, plan
