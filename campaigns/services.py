"""Campaign rules: campaigns and their sequence, enrollment (leads endpoint and conversions), stop/resume, suppression.

The next_send_at rule itself lives in `campaigns.schedule` (re-exported here for callers of this module).
"""

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Exists, Max, OuterRef, Value
from django.db.models.functions import Lower
from django.utils import timezone

from campaigns.digests import suppression_keys
from campaigns.models import Campaign, CampaignEmail, CampaignLead, CampaignPost, Enrollment, Suppression
from campaigns.schedule import enrollment_next_send_at, next_send_at_expression
from campaigns.steps import step_content
from clicks.links import link_add
from clicks.models import Link, Post
from customers.models import Customer, CustomerActivity
from customers.selectors import customer_by_email
from customers.services import customer_match
from lftrack.db import from_row, sql_cursor
from lftrack.errors import NotFound, Unprocessable
from webhooks.events import SUPPRESSION_EVENTS
from webhooks.outbox import event_emit
from workspaces.models import Workspace

__all__ = [
    "LeadOutcome",
    "LeadResult",
    "campaign_create",
    "campaign_email_activate",
    "campaign_email_add",
    "campaign_enroll",
    "campaign_get",
    "campaign_lead_add",
    "campaign_link_create",
    "campaign_links_create",
    "campaign_pause",
    "campaign_post_set",
    "campaign_resume",
    "enrollment_event",
    "enrollment_next_send_at",
    "enrollment_resume",
    "enrollment_stop",
    "next_send_at_expression",
    "suppression_add",
]

State = Enrollment.State
# An enrollment pending confirmation is deleted, unconfirmed, after this long.
CONFIRM_WITHIN = timedelta(days=7)
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
_MAX_DELAY_MINUTES = 2**31 - 1  # PositiveIntegerField's range on PostgreSQL
_ACTIVITY_CHANNELS = {value for value, _ in CustomerActivity._meta.get_field("channel").flatchoices}


class LeadOutcome(models.TextChoices):
    """The outcomes of docs/enrollment.md: what a POST to a campaign's leads (or an enrolling conversion) did."""

    CREATED = "created"  # new contact, enrolled, counted as a campaign lead
    REUSED = "reused"  # known contact, enrolled (or resumed: then no new lead)
    ALREADY_ENROLLED = "already_enrolled"  # enrollment untouched
    SUPPRESSED = "suppressed"  # nothing enrolled
    PENDING = "pending"  # enrolled pending the person's confirmation (double opt-in); no lead until then


@dataclass(frozen=True)
class LeadResult:
    outcome: str
    customer: Customer
    enrollment: Enrollment | None  # None when suppressed


# ---------------------------------------------------------------------------------------------
# Campaigns and their sequence


def campaign_get(*, workspace: Workspace, slug: str) -> Campaign:
    """The workspace's campaign; another workspace's slug is exactly as unknown as a missing one."""
    # A slug from the URL may hold anything, NUL included, which PostgreSQL refuses in a query.
    campaign = None
    if slug and len(slug) <= 100 and "\x00" not in slug:
        campaign = Campaign.objects.filter(workspace=workspace, slug=slug).first()
    if campaign is None:
        raise NotFound("unknown campaign")
    campaign.workspace = workspace  # already loaded: spares the services a query
    return campaign


@transaction.atomic
def campaign_create(*, workspace: Workspace, slug: str, name: str = "") -> Campaign:
    if not _SLUG_RE.match(slug):
        raise Unprocessable("slug must be lowercase letters, digits and hyphens")
    if len(name) > 200:
        raise Unprocessable("name is too long")
    try:
        with transaction.atomic():
            return Campaign.objects.create(workspace=workspace, slug=slug, name=name or slug)
    except IntegrityError:
        raise Unprocessable(f"campaign already exists: {slug}") from None


