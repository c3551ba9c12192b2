"""A person's part in conversions, erased and exported (customers/erasure.py; docs/privacy.md, "Erasing a person").

Their conversions and refunds stay, so every number stays true, but point to nobody: what they said of the
person (`meta`, the `event_name` label, a refund's reason) goes, and so do the user agent, full referrer and city
of the clicks they came by (the device, browser, OS, referrer domain and country read from them stay: no person
is known by them, and the click breakdowns count them). The answers kept for safe retries that name them are dropped,
and so are their lifetime totals (CustomerTotals).
"""

from django.db.models import Q

from clicks.models import Click
from conversions.models import ConversionEvent, CustomerTotals, IdempotencyKey, Refund
from customers.models import Customer
from lftrack.fields import iso_utc, optional


def _conversions(customer: Customer):
    return ConversionEvent.objects.filter(workspace_id=customer.workspace_id, customer=customer)


def person_erase(customer: Customer) -> None:
    conversions = _conversions(customer)
    Click.objects.filter(pk__in=conversions.values("click_id")).update(user_agent="", referrer="", city="")
    Refund.objects.filter(workspace_id=customer.workspace_id, conversion__in=conversions).update(reason="")
    IdempotencyKey.objects.filter(
        Q(response_body__customer__id=customer.pk) | Q(response_body__contact__id=customer.pk),
        workspace_id=customer.workspace_id,
    ).delete()
    conversions.update(customer=None, meta={}, event_name="")
    # After the conversions: a refund in flight holds its sale, then its totals row; taking them in that order too
    # never deadlocks with it. Their conversions now count for nobody, so the lifetime numbers go with the person.
    CustomerTotals.objects.filter(workspace_id=customer.workspace_id, customer=customer).delete()


def person_export(customer: Customer) -> dict:
    """Their conversions, the clicks they came by, and the refunds of their sales."""
    conversions = list(_conversions(customer).select_related("click").order_by("occurred_at", "pk"))
    clicks = {c.click.pk: c.click for c in conversions}
    refunds = Refund.objects.filter(workspace_id=customer.workspace_id, conversion__in=[c.pk for c in conversions])
    return {
        "conversions": [
            {
                "id": c.pk,
                "event": c.event,
                "click_id": c.click.click_id,
                "link_id": c.link_id,
                "value_cents": c.value_cents,
                "currency": c.currency if c.event == ConversionEvent.Event.SALE else None,
                "event_name": optional(c.event_name),
                "invoice_id": optional(c.invoice_id),
                "meta": c.meta,
                "channel": c.channel,
                "occurred_at": iso_utc(c.occurred_at),
            }
            for c in conversions
        ],
        "clicks": [
            {
                "click_id": click.click_id,
                "link_id": click.link_id,
                "at": iso_utc(click.created_at),
                "user_agent": optional(click.user_agent),
                "referrer": optional(click.referrer),
                "device": optional(click.device),
                "browser": optional(click.browser),
                "os": optional(click.os),
                "country": optional(click.country),
                "city": optional(click.city),
                "utm_source": optional(click.utm_source),
                "utm_medium": optional(click.utm_medium),
                "utm_campaign": optional(click.utm_campaign),
            }
            for click in sorted(clicks.values(), key=lambda click: click.pk)
        ],
        "refunds": [
            {
                "id": r.pk,
                "conversion_id": r.conversion_id,
                "amount_cents": r.amount_cents,
                "currency": r.currency,
                "reason": optional(r.reason),
                "refund_id": optional(r.refund_id),
                "at": iso_utc(r.created_at),
            }
            for r in refunds.order_by("created_at", "pk")
        ],
    }
