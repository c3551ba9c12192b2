"""The enrollment and campaign objects of webhooks, as the read API shows them (registered by its AppConfig.ready())."""

from campaigns.api import recipient_out
from campaigns.models import Campaign, Enrollment
from lftrack.fields import iso_utc


def enrollment_object(event) -> dict | None:
    enrollment = (
        Enrollment.objects.select_related("customer", "campaign")
        .filter(pk=event.subject_id, workspace_id=event.workspace_id)
        .first()
    )
    if enrollment is None:
        return None
    return {**recipient_out(enrollment), "campaign": enrollment.campaign.slug}


def campaign_object(event) -> dict | None:
    campaign = Campaign.objects.filter(pk=event.subject_id, workspace_id=event.workspace_id).first()
    if campaign is None:
        return None
    return {
        "id": campaign.pk,
        "slug": campaign.slug,
        "name": campaign.name,
        "status": campaign.status,
        "paused_at": iso_utc(campaign.paused_at) if campaign.paused_at else None,
    }
