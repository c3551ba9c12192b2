"""The contact page's sections: first touch, clicks, conversions, emails, enrollments and one timeline of it all."""

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from campaigns.mail import subject_render
from campaigns.models import Broadcast, BroadcastRecipient, EmailSend, Enrollment, Suppression
from campaigns.selectors import (
    broadcast_clicks_of_recipients,
    broadcasts_of_customer,
    email_clicks_of_sends,
    enrollments_of_customer,
    sends_of_customer,
    suppression_by_email,
)
from clicks.models import Click, Link
from conversions.models import ConversionEvent
from conversions.selectors import clicks_of_customer, conversions_of_customer
from customers.models import Customer, CustomerActivity
from customers.selectors import customer_activity
from lftrack.currencies import amount_text

# The contact page lists this many of each; the rest is one click away in the filtered lists.
PAGE_ROWS = 100
Kind = CustomerActivity.Kind
UTM_PARAMETERS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


@dataclass(frozen=True)
class Entry:
    """One line of the timeline; `kind` names its marker (identity, click, lead, sale, email, enrollment)."""

    when: datetime
    kind: str
    what: SafeString
    via: str = ""


def suppression_row(customer: Customer) -> Suppression | None:
    """The workspace's suppression of the contact's address, read once per page."""
    if not customer.email:
        return None
    cached = getattr(customer, "_suppression_row", False)
    if cached is False:
        cached = suppression_by_email(workspace_id=customer.workspace_id, email=customer.email, test=customer.is_test)
        customer._suppression_row = cached
    return cached


def contact_sections(customer: Customer) -> dict:
    """Everything known about one contact, each list capped at PAGE_ROWS: a fixed handful of queries."""
    conversions = list(conversions_of_customer(customer=customer)[: PAGE_ROWS + 1])
    clicks = list(clicks_of_customer(customer=customer)[: PAGE_ROWS + 1])
    first_click = clicks_of_customer(customer=customer).order_by("created_at", "pk").first()
    sends = list(sends_of_customer(customer=customer)[: PAGE_ROWS + 1])
    broadcasts = list(broadcasts_of_customer(customer=customer)[: PAGE_ROWS + 1])
    enrollments = list(enrollments_of_customer(customer=customer)[: PAGE_ROWS + 1])
    activities = list(customer_activity(customer=customer)[: PAGE_ROWS * 2])
    more = {
        f"more_{name}": len(rows) > PAGE_ROWS
        for name, rows in (
            ("conversions", conversions),
            ("clicks", clicks),
            ("sends", sends),
            ("broadcasts", broadcasts),
            ("enrollments", enrollments),
        )
    }
    conversions, clicks, sends, enrollments, broadcasts = (
        rows[:PAGE_ROWS] for rows in (conversions, clicks, sends, enrollments, broadcasts)
    )
    by_contact = f"?customer__id__exact={customer.pk}"
    email_clicks = email_clicks_of_sends(send_ids=[send.pk for send in sends])
    broadcast_clicks = broadcast_clicks_of_recipients(recipient_ids=[r.pk for r in broadcasts])
    emails = [_send_row(s, customer, email_clicks.get(s.pk, [])) for s in sends]
    emails += [_broadcast_row(r, customer, broadcast_clicks.get(r.pk, [])) for r in broadcasts]
    emails.sort(key=lambda row: row["when"], reverse=True)
    return {
        **more,
        "first_touch": first_touch(first_click),
        "conversions": [_conversion_row(c) for c in conversions],
        "conversions_url": reverse("admin:conversions_conversionevent_changelist") + by_contact,
        "clicks": [_click_row(c) for c in clicks],
        "sends": emails,
        "sends_url": reverse("admin:campaigns_emailsend_changelist") + "?" + urlencode({"q": customer.email}),
        "enrollments": [_enrollment_row(e) for e in enrollments],
        "enrollments_url": reverse("admin:campaigns_enrollment_changelist") + by_contact,
        "timeline": timeline(customer, activities, clicks, conversions, sends, enrollments, broadcasts),
    }


