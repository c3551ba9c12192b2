"""Reads of contacts that the services, the commands and the back office share."""
from django.db.models import QuerySet, Value
from django.db.models.functions import Lower

from customers.models import Customer, CustomerActivity
from workspaces.models import Workspace


def customer_by_email(*, workspace: Workspace, email: str) -> Customer | None:
    """The workspace's contact with this address in any letter case (identity is lower(email), docs/matching.md).

    Served by the unique (lower(email), workspace) index."""
    if not email:
        return None
    return (
        Customer.objects.alias(email_lower=Lower("email"))
        .filter(workspace=workspace, email_lower=Lower(Value(email)))
        .exclude(email="")
        .first()
    )


def customer_activity(*, customer: Customer) -> QuerySet:
    """The contact's timeline, oldest first, with the other contact of each identity move."""
    return (
        CustomerActivity.objects.filter(workspace_id=customer.workspace_id, customer=customer)
        .select_related("other_customer")
        .order_by("created_at", "pk")
    )