@transaction.atomic
def campaign_email_add(
    *, campaign: Campaign, subject: str, body: str = "", delay_minutes: int, active: bool = True, markdown: str = ""
) -> CampaignEmail:
    """Append a step to the sequence, plain text (`body`) or HTML (`markdown`, campaigns/steps.py); an active
    step schedules the enrollments it becomes next for."""
    if not subject:
        raise Unprocessable("subject is required")
    if len(subject) > 255:
        raise Unprocessable("subject is too long")
    content = step_content(body=body, markdown=markdown)
    if (
        isinstance(delay_minutes, bool)
        or not isinstance(delay_minutes, int)
        or not 0 <= delay_minutes <= _MAX_DELAY_MINUTES
    ):
        raise Unprocessable("delay_minutes must be a non-negative integer")
    _lock_sequence(campaign.pk)  # serialises position allocation and scheduling per campaign
    last = CampaignEmail.objects.filter(campaign=campaign).aggregate(last=Max("position"))["last"] or 0
    email = CampaignEmail.objects.create(
        workspace_id=campaign.workspace_id,
        campaign=campaign,
        position=last + 1,
        subject=subject,
        delay_minutes=delay_minutes,
        active=active,
        **content,
    )
    if active:
        _schedule_for_step(email)
    return email


@transaction.atomic
def campaign_email_activate(*, campaign_email: CampaignEmail) -> CampaignEmail:
    """Make a step live and schedule, in one UPDATE, every active enrollment it is now the next step for."""
    _lock_sequence(campaign_email.campaign_id)
    email = CampaignEmail.objects.get(pk=campaign_email.pk)
    if not email.active:
        email.active = True
        email.save(update_fields=["active"])
        _schedule_for_step(email)
    return email


def _lock_sequence(campaign_id: int) -> None:
    """Writers of the sequence take the campaign row exclusively; enrollers share it (`_share_sequence`).

    Without it an enrollment computing "no active email" could commit after an activation's UPDATE
    ran, and wait with next_send_at null for ever. NO KEY UPDATE leaves foreign-key inserts alone.
    """
    list(Campaign.objects.select_for_update(no_key=True).filter(pk=campaign_id).values_list("pk"))


_CAMPAIGN_SHARE_SQL = f"""SELECT 1 FROM {Campaign._meta.db_table} WHERE id = %(campaign_id)s FOR SHARE"""


def _share_sequence(campaign_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_CAMPAIGN_SHARE_SQL, {"campaign_id": campaign_id})


def _schedule_for_step(email: CampaignEmail) -> int:
    """One UPDATE: the campaign's active enrollments for which `email` is now the next unsent active step."""
    earlier_active_step = CampaignEmail.objects.filter(
        campaign=OuterRef("campaign"),
        active=True,
        position__gt=OuterRef("last_sent_position"),
        position__lt=email.position,
    )
    return (
        Enrollment.objects.filter(
            campaign_id=email.campaign_id, state=State.ACTIVE, last_sent_position__lt=email.position
        )
        .exclude(Exists(earlier_active_step))
        .update(next_send_at=next_send_at_expression())
    )


@transaction.atomic
def campaign_pause(*, campaign: Campaign) -> Campaign:
    """Hold the campaign's due emails (the sender claims none) until `campaign_resume`; enrolling goes on."""
    paused = Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.ACTIVE).update(
        status=Campaign.Status.PAUSED, paused_at=timezone.now()
    )
    if paused:
        event_emit(workspace_id=campaign.workspace_id, type="campaign.paused", subject_id=campaign.pk)
    campaign.refresh_from_db(fields=["status", "paused_at"])
    return campaign


@transaction.atomic
def campaign_resume(*, campaign: Campaign) -> Campaign:
    """Send again: emails that fell due while paused go out on the sender's next pass, each once."""
    Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.PAUSED).update(
        status=Campaign.Status.ACTIVE, paused_at=None
    )
    campaign.refresh_from_db(fields=["status", "paused_at"])
    return campaign


# ---------------------------------------------------------------------------------------------
# Posts


@transaction.atomic
def campaign_post_set(*, post: Post, campaign: Campaign | None) -> None:
    """Put `post` in `campaign` (its links' conversions then enroll there), or in none. Another workspace's
    campaign is unknown."""
    if campaign is None:
        CampaignPost.objects.filter(post=post).delete()
        return
    if campaign.workspace_id != post.workspace_id:
        raise Unprocessable(f"unknown campaign: {campaign.slug}")
    CampaignPost.objects.update_or_create(post=post, defaults={"campaign": campaign, "workspace_id": post.workspace_id})