def first_touch(click: Click | None) -> dict | None:
    """How the person first came: the click of their earliest conversion, its link, post, referrer and the
    UTM parameters of the link's destination."""
    if click is None:
        return None
    query = dict(parse_qsl(urlsplit(click.link.destination).query))
    return {
        "when": click.created_at,
        "link": _link(click.link),
        "post": _post(click.link),
        "referrer": click.referrer or click.referrer_domain,
        "device": _device(click),
        "utm": [(name.removeprefix("utm_"), query[name]) for name in UTM_PARAMETERS if query.get(name)],
    }


def timeline(customer: Customer, activities, clicks, conversions, sends, enrollments, broadcasts) -> list[Entry]:
    """Identity changes, clicks, conversions, enrollments (and their stops, resumes, completions), emails (of
    sequences and broadcasts) and the suppression, newest first."""
    entries = [Entry(a.created_at, "identity", _describe(a), a.get_channel_display()) for a in activities]
    entries += [
        Entry(c.created_at, "click", format_html("Clicked {} ({})", _link(c.link), _post(c.link)), _device(c))
        for c in clicks
    ]
    entries += [
        Entry(
            c.occurred_at,
            c.event,
            format_html("{}{} via {}", c.get_event_display(), _conversion_what(c), _link(c.link)),
            c.get_channel_display(),
        )
        for c in conversions
    ]
    for e in enrollments:
        campaign = _campaign(e.campaign_id, e.campaign)
        entries.append(Entry(e.enrolled_at, "enrollment", format_html("Enrolled in {}", campaign)))
        for moment, verb in ((e.resumed_at, "Resumed"), (e.stopped_at, "Stopped"), (e.completed_at, "Completed")):
            if moment is not None:
                entries.append(Entry(moment, "enrollment", format_html("{} in {}", verb, campaign)))
    for s in sends:
        email = _send_subject(s, customer)
        verb = {"sent": "Emailed", "failed": "Email failed:", "reserved": "Emailing"}.get(s.status, s.status)
        entries.append(Entry(s.sent_at, "email", format_html("{} {} ({})", verb, email, s.campaign)))
        if s.complained_at is not None:
            entries.append(Entry(s.complained_at, "email", format_html("Marked {} as spam", email)))
    for r in broadcasts:
        if r.sent_at is not None:
            verb = {"sent": "Emailed", "failed": "Email failed:", "reserved": "Emailing"}.get(r.status, r.status)
            entries.append(Entry(r.sent_at, "email", format_html("{} {}", verb, _broadcast(r.broadcast))))
        if r.complained_at is not None:
            entries.append(Entry(r.complained_at, "email", format_html("Marked {} as spam", _broadcast(r.broadcast))))
    suppression = suppression_row(customer)
    if suppression is not None and not any(a.kind == Kind.SUPPRESSED for a in activities):
        entries.append(Entry(suppression.created_at, "identity", format_html("Suppressed: {}", suppression.reason)))
    entries.sort(key=lambda entry: entry.when, reverse=True)
    return entries


def _link(link: Link) -> SafeString:
    return format_html(
        '<a href="{}" title="{}">/l/{}</a>',
        reverse("admin:clicks_link_change", args=[link.pk]),
        link.destination,
        link.key,
    )


def _post(link: Link) -> SafeString:
    return format_html('<a href="{}">{}</a>', reverse("admin:clicks_post_change", args=[link.post_id]), link.post.title)


def _campaign(campaign_id: int, name) -> SafeString:
    url = reverse("admin:campaigns_campaign_change", args=[campaign_id])
    return format_html('<a href="{}">{}</a>', url, name)


def _device(click: Click) -> str:
    parts = [click.device, click.browser, click.os]
    return " · ".join(part for part in parts if part) or "-"


def _value(event: ConversionEvent) -> str:
    return amount_text(event.value_cents, event.currency) if event.value_cents is not None else "-"


def _conversion_what(event: ConversionEvent) -> SafeString:
    value = f" {_value(event)}" if event.value_cents is not None else ""
    name = format_html(" “{}”", event.event_name) if event.event_name else ""
    return format_html("{}{}", value, name)


