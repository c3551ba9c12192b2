"""The conversion, customer, external-id move and suppression objects of webhooks, as the read API shows
them (registered by its AppConfig.ready(); webhooks/payloads.py). Here because the customer's read-API object is here."""

from django.db.models import F, OuterRef

from campaigns.models import Suppression
from conversions.api import conversion_read_out
from conversions.customers_api import customers_out
from conversions.models import ConversionEvent
from conversions.selectors import refunded_of
from customers.models import Customer
from lftrack.fields import iso_utc


def conversion_object(event) -> dict | None:
    conversion = (
        ConversionEvent.objects.filter(pk=event.subject_id, workspace_id=event.workspace_id)
        .select_related("customer")
        .annotate(click_key=F("click__click_id"), refunded_cents=refunded_of(OuterRef("pk")))
        .first()
    )
    return None if conversion is None else conversion_read_out(conversion)


def _customers(event, *ids: int | None) -> dict[int, dict]:
    """The customers as the read API shows them to a token of the event's mode (a test event's are test ones)."""
    found = list(
        Customer.objects.filter(workspace_id=event.workspace_id, is_test=event.test, pk__in=[pk for pk in ids if pk])
    )
    return customers_out(found, event.workspace_id, test=event.test) if found else {}


def customer_object(event) -> dict | None:
    return _customers(event, event.subject_id).get(event.subject_id)


def external_id_move_object(event) -> dict | None:
    """Who the external id moved from and to, each as the read API shows them now."""
    source = event.detail.get("from_customer_id")
    customers = _customers(event, event.subject_id, source)
    return {
        "external_id": event.detail.get("external_id"),
        "from_customer": customers.get(source),
        "to_customer": customers.get(event.subject_id),
    }


def suppression_object(event) -> dict | None:
    suppression = Suppression.objects.filter(pk=event.subject_id, workspace_id=event.workspace_id).first()
    if suppression is None:
        return None
    return {
        "email": suppression.email,
        "reason": suppression.reason,
        "since": iso_utc(suppression.created_at),
        "customer": _customers(event, event.customer_id).get(event.customer_id),
    }