@transaction.atomic
def campaign_link_create(
    *, workspace: Workspace, destination: str, campaign: Campaign | None, post_title: str | None = None, **link: Any
) -> Link:
    """`link_add` (its options in `link`: key, utm, tags, ...), and the link's post put in `campaign` when one is
    given."""
    if campaign is not None and campaign.workspace_id != workspace.pk:
        raise Unprocessable(f"unknown campaign: {campaign.slug}")  # checked before anything is written
    made = link_add(workspace=workspace, destination=destination, post_title=post_title, **link)
    if campaign is not None:
        campaign_post_set(post=made.post, campaign=campaign)
    return made


@transaction.atomic
def campaign_links_create(*, workspace: Workspace, links: list[dict[str, Any]]) -> list[Link]:
    """Several `campaign_link_create`s, all or none: the first refused one is named by its index in `links`."""
    made = []
    for index, link in enumerate(links):
        try:
            made.append(campaign_link_create(workspace=workspace, **link))
        except Unprocessable as exc:
            raise Unprocessable(f"links[{index}]: {exc.message}") from None
    return made


# ---------------------------------------------------------------------------------------------
# Enrollment


@transaction.atomic
def campaign_lead_add(
    *, campaign: Campaign, email: str, name: str = "", external_id: str = "", channel: str = "api", test: bool = False
) -> LeadResult:
    """POST /campaigns/<slug>/leads (docs/enrollment.md): match the contact (name overwritten) and enroll them.

    `test` (a test token): the contact is matched in the test identity space, and so enrolled in test mode."""
    if not email:
        raise Unprocessable("email is required")
    match = customer_match(
        workspace=campaign.workspace,
        channel=channel,
        email=email,
        name=name,
        external_id=external_id,
        overwrite_name=True,
        test=test,
    )
    return campaign_enroll(campaign=campaign, customer=match.customer, created=match.created, channel=channel)


def campaign_enroll(
    *,
    campaign: Campaign,
    customer: Customer,
    created: bool,
    channel: str,
    conversion_id: int | None = None,
    pending: bool = False,
    held_name: str = "",
) -> LeadResult:
    """Enroll a matched contact (docs/enrollment.md, "Outcomes of enrolling"), inside the caller's transaction.

    `created` says this request created the contact (outcome `created`; no enrollment can exist yet).
    Reads only `pk` and `workspace_id` of `campaign`. `conversion_id` is the conversion that enrolled
    them, if one did. `pending` (a channel without a secret: the pixel) enrolls only a contact not
    enrolled there yet, pending their confirmation, with the name they sent held until then.

    A test contact's enrollment is test too: the sender records its steps as `test` sends and mails nothing,
    and no campaign lead counts it (docs/enrollment.md, "Test mode").
    """
    if _is_suppressed(workspace_id=campaign.workspace_id, email=customer.email, test=customer.is_test):
        return LeadResult(LeadOutcome.SUPPRESSED, customer, None)
    if pending:
        return _enroll_pending(campaign=campaign, customer=customer, held_name=held_name)
    if not created:  # retries land here: answer them with one read, no lock, no write
        result = _already_enrolled(campaign=campaign, customer=customer)
        if result is not None:
            return result
    _share_sequence(campaign.pk)
    enrollment = _enrollment_insert(campaign=campaign, customer=customer)
    if enrollment is None:  # the unique (campaign, customer) index says a concurrent request enrolled them
        result = _already_enrolled(campaign=campaign, customer=customer)
        if result is None:  # only if the winner's row was deleted in between
            raise RuntimeError("enrollment vanished while enrolling")
        return result
    outcome = LeadOutcome.CREATED if created else LeadOutcome.REUSED
    if not enrollment.is_test:
        CampaignLead.objects.create(
            workspace_id=campaign.workspace_id,
            campaign=campaign,
            customer=customer,
            enrollment=enrollment,
            outcome=outcome,
            channel=channel,
            conversion_id=conversion_id,
        )
    enrollment_event(enrollment, "enrollment.created")
    return LeadResult(outcome, customer, enrollment)


