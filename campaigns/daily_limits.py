"""The daily send limit per workspace, shared by sequence emails and broadcasts."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count

from campaigns.models import BroadcastRecipient, EmailSend
from workspaces.models import Workspace


def daily_allowance(workspace_ids: set[int], *, now: datetime) -> dict[int, int]:
    """How many more emails each workspace may send this UTC day, every send of the workspace counted (sequence
    steps and broadcast messages alike; test sends mail nobody: not counted).

    The workspace rows are locked (in id order, so workers never deadlock) until this transaction
    commits its reservations: a second worker waits here, then counts this one's rows. FOR NO KEY
    UPDATE does not block inserts that reference the workspace (conversions, enrollments).
    """
    if not workspace_ids:
        return {}
    limits = dict(
        Workspace.objects.select_for_update(no_key=True)
        .filter(pk__in=workspace_ids)
        .order_by("pk")
        .values_list("pk", "daily_send_limit")
    )
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    today = {"workspace_id__in": workspace_ids, "sent_at__gte": day, "sent_at__lt": day + timedelta(days=1)}
    used = dict(
        EmailSend.objects.filter(**today)
        .exclude(status=EmailSend.Status.TEST)
        .values("workspace_id")
        .annotate(count=Count("id"))
        .values_list("workspace_id", "count")
    )
    broadcast = (
        # A recipient's sent_at is set when it is reserved (handed over or about to be) and cleared when it is
        # put back: the (workspace, sent_at) index alone answers.
        BroadcastRecipient.objects.filter(**today)
        .values("workspace_id")
        .annotate(count=Count("id"))
        .values_list("workspace_id", "count")
    )
    for workspace_id, count in broadcast:
        used[workspace_id] = used.get(workspace_id, 0) + count
    default = settings.DEFAULT_DAILY_SEND_LIMIT
    return {
        workspace_id: max(0, (default if limit is None else limit) - used.get(workspace_id, 0))
        for workspace_id, limit in limits.items()
    }


def next_utc_midnight(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
