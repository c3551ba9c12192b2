"""Reads of conversion events that the back office and the API share."""
from django.db.models import QuerySet

from conversions.models import ConversionEvent
from customers.models import Customer


def conversions_of_customer(*, customer: Customer) -> QuerySet:
    """The contact's leads and sales, newest first, with their link and post."""
    return (
        ConversionEvent.objects.filter(workspace_id=customer.workspace_id, customer=customer)
        .select_related("link__post")
        .order_by("-occurred_at", "-pk")
    )