def enrollment_event(enrollment: Enrollment, event_type: str) -> None:
    """The webhook event of an enrollment's change, in the caller's transaction (a test one's: test endpoints only)."""
    event_emit(
        workspace_id=enrollment.workspace_id,
        type=event_type,
        subject_id=enrollment.pk,
        customer_id=enrollment.customer_id,
        test=enrollment.is_test,
    )


def _already_enrolled(*, campaign: Campaign, customer: Customer) -> LeadResult | None:
    """An existing enrollment: untouched (`already_enrolled`), or resumed when stopped (`reused`, no lead)."""
    existing = Enrollment.objects.filter(campaign=campaign, customer=customer).first()
    if existing is None:
        return None
    if existing.state == State.STOPPED:
        # Lock only to resume: an active row may be held by the sender for the length of a send.
        _share_sequence(campaign.pk)
        existing = Enrollment.objects.select_for_update().get(pk=existing.pk)
        if existing.state == State.STOPPED:
            return LeadResult(LeadOutcome.REUSED, customer, _resume(existing))
    return LeadResult(LeadOutcome.ALREADY_ENROLLED, customer, existing)


def _enroll_pending(*, campaign: Campaign, customer: Customer, held_name: str) -> LeadResult:
    existing = Enrollment.objects.filter(campaign=campaign, customer=customer).first()
    if existing is None:
        existing = _enrollment_insert(campaign=campaign, customer=customer, pending=True, held_name=held_name)
        if existing is not None:
            return LeadResult(LeadOutcome.PENDING, customer, existing)
        existing = Enrollment.objects.get(campaign=campaign, customer=customer)  # a concurrent request's
    return LeadResult(LeadOutcome.ALREADY_ENROLLED, customer, existing)


# The columns a new enrollment's INSERT sends: its column list and its named parameters.
_ENROLLED = (
    "workspace_id",
    "campaign_id",
    "customer_id",
    "state",
    "enrolled_at",
    "last_sent_position",
    "next_send_at",
    "confirm_by",
    "held_name",
    "is_test",
)
_ENROLLMENT_INSERT_SQL = f"""INSERT INTO {Enrollment._meta.db_table} ({", ".join(_ENROLLED)})
    VALUES ({", ".join(f"%({column})s" for column in _ENROLLED)})
    ON CONFLICT (campaign_id, customer_id) DO NOTHING RETURNING id"""


