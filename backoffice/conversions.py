"""Conversions in the back office: a read-only list of leads and sales with their contact, link and post; test-mode
data only when asked for."""

from django.conf import settings
from django.contrib import admin
from django.db.models import OuterRef
from django.urls import reverse
from django.utils.html import format_html

from backoffice.base import WorkspaceScopedAdmin
from backoffice.exports import Column, CsvExportMixin
from backoffice.filters import DayRangeFilter, ModeFilter
from backoffice.scoping import MEMBERS
from conversions.models import ConversionEvent
from conversions.selectors import refunded_of
from lftrack.currencies import MINOR_UNITS, amount_text


def _decimal(minor: int | None, currency: str) -> str:
    """An amount for a spreadsheet: in major units, no thousands separator (49000 USD -> 490.00)."""
    if minor is None:
        return ""
    digits = MINOR_UNITS.get(currency, 2)
    units, fraction = divmod(minor, 10**digits)
    return f"{units}.{fraction:0{digits}d}" if digits else str(units)


@admin.register(ConversionEvent)
class ConversionEventAdmin(CsvExportMixin, WorkspaceScopedAdmin):
    """Stored once, never edited: owners and editors browse."""

    view_roles = MEMBERS
    list_display = ["occurred_at", "event", "value", "refunded", "event_name", "contact", "link_key", "post", "channel"]
    list_display_links = ["occurred_at"]
    list_filter = [ModeFilter, DayRangeFilter, "event", "channel", "workspace"]
    list_select_related = ["customer", "link__post", "click"]
    search_fields = ["customer__email", "customer__external_id", "event_name", "=click__click_id"]
    ordering = ["-occurred_at", "-pk"]
    fields = [
        "event",
        "value",
        "refunded",
        "event_name",
        "contact",
        "click",
        "link_key",
        "post",
        "occurred_at",
        "channel",
        "invoice_id",
        "is_test",
        "meta",
    ]
    readonly_fields = fields
    actions = []
    export_name = "conversions"
    export_columns = [
        Column("id", lambda e: e.pk),
        Column("when (UTC)", lambda e: e.occurred_at),
        Column("event", lambda e: e.event),
        Column("value", lambda e: _decimal(e.value_cents, e.currency)),
        Column("currency", lambda e: e.currency if e.value_cents is not None else ""),
        Column("event name", lambda e: e.event_name),
        Column("invoice id", lambda e: e.invoice_id),
        Column("contact email", lambda e: e.customer.email if e.customer else ""),
        Column("contact external_id", lambda e: e.customer.external_id if e.customer else ""),
        Column("link", lambda e: f"{settings.PUBLIC_BASE_URL}/l/{e.link.key}"),
        Column("destination", lambda e: e.link.destination),
        Column("post", lambda e: e.link.post.title),
        Column("via", lambda e: e.channel),
        Column("click id", lambda e: e.click.click_id),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(refunded_cents=refunded_of(OuterRef("pk")))

    @admin.display(description="value", ordering="value_cents")
    def value(self, obj: ConversionEvent) -> str:
        return amount_text(obj.value_cents, obj.currency) if obj.value_cents is not None else "-"

    @admin.display(description="refunded")
    def refunded(self, obj: ConversionEvent) -> str:
        return amount_text(obj.refunded_cents, obj.currency) if obj.refunded_cents else "-"

    @admin.display(description="contact", ordering="customer__email")
    def contact(self, obj: ConversionEvent) -> str:
        if obj.customer is None:
            return "-"
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:customers_customer_change", args=[obj.customer_id]), obj.customer
        )

    @admin.display(description="link")
    def link_key(self, obj: ConversionEvent) -> str:
        return format_html(
            '<a href="{}">/l/{}</a>', reverse("admin:clicks_link_change", args=[obj.link_id]), obj.link.key
        )

    @admin.display(description="post")
    def post(self, obj: ConversionEvent) -> str:
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:clicks_post_change", args=[obj.link.post_id]), obj.link.post
        )
