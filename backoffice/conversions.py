"""Conversions in the back office: a read-only list of leads and sales with their contact, link and post."""
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from backoffice.scoping import MEMBERS, WorkspaceScopedAdmin, cents
from conversions.models import ConversionEvent


@admin.register(ConversionEvent)
class ConversionEventAdmin(WorkspaceScopedAdmin):
    """Stored once, never edited: owners and editors browse."""

    view_roles = MEMBERS
    list_display = ["occurred_at", "event", "value", "event_name", "contact", "link_key", "post", "channel"]
    list_display_links = ["occurred_at"]
    list_filter = ["event", "channel", "workspace"]
    list_select_related = ["customer", "link__post", "click"]
    search_fields = ["customer__email", "customer__external_id", "event_name", "=click__click_id"]
    ordering = ["-occurred_at", "-pk"]
    fields = ["event", "value", "event_name", "contact", "click", "link_key", "post", "occurred_at", "channel", "meta"]
    readonly_fields = fields
    actions = []

    @admin.display(description="value", ordering="value_cents")
    def value(self, obj: ConversionEvent) -> str:
        return cents(obj.value_cents) if obj.value_cents is not None else "-"

    @admin.display(description="contact", ordering="customer__email")
    def contact(self, obj: ConversionEvent) -> str:
        if obj.customer is None:
            return "-"
        return format_html('<a href="{}">{}</a>', reverse("admin:customers_customer_change", args=[obj.customer_id]), obj.customer)

    @admin.display(description="link")
    def link_key(self, obj: ConversionEvent) -> str:
        return format_html('<a href="{}">/l/{}</a>', reverse("admin:clicks_link_change", args=[obj.link_id]), obj.link.key)

    @admin.display(description="post")
    def post(self, obj: ConversionEvent) -> str:
        return format_html('<a href="{}">{}</a>', reverse("admin:clicks_post_change", args=[obj.link.post_id]), obj.link.post)
