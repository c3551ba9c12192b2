"""A person's part in the payment connectors, erased and exported (customers/erasure.py; docs/privacy.md,
"Erasing a person").

The provider's events about them (a checkout, an invoice: the provider's copy of their name, address and
email) lose their stored bodies, and the provider's customer ids that stood for them are forgotten; a
subscription and a payment stay known (their renewals and refunds keep counting) without pointing to them.
"""

from django.db.models import Q

from customers.models import Customer
from lftrack.fields import iso_utc
from payments.models import Delivery, Reference


def _deliveries(customer: Customer):
    """Their sales' and refunds' events, and any other event whose body names their address or one of the
    provider's customer ids that stands for them (one waiting for its sale, one not attributed)."""
    named = Q(conversion__customer=customer) | Q(refund__conversion__customer=customer)
    if customer.email:
        named |= Q(body__icontains=customer.email)
    refs = Reference.objects.filter(
        workspace_id=customer.workspace_id, customer=customer, kind=Reference.Kind.CUSTOMER
    ).values_list("ref", flat=True)
    for ref in refs:
        named |= Q(body__contains=f'"{ref}"')
    return Delivery.objects.filter(named, workspace_id=customer.workspace_id)


def person_erase(customer: Customer) -> None:
    _deliveries(customer).exclude(body="").update(body="")
    references = Reference.objects.filter(workspace_id=customer.workspace_id, customer=customer)
    references.filter(kind=Reference.Kind.CUSTOMER).delete()
    references.update(customer=None)


def person_export(customer: Customer) -> dict:
    """The provider's ids that stand for them, and the provider's events about them as received."""
    references = Reference.objects.filter(workspace_id=customer.workspace_id, customer=customer)
    return {
        "payment_references": [
            {"provider": r.provider, "kind": r.kind, "id": r.ref, "since": iso_utc(r.created_at)}
            for r in references.order_by("created_at", "pk")
        ],
        "payment_events": [
            {
                "provider": d.connection.provider,
                "event_id": d.event_id,
                "type": d.event_type,
                "outcome": d.outcome,
                "received_at": iso_utc(d.received_at),
                "body": d.body,
            }
            for d in _deliveries(customer).select_related("connection").order_by("received_at", "pk")
        ],
    }