def _conversion_row(event: ConversionEvent) -> dict:
    return {
        "event": event.get_event_display(),
        "link": format_html('{} <span class="lf-muted lf-clip">{}</span>', _link(event.link), event.link.destination),
        "post": _post(event.link),
        "value": _value(event),
        "event_name": event.event_name or "-",
        "when": event.occurred_at,
        "channel": event.get_channel_display(),
    }


def _click_row(click: Click) -> dict:
    return {
        "when": click.created_at,
        "link": _link(click.link),
        "post": _post(click.link),
        "device": _device(click),
        "referrer": click.referrer_domain or "-",
    }


def _send_subject(send: EmailSend, customer: Customer) -> str:
    step = send.campaign_email
    if step is None:
        return f"#{send.position} (step removed)"
    return f"#{send.position} {subject_render(step.subject, name=customer.name, email=send.to_email)}"


def _send_row(send: EmailSend, customer: Customer, clicks: list[Click]) -> dict:
    return {
        # Which of the email's links they followed, and when (its signed links name the send).
        "clicked": [(click.created_at, click.link.destination) for click in clicks],
        "when": send.sent_at,
        "campaign": _campaign(send.campaign_id, send.campaign),
        "email": _send_subject(send, customer),
        "to": send.to_email,
        "status": send.get_status_display(),
        "complained_at": send.complained_at,
        "error": send.error,
    }


def _broadcast(broadcast: Broadcast) -> SafeString:
    url = reverse("admin:campaigns_broadcast_change", args=[broadcast.pk])
    return format_html('broadcast <a href="{}">{}</a>', url, broadcast)


def _broadcast_row(recipient: BroadcastRecipient, customer: Customer, clicks: list[Click]) -> dict:
    broadcast = recipient.broadcast
    return {
        # Which of the broadcast's tracked links they followed, and when (its signed links name the recipient).
        "clicked": [(click.created_at, click.link.destination) for click in clicks],
        # Not mailed yet (or skipped): when its broadcast started, which fixed them among its recipients.
        "when": recipient.sent_at or broadcast.started_at or broadcast.created_at,
        "campaign": _broadcast(broadcast),
        "email": subject_render(broadcast.subject, name=customer.name, email=recipient.to_email or customer.email),
        "to": recipient.to_email or "-",
        "status": recipient.get_status_display(),
        "complained_at": recipient.complained_at,
        "error": recipient.error,
    }


def _enrollment_row(enrollment: Enrollment) -> dict:
    campaign = enrollment.campaign
    return {
        "campaign": format_html(
            '<a href="{}?campaign__id__exact={}">{}</a>',
            reverse("admin:campaigns_enrollment_changelist"),
            campaign.pk,
            campaign,
        ),
        "state": enrollment.get_state_display(),
        "enrolled_at": enrollment.enrolled_at,
        "next_send_at": enrollment.next_send_at,
        "last_sent_at": enrollment.last_sent_at,
    }


def _other(customer: Customer | None) -> str:
    if customer is None:
        return mark_safe('<span class="lf-muted">a deleted contact</span>')
    return format_html('<a href="{}">{}</a>', reverse("admin:customers_customer_change", args=[customer.pk]), customer)


def _describe(activity: CustomerActivity) -> SafeString:
    if activity.kind == Kind.CREATED:
        suffix = format_html(" with external id “{}”", activity.external_id) if activity.external_id else ""
        return format_html("Created{}", suffix)
    if activity.kind == Kind.EMAIL_ADDED:
        return format_html("Email added: {}", activity.detail.get("email", ""))
    if activity.kind == Kind.EXTERNAL_ID_MOVED_IN:
        previous = activity.detail.get("previous_external_id")
        replaced = format_html(" (replacing “{}”)", previous) if previous else ""
        if activity.other_customer_id is None:
            return format_html("External id “{}” attached{}", activity.external_id, replaced)
        return format_html(
            "External id “{}” moved in from {}{}", activity.external_id, _other(activity.other_customer), replaced
        )
    if activity.kind == Kind.EXTERNAL_ID_MOVED_OUT:
        return format_html("External id “{}” moved out to {}", activity.external_id, _other(activity.other_customer))
    if activity.kind == Kind.SUPPRESSED:
        return format_html("Suppressed: {}", activity.detail.get("reason", ""))
    return format_html("{}", activity.get_kind_display())
