"""Reads of enrollments, emails and suppressions that the services, the commands and the back office share."""

from django.db.models import QuerySet, Value
from django.db.models.functions import Lower

from campaigns.digests import suppression_keys
from campaigns.models import BroadcastRecipient, Campaign, EmailSend, Enrollment, Suppression
from clicks.models import Click
from customers.models import Customer
from lftrack.db import after_keyset, sql_cursor


def enrollments_of_customer(*, customer: Customer) -> QuerySet:
    """The contact's enrollments, newest first, with their campaign."""
    return (
        Enrollment.objects.filter(workspace_id=customer.workspace_id, customer=customer)
        .select_related("campaign")
        .order_by("-enrolled_at", "-pk")
    )


def sends_of_customer(*, customer: Customer) -> QuerySet:
    """Every email of a campaign sent (or tried) to the contact, newest first, with its campaign and step;
    through the contact's enrollments and the (enrollment, position) index."""
    return (
        EmailSend.objects.filter(workspace_id=customer.workspace_id, enrollment__customer=customer)
        .select_related("campaign", "campaign_email")
        .order_by("-sent_at", "-pk")
    )


def email_clicks_of_sends(*, send_ids: list[int]) -> dict[int, list[Click]]:
    """By send id, the clicks of people (not bots) on that email's tracked links, oldest first, with the link
    (docs/email.md, "Tracked links"; the partial index clicks_click_email_send)."""
    clicks: dict[int, list[Click]] = {}
    rows = Click.objects.filter(email_send_id__in=send_ids, is_bot=False).select_related("link").order_by("created_at")
    for click in rows:
        assert click.email_send_id is not None  # the filter's
        clicks.setdefault(click.email_send_id, []).append(click)
    return clicks


def broadcasts_of_customer(*, customer: Customer) -> QuerySet:
    """The contact's broadcast recipient rows (fixed when each broadcast started), newest first, with the broadcast;
    through the customer key's index."""
    return (
        BroadcastRecipient.objects.filter(workspace_id=customer.workspace_id, customer=customer)
        .select_related("broadcast")
        .order_by("-pk")
    )


def broadcast_clicks_of_recipients(*, recipient_ids: list[int]) -> dict[int, list[Click]]:
    """By broadcast recipient id, the clicks of people (not bots) on that broadcast's tracked links (a BroadcastLink's
    Link), oldest first, with the link (docs/email.md, "Broadcasts"; the partial index clicks_click_bc_recipient)."""
    clicks: dict[int, list[Click]] = {}
    rows = (
        Click.objects.filter(broadcast_recipient_id__in=recipient_ids, is_bot=False, link__broadcast_link__isnull=False)
        .select_related("link")
        .order_by("created_at")
    )
    for click in rows:
        assert click.broadcast_recipient_id is not None  # the filter's
        clicks.setdefault(click.broadcast_recipient_id, []).append(click)
    return clicks


def enrollment_by_email(*, campaign: Campaign, email: str) -> Enrollment | None:
    """The campaign's enrollment of the live contact with this address, in any letter case."""
    return (
        Enrollment.objects.alias(email_lower=Lower("customer__email"))
        .filter(campaign=campaign, is_test=False, email_lower=Lower(Value(email)))
        .exclude(customer__email="")
        .first()
    )


def suppression_by_email(*, workspace_id: int, email: str, test: bool = False) -> Suppression | None:
    """The workspace's suppression of this address (stored lower-cased), if any; with `test`, its test-mode one."""
    keys = suppression_keys(workspace_id=workspace_id, email=email)
    if not keys:
        return None
    return Suppression.objects.filter(workspace_id=workspace_id, email__in=keys, is_test=test).order_by("pk").first()


def suppressions_by_email(*, workspace_id: int, emails: list[str], test: bool = False) -> dict[str, Suppression]:
    """The workspace's suppressions of these addresses, by lower-cased address (one query); with `test`, the
    test-mode ones."""
    # Each address and its digest, under which an erased person's stays suppressed (docs/privacy.md).
    wanted = {
        key: email.lower() for email in emails for key in suppression_keys(workspace_id=workspace_id, email=email)
    }
    if not wanted:
        return {}
    rows = Suppression.objects.filter(workspace_id=workspace_id, email__in=wanted, is_test=test).order_by("-pk")
    return {wanted[s.email]: s for s in rows}


def enrollments_page(
    *, campaign: Campaign, state: str | None, after: tuple | None, limit: int, test: bool = False
) -> list[Enrollment]:
    """GET /api/v1/campaigns/<slug>/enrollments: newest first (enrolled_at, then id), `limit` of them after
    the keyset `after`, with their contact; the (campaign, -enrolled_at, -id) index serves it. Live
    enrollments, or with `test` those of test contacts only."""
    enrollments = Enrollment.objects.filter(campaign=campaign, is_test=test)
    if state is not None:
        enrollments = enrollments.filter(state=state)
    if after is not None:
        enrollments = enrollments.filter(after_keyset("enrolled_at", after))
    return list(enrollments.select_related("customer").order_by("-enrolled_at", "-pk")[:limit])


_BOUNCED_SQL = f"""
SELECT COUNT(*) AS bounced FROM {Suppression._meta.db_table} s
JOIN {Customer._meta.db_table} c ON c.workspace_id = s.workspace_id AND lower(c.email) = s.email AND c.email <> ''
    AND NOT c.is_test
JOIN {Enrollment._meta.db_table} e ON e.customer_id = c.id AND e.campaign_id = %(campaign)s
WHERE s.workspace_id = %(workspace)s AND s.reason = 'bounced' AND NOT s.is_test
"""


def campaign_bounces(*, campaign: Campaign) -> int:
    """The campaign's recipients whose address bounced for good (suppressed as bounced): from the workspace's
    bounced addresses, each through the unique lower(email) index and the (campaign, customer) one. Live ones:
    a number."""
    with sql_cursor() as cursor:
        cursor.execute(_BOUNCED_SQL, {"campaign": campaign.pk, "workspace": campaign.workspace_id})
        return cursor.fetchone().bounced
