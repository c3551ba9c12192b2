"""next_send_at (docs/enrollment.md): the one rule, for one enrollment in Python and for many in SQL."""

from datetime import datetime, timedelta

from django.db import models
from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Coalesce, Greatest

from campaigns.models import CampaignEmail, Enrollment


def enrollment_next_send_at(*, enrollment: Enrollment) -> datetime | None:
    """When the next unsent active step is due; None while no active step remains after the last sent.

    The step is the first active one after `last_sent_position`; its delay counts from the latest of
    enrollment, resume and previous send. Works on unsaved enrollments; it does not save.

    Races with an activation (whose single UPDATE only sees committed rows): the sender, which holds
    the enrollment's row lock while it computes and saves, is safe as it is; a new or resumed
    enrollment must first share the campaign row lock (`campaigns.services`, `_share_sequence`).
    `next_send_at_expression()` is the same rule; a test checks that the two agree.
    """
    delay = (
        CampaignEmail.objects.filter(
            campaign_id=enrollment.campaign_id, active=True, position__gt=enrollment.last_sent_position
        )
        .order_by("position")  # served by the (campaign, position) unique index
        .values_list("delay_minutes", flat=True)
        .first()
    )
    if delay is None:
        return None
    return step_due_at(enrollment=enrollment, delay_minutes=delay)


def step_due_at(*, enrollment: Enrollment, delay_minutes: int) -> datetime:
    """When a step with this delay is due: counted from the latest of enrollment, resume and previous send.

    The sender calls it for the step after the one it just reserved, with the step list it already holds.
    """
    since = max(moment for moment in (enrollment.enrolled_at, enrollment.resumed_at, enrollment.last_sent_at) if moment)
    return since + timedelta(minutes=delay_minutes)


class _Minutes(models.Func):
    """An integer number of minutes as an interval."""

    output_field = models.DurationField()
    template = "make_interval(mins => %(expressions)s)"


def next_send_at_expression() -> models.Expression:
    """`enrollment_next_send_at` as a per-row SQL expression over Enrollment, for set-based updates."""
    delay = Subquery(
        CampaignEmail.objects.filter(
            campaign=OuterRef("campaign"), active=True, position__gt=OuterRef("last_sent_position")
        )
        .order_by("position")
        .values("delay_minutes")[:1]
    )
    since = Greatest(F("enrolled_at"), Coalesce("resumed_at", "enrolled_at"), Coalesce("last_sent_at", "enrolled_at"))
    return models.ExpressionWrapper(since + _Minutes(delay), output_field=models.DateTimeField())
