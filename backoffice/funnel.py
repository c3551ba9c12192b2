"""A campaign's funnel on its page: enrolled, each step sent, completed; unsubscribes, bounces and complaints; each
step's sends per day over the last 30 days (drawn by backoffice/static/backoffice/dashboard.js). Sends come from
the daily roll-up per step plus the live tail (rollups.selectors.campaign_step_sends)."""

from datetime import timedelta

from django.utils import timezone

from campaigns.mail import subject_render
from campaigns.models import Campaign, CampaignEmail
from campaigns.selectors import campaign_bounces
from rollups.selectors import campaign_step_sends

FUNNEL_DAYS = 30


def _share(count: int, of: int) -> int:
    return round(count * 100 / of) if of else 0


def step_name(step: CampaignEmail) -> str:
    """ "#2 Tips for you, ‹name›": the subject with its placeholders named, not filled for somebody."""
    return f"#{step.position} {subject_render(step.subject, name='‹name›', email='‹email›')}"


def funnel_context(campaign: Campaign) -> dict:
    """`campaign` comes annotated by rollups.selectors.campaigns_with_numbers (the list's and page's queryset)."""
    today = timezone.now().date()
    since = today - timedelta(days=FUNNEL_DAYS - 1)
    sends = campaign_step_sends(campaign_id=campaign.pk, since=since)
    steps = list(CampaignEmail.objects.filter(campaign=campaign).order_by("position"))
    enrolled = campaign.n_enrollments
    stages = [{"name": "Enrolled", "count": enrolled, "share": 100 if enrolled else 0, "note": ""}]
    for step in steps:
        counts = sends["steps"].get(step.position, {"sent": 0, "failed": 0})
        note = "draft, not sending" if not step.active else (f"{counts['failed']} failed" if counts["failed"] else "")
        stages.append(
            {
                "name": f"{step_name(step)} sent",
                "count": counts["sent"],
                "share": _share(counts["sent"], enrolled),
                "note": note,
            }
        )
    stages.append(
        {
            "name": "Completed",
            "count": campaign.n_completed,
            "share": _share(campaign.n_completed, enrolled),
            "note": "",
        }
    )
    days = [since + timedelta(days=n) for n in range(FUNNEL_DAYS)]
    return {
        "sent": {position: counts["sent"] for position, counts in sends["steps"].items()},  # per step, all time
        "stages": stages,
        "exits": [
            ("Unsubscribed", campaign.n_unsubscribes),
            ("Bounced", campaign_bounces(campaign=campaign)),
            ("Marked as spam", campaign.n_complaints),
        ],
        "chart": {
            "labels": [day.isoformat() for day in days],
            "steps": [
                {"label": step_name(step), "data": [sends["days"].get((day, step.position), 0) for day in days]}
                for step in steps
            ],
        },
    }
