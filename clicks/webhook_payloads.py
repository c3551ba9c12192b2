"""The click object of `click.created` webhooks (registered by its AppConfig.ready(); webhooks/payloads.py)."""

from clicks.models import Click
from lftrack.fields import iso_utc, optional


def click_object(event) -> dict | None:
    click = Click.objects.select_related("link").filter(pk=event.subject_id, workspace_id=event.workspace_id).first()
    if click is None:
        return None
    return {
        "id": click.click_id,
        "link_id": click.link_id,
        "post_id": click.link.post_id,
        "created_at": iso_utc(click.created_at),
        "device": optional(click.device),
        "browser": optional(click.browser),
        "os": optional(click.os),
        "referrer_domain": optional(click.referrer_domain),
        "country": optional(click.country),
        "city": optional(click.city),
        "utm_source": optional(click.utm_source),
        "utm_medium": optional(click.utm_medium),
        "utm_campaign": optional(click.utm_campaign),
        "bot": click.is_bot,
    }