def _enrollment_insert(
    *, campaign: Campaign, customer: Customer, pending: bool = False, held_name: str = ""
) -> Enrollment | None:
    """INSERT ... ON CONFLICT DO NOTHING: None when the customer is already (or concurrently) enrolled."""
    now = timezone.now()
    enrollment = Enrollment(
        workspace_id=campaign.workspace_id,
        campaign=campaign,
        customer=customer,
        state=State.PENDING if pending else State.ACTIVE,
        enrolled_at=now,
        last_sent_position=0,
        confirm_by=now + CONFIRM_WITHIN if pending else None,
        held_name=held_name,
        is_test=customer.is_test,
    )
    enrollment.next_send_at = None if pending else enrollment_next_send_at(enrollment=enrollment)
    adapt = connection.ops.adapt_datetimefield_value
    params = {column: getattr(enrollment, column) for column in _ENROLLED}
    params.update({column: adapt(params[column]) for column in ("enrolled_at", "next_send_at", "confirm_by")})
    with sql_cursor() as cursor:
        cursor.execute(_ENROLLMENT_INSERT_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return None
    # The instance as built, with the id the row got (its other columns are NULL: no default in the database).
    enrollment = from_row(Enrollment, {**vars(enrollment), "id": row.id}, campaign=campaign, customer=customer)
    return enrollment


@transaction.atomic
def enrollment_stop(*, enrollment: Enrollment) -> Enrollment:
    """Stop an active enrollment: nothing more is sent until a resume. Stopping twice changes nothing."""
    stopped = Enrollment.objects.filter(pk=enrollment.pk, state=State.ACTIVE).update(
        state=State.STOPPED, stopped_at=timezone.now(), next_send_at=None
    )
    enrollment = Enrollment.objects.get(pk=enrollment.pk)
    if stopped:
        enrollment_event(enrollment, "enrollment.stopped")
    return enrollment


@transaction.atomic
def enrollment_resume(*, enrollment: Enrollment) -> Enrollment:
    """Resume a stopped enrollment from its next unsent active step; same id, no new campaign lead.

    Only a stopped enrollment changes; a suppressed address cannot be resumed.
    """
    _share_sequence(enrollment.campaign_id)
    locked = Enrollment.objects.select_for_update().select_related("customer").get(pk=enrollment.pk)
    if locked.state != State.STOPPED:
        return locked
    if _is_suppressed(workspace_id=locked.workspace_id, email=locked.customer.email, test=locked.is_test):
        raise Unprocessable("email is suppressed")
    return _resume(locked)


def _resume(enrollment: Enrollment) -> Enrollment:
    """`enrollment` is locked and stopped; the caller holds the sequence share lock."""
    enrollment.state = State.ACTIVE
    enrollment.resumed_at = timezone.now()
    enrollment.next_send_at = enrollment_next_send_at(enrollment=enrollment)
    enrollment.save(update_fields=["state", "resumed_at", "next_send_at"])
    return enrollment


# ---------------------------------------------------------------------------------------------
# Suppression


def _is_suppressed(*, workspace_id: int, email: str, test: bool) -> bool:
    # Suppression.email is stored lower-cased by the database, so the unique index serves this; an erased
    # person's address is there as its digest only (docs/privacy.md, "The suppression digest").
    keys = suppression_keys(workspace_id=workspace_id, email=email)
    return bool(keys) and Suppression.objects.filter(workspace_id=workspace_id, email__in=keys, is_test=test).exists()


@transaction.atomic
def suppression_add(*, workspace: Workspace, email: str, reason: str, channel: str, test: bool = False) -> Suppression:
    """Never email this address again in this workspace: stop its active enrollments, note it on the contact.

    Idempotent per lower(email): a second call keeps the first reason and writes no second activity. `test`
    (a test token's report, or a test contact's): the address is suppressed in the test identity space only,
    stopping its test contact; a live contact and the live list are untouched.
    """
    if not email:
        raise Unprocessable("email is required")
    if len(email) > 254:
        raise Unprocessable("email is too long")
    try:
        validate_email(email)
    except ValidationError:
        raise Unprocessable("invalid email") from None
    if reason not in Suppression.Reason.values:
        raise Unprocessable("reason must be unsubscribed, bounced or complained")
    if channel not in _ACTIVITY_CHANNELS:
        raise Unprocessable("invalid channel")
    created = True
    try:
        with transaction.atomic():
            # lower() by the database, as the table's check constraint and the contacts' index use it.
            suppression = Suppression.objects.create(
                workspace=workspace, email=Lower(Value(email)), reason=reason, is_test=test
            )
        suppression.refresh_from_db(fields=["email", "created_at"])
    except IntegrityError:
        created = False
        suppression = Suppression.objects.get(workspace=workspace, email=Lower(Value(email)), is_test=test)
    customer = customer_by_email(workspace=workspace, email=email, test=test)
    if created:
        event_emit(
            workspace_id=workspace.pk,
            type=SUPPRESSION_EVENTS[suppression.reason],
            subject_id=suppression.pk,
            customer_id=customer.pk if customer is not None else None,
            test=test,
        )
    if customer is not None:
        # Every call, not just the first: it also stops an enrollment that raced the first one.
        active = Enrollment.objects.select_for_update().filter(customer=customer, state=State.ACTIVE)
        stopped = list(active.order_by("pk"))
        Enrollment.objects.filter(pk__in=[e.pk for e in stopped]).update(
            state=State.STOPPED, stopped_at=timezone.now(), next_send_at=None
        )
        for enrollment in stopped:
            enrollment_event(enrollment, "enrollment.stopped")
        if created:
            CustomerActivity.objects.create(
                workspace=workspace,
                customer=customer,
                kind=CustomerActivity.Kind.SUPPRESSED,
                channel=channel,
                detail={"reason": suppression.reason},
            )
    return suppression
