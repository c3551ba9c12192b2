"""Reads of contacts that the services, the commands and the back office share."""

from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Lower

from customers.models import Customer, CustomerActivity
from lftrack.db import after_keyset, as_id
from workspaces.models import Workspace


def customer_by_email(*, workspace: Workspace, email: str, test: bool = False) -> Customer | None:
    """The workspace's contact with this address in any letter case (identity is lower(email), docs/matching.md),
    live or, with `test`, of the test identity space. Served by the unique (lower(email), workspace, is_test) index."""
    if not email:
        return None
    return (
        Customer.objects.alias(email_lower=Lower("email"))
        .filter(workspace=workspace, is_test=test, email_lower=Lower(Value(email)))
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


def customers_page(
    *, workspace_id: int, filters: dict, after: tuple | None, limit: int, test: bool = False
) -> list[Customer]:
    """GET /api/v1/customers: the workspace's contacts newest first (created_at, then id), `limit` of them
    after the keyset `after` = (created_at, id). `filters`: email (any letter case, the unique index),
    external_id (exact), search (a substring of email, name or external id, the trigram indexes). Live contacts,
    or with `test` those of test tokens only."""
    # An erased contact's emptied row is nobody (customers/erasure.py).
    contacts = Customer.objects.filter(workspace_id=workspace_id, is_test=test, erased_at__isnull=True)
    if filters.get("email"):
        contacts = contacts.alias(email_lower=Lower("email")).filter(email_lower=Lower(Value(filters["email"])))
    if filters.get("external_id"):
        contacts = contacts.filter(external_id=filters["external_id"])
    if filters.get("search"):
        term = filters["search"]
        contacts = contacts.filter(Q(email__icontains=term) | Q(name__icontains=term) | Q(external_id__icontains=term))
    if after is not None:
        contacts = contacts.filter(after_keyset("created_at", after))
    return list(contacts.order_by("-created_at", "-pk")[:limit])


def customer_by_reference(*, workspace_id: int, reference: str, test: bool = False) -> Customer | None:
    """`12` (our id) or `ext_<external_id>` (the integrator's own id), in this workspace and mode only; never an
    erased contact."""
    contacts = Customer.objects.filter(workspace_id=workspace_id, is_test=test, erased_at__isnull=True)
    if reference.startswith("ext_"):
        return contacts.filter(external_id=reference.removeprefix("ext_")).exclude(external_id="").first()
    customer_id = as_id(reference)
    return None if customer_id is None else contacts.filter(pk=customer_id).first()
