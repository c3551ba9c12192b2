"""Erasing a person and exporting what is known of them (GDPR articles 17 and 15): docs/privacy.md.

The contact's row stays, emptied and marked `erased_at`: enrollments, campaign leads and sends are counted
against it, and deleting it would take them out of the campaign numbers. Nothing shows it any more (the read
API, the back office), and database triggers keep it empty against a request that read it before the erasure
committed (customers/migrations/0007_customer_erasure.py). Each app above this one holds some of the person's
data and registers, in its AppConfig.ready(), how to erase and export its part (docs/architecture.md, "The
layers"); the parts run in their rank's order, inside the erasure's transaction.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from customers.models import ContactTag, Customer, CustomerActivity
from lftrack.errors import NotFound
from lftrack.fields import iso_utc, optional
from webhooks.models import Event
from webhooks.outbox import event_emit

Eraser = Callable[[Customer], None]
Exporter = Callable[[Customer], dict]


@dataclass
class _Part:
    rank: int
    erase: Eraser | str
    export: Exporter | str


_PARTS: dict[str, _Part] = {}


def erasure_parts_register(parts: dict[str, tuple[int, str, str]]) -> None:
    """`{name: (rank, "app.module.erase", "app.module.export")}`: how the owning app erases and exports what it
    holds of one contact. Lower ranks run first (a part that finds rows through the contact's conversions runs
    before the part that detaches them). Imported on first use."""
    for name, (rank, erase, export) in parts.items():
        _PARTS[name] = _Part(rank, erase, export)


def _parts() -> list[tuple[str, Eraser, Exporter]]:
    out = []
    for name, part in sorted(_PARTS.items(), key=lambda item: (item[1].rank, item[0])):
        if isinstance(part.erase, str):
            part.erase = import_string(part.erase)
        if isinstance(part.export, str):
            part.export = import_string(part.export)
        out.append((name, part.erase, part.export))
    return out


def customer_erase(*, customer: Customer) -> dict:
    """Erase the contact (docs/privacy.md, "Erasing a person"): what identifies them is removed from every table,
    their address stays only as a suppression digest, their conversions stay counted without pointing to them,
    and a `customer.erased` webhook event carries their id. 404 `unknown customer` when already erased.

    The contact's row is locked FOR UPDATE first: a conversion being recorded for them either commits before
    (and is erased with the rest) or waits and finds them erased (docs/concurrency.md, "Erasure against a
    conversion")."""
    with transaction.atomic():
        locked = Customer.objects.select_for_update().filter(pk=customer.pk, erased_at__isnull=True).first()
        if locked is None:
            raise NotFound("unknown customer")
        for _, erase, _ in _parts():
            erase(locked)
        _activities_erase(locked)
        ContactTag.objects.filter(customer=locked).delete()  # labels put on the person
        _events_erase(locked)
        now = timezone.now()
        Customer.objects.filter(pk=locked.pk).update(
            email="", name="", avatar_url="", external_id="", erased_at=now, updated_at=now
        )
        event_emit(
            workspace_id=locked.workspace_id,
            type="customer.erased",
            subject_id=locked.pk,
            customer_id=locked.pk,
            test=locked.is_test,
        )
    return {"id": locked.pk, "erased": True, "erased_at": iso_utc(now)}


def _activities_erase(customer: Customer) -> None:
    """Their own timeline goes; another contact's keeps its entries of an identity move, without pointing to
    them and without the external id they hold now."""
    CustomerActivity.objects.filter(workspace_id=customer.workspace_id, customer=customer).delete()
    with connection.cursor() as cursor:
        cursor.execute(
            _OTHERS_ACTIVITIES_SQL,
            {"external_id": customer.external_id or None, "workspace": customer.workspace_id, "customer": customer.pk},
        )


_OTHERS_ACTIVITIES_SQL = f"""
UPDATE {CustomerActivity._meta.db_table} SET other_customer_id = NULL,
    external_id = CASE WHEN external_id = %(external_id)s THEN '' ELSE external_id END,
    detail = CASE WHEN detail ->> 'external_id' = %(external_id)s THEN detail - 'external_id' ELSE detail END
        - 'from_customer_id' - 'to_customer_id'
WHERE workspace_id = %(workspace)s AND other_customer_id = %(customer)s
"""


def _events_erase(customer: Customer) -> None:
    """The webhook events about them keep their type and object id; their bodies (the objects as the read API
    showed them) and details go. A delivery still owed sends what is left."""
    with connection.cursor() as cursor:
        cursor.execute(_EVENTS_SQL, {"workspace": customer.workspace_id, "customer": customer.pk})


_EVENTS_SQL = f"""
UPDATE {Event._meta.db_table} SET data = jsonb_build_object('id', subject_id, 'erased', true), detail = '{{}}'::jsonb
WHERE workspace_id = %(workspace)s AND customer_id = %(customer)s
"""


def erased_customer_object(event: Event) -> dict:
    """The body of `customer.erased`: the id only (webhooks/payloads.py)."""
    return {"id": event.subject_id}


def customer_export(*, customer: Customer) -> dict:
    """Everything lftrack holds of the contact, as JSON (docs/privacy.md, "Exporting a person"): their identity,
    their timeline, and each app's part (conversions, clicks, refunds, enrollments, emails, suppression, payment
    references)."""
    out: dict = {
        "customer": {
            "id": customer.pk,
            "email": optional(customer.email),
            "name": optional(customer.name),
            "avatar_url": optional(customer.avatar_url),
            "external_id": optional(customer.external_id),
            "source": customer.source,
            "test": customer.is_test,
            "created_at": iso_utc(customer.created_at),
            "updated_at": iso_utc(customer.updated_at),
        },
        "activity": [
            {
                "kind": activity.kind,
                "channel": activity.channel,
                "external_id": optional(activity.external_id),
                "other_customer_id": activity.other_customer_id,
                "detail": activity.detail,
                "at": iso_utc(activity.created_at),
            }
            for activity in CustomerActivity.objects.filter(
                workspace_id=customer.workspace_id, customer=customer
            ).order_by("created_at", "pk")
        ],
        "tags": sorted(ContactTag.objects.filter(customer=customer).values_list("name", flat=True)),
    }
    for _, _, export in _parts():
        out.update(export(customer))
    return out
