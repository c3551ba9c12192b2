"""Posts and links with their clicks, leads, sales and revenue: rolled-up totals plus the live tail (rollups/)."""
from django.conf import settings
from django.contrib import admin
from django.db.models import OuterRef, QuerySet
from django.utils.html import format_html

from clicks.models import Click, Link, Post
from conversions.models import ConversionEvent
from lftrack.admin import MEMBERS, OWNERS, WorkspaceScopedAdmin, WorkspaceScopedInline, cents, count_of, sum_of
from rollups.models import LinkTotals
from rollups.queries import tail, total_of

LEAD, SALE = ConversionEvent.Event.LEAD, ConversionEvent.Event.SALE


def with_link_numbers(queryset: QuerySet) -> QuerySet:
    """Links with clicks, leads, sales and revenue: the rolled-up totals plus the rows above the watermarks."""
    totals = LinkTotals.objects.filter(link=OuterRef("pk"))
    clicks = tail(Click.objects.filter(link=OuterRef("pk")))
    events = tail(ConversionEvent.objects.filter(link=OuterRef("pk")))
    return queryset.annotate(
        n_clicks=total_of(totals, "clicks") + count_of(clicks, "link"),
        n_leads=total_of(totals, "leads") + count_of(events.filter(event=LEAD), "link"),
        n_sales=total_of(totals, "sales") + count_of(events.filter(event=SALE), "link"),
        revenue_cents=total_of(totals, "revenue_cents") + sum_of(events.filter(event=SALE), "link", "value_cents"),
    )


def with_post_numbers(queryset: QuerySet) -> QuerySet:
    """The same numbers summed over the post's links (totals are per link: a post's own is their sum)."""
    totals = LinkTotals.objects.filter(link__post=OuterRef("pk"))
    clicks = tail(Click.objects.filter(link__post=OuterRef("pk")))
    events = tail(ConversionEvent.objects.filter(link__post=OuterRef("pk")))
    return queryset.annotate(
        n_links=count_of(Link.objects.filter(post=OuterRef("pk")), "post"),
        n_clicks=sum_of(totals, "link__post", "clicks") + count_of(clicks, "link__post"),
        n_leads=sum_of(totals, "link__post", "leads") + count_of(events.filter(event=LEAD), "link__post"),
        n_sales=sum_of(totals, "link__post", "sales") + count_of(events.filter(event=SALE), "link__post"),
        revenue_cents=sum_of(totals, "link__post", "revenue_cents")
        + sum_of(events.filter(event=SALE), "link__post", "value_cents"),
    )


class NumbersColumns:
    """The counters shared by the post and link lists (values come from the annotations above)."""

    @admin.display(description="clicks", ordering="n_clicks")
    def clicks(self, obj) -> int:
        return obj.n_clicks

    @admin.display(description="leads", ordering="n_leads")
    def leads(self, obj) -> int:
        return obj.n_leads

    @admin.display(description="sales", ordering="n_sales")
    def sales(self, obj) -> int:
        return obj.n_sales

    @admin.display(description="revenue", ordering="revenue_cents")
    def revenue(self, obj) -> str:
        return cents(obj.revenue_cents)


class LinkInline(NumbersColumns, WorkspaceScopedInline):
    model = Link
    fields = ["short_url", "destination", "clicks", "leads", "sales", "revenue", "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def get_queryset(self, request):
        return with_link_numbers(super().get_queryset(request)).order_by("pk")

    @admin.display(description="tracked link")
    def short_url(self, obj: Link) -> str:
        return format_html('<a href="{0}/l/{1}">/l/{1}</a>', settings.PUBLIC_BASE_URL, obj.key)


@admin.register(Post)
class PostAdmin(NumbersColumns, WorkspaceScopedAdmin):
    """A post's links and what they brought in. Owners may rename it or move it to a campaign."""

    view_roles = MEMBERS
    change_roles = OWNERS
    list_display = ["title", "campaign", "links", "clicks", "leads", "sales", "revenue", "created_at"]
    list_filter = ["campaign", "workspace"]
    list_select_related = ["campaign"]
    autocomplete_fields = ["campaign"]
    search_fields = ["title"]
    ordering = ["-created_at", "-pk"]
    fields = ["title", "campaign", "links", "clicks", "leads", "sales", "revenue", "created_at"]
    readonly_fields = ["links", "clicks", "leads", "sales", "revenue", "created_at"]
    inlines = [LinkInline]
    actions = []

    def get_queryset(self, request):
        return with_post_numbers(super().get_queryset(request))

    @admin.display(description="links", ordering="n_links")
    def links(self, obj: Post) -> int:
        return obj.n_links


@admin.register(Link)
class LinkAdmin(NumbersColumns, WorkspaceScopedAdmin):
    """Tracked links; created with `manage.py link create`, read-only here."""

    view_roles = MEMBERS
    list_display = ["short_url", "destination", "post", "clicks", "leads", "sales", "revenue", "created_at"]
    list_filter = ["workspace"]  # posts are many: reach a post's links from its page or by search
    list_select_related = ["post"]
    search_fields = ["=key", "destination", "post__title"]
    ordering = ["-created_at", "-pk"]
    fields = ["short_url", "destination", "post", "clicks", "leads", "sales", "revenue", "created_at"]
    readonly_fields = fields
    actions = []

    def get_queryset(self, request):
        return with_link_numbers(super().get_queryset(request))

    @admin.display(description="tracked link", ordering="key")
    def short_url(self, obj: Link) -> str:
        return f"/l/{obj.key}"
