"""Test data: what a workspace's test tokens recorded across the apps, and deleting it (the back office's
"Delete test data"). Here because conversions is the one app that sees every app it reads (docs/architecture.md, "Layout")."""

from django.db import transaction
from django.db.models import QuerySet

from campaigns.models import EmailSend, Enrollment, Suppression
from conversions.models import ConversionEvent, Refund
from customers.models import Customer
from webhooks.models import Event
from workspaces.models import Workspace


def test_data_of(*, workspace_id: int) -> list[tuple[str, QuerySet]]:
    """What the workspace's test tokens recorded, by kind, dependants before what they depend on (the order
    "Delete test data" deletes in): refunds, conversions, a test contact's sends and enrollments, test
    suppressions, test contacts (their activity goes with them), the events sent to test endpoints (their
    deliveries and attempts go with them)."""
    test = {"workspace_id": workspace_id, "is_test": True}
    return [
        ("refunds", Refund.objects.filter(**test)),
        ("conversions", ConversionEvent.objects.filter(**test)),
        ("sends", EmailSend.objects.filter(workspace_id=workspace_id, enrollment__is_test=True)),
        ("enrollments", Enrollment.objects.filter(**test)),
        ("suppressions", Suppression.objects.filter(**test)),
        ("customers", Customer.objects.filter(**test)),
        ("webhook events", Event.objects.filter(workspace_id=workspace_id, test=True)),
    ]


@transaction.atomic
def workspace_test_data_delete(*, workspace: Workspace) -> dict[str, int]:
    """Delete what the workspace's test tokens recorded: its test-mode conversions and their refunds, its test
    contacts with their enrollments, sends and activity, and its test suppressions; dependants first, in one
    transaction. None of it was ever counted in the numbers, so no total changes. Returns how many of each went."""
    return {
        name: rows.delete()[1].get(rows.model._meta.label, 0) for name, rows in test_data_of(workspace_id=workspace.pk)
    }
