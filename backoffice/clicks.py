"""Posts and links with their clicks, leads, sales and revenue: rolled-up totals plus the live tail (rollups/)."""
from django import forms
from django.conf import settings
from django.contrib import admin
from django.db.models import OuterRef, QuerySet
from django.utils.html import format_html

from backoffice.scoping import (
    MEMBERS,
    OWNERS,
    WorkspaceModelForm,
    WorkspaceScopedAdmin,
    WorkspaceScopedInline,
    cents,
    count_of,
    scope,
    sum_of,
)
from campaigns.models import Campaign
from campaigns.services import campaign_post_set
from clicks.models import Click, Link, Post
from conversions.models import ConversionEvent
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


class PostForm(WorkspaceModelForm):
    """The post's title, and its campaign (a CampaignPost row, written by campaign_post_set)."""

    campaign = forms.ModelChoiceField(queryset=Campaign.objects.none(), required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        link = getattr(self.instance, "campaign_post", None)  # selected with the post: no query
        if link is not None:
            self.initial.setdefault("campaign", link.campaign_id)


@admin.register(Post)
class PostAdmin(NumbersColumns, WorkspaceScopedAdmin):
    """A post's links and what they brought in. Owners may rename it or move it to a campaign."""

    view_roles = MEMBERS
    change_roles = OWNERS
    form = PostForm
    list_display = ["title", "campaign", "links", "clicks", "leads", "sales", "revenue", "created_at"]
    list_filter = [("campaign_post__campaign", admin.RelatedOnlyFieldListFilter), "workspace"]
    search_fields = ["title"]
    ordering = ["-created_at", "-pk"]
    fields = ["title", "campaign", "links", "clicks", "leads", "sales", "revenue", "created_at"]
    readonly_fields = ["links", "clicks", "leads", "sales", "revenue", "created_at"]
    inlines = [LinkInline]
    actions = []

    def get_queryset(self, request):
        # Joined here, not only in the list: the change page's form reads the post's campaign too. The
        # changelist then skips list_select_related, so the workspace column's join is here as well.
        queryset = super().get_queryset(request).select_related("workspace", "campaign_post__campaign")
        return with_post_numbers(queryset)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        if "campaign" in form.base_fields:  # absent from a read-only page
            campaigns = scope(Campaign.objects.order_by("name", "pk"), request, self.change_roles)
            form.base_fields["campaign"].queryset = campaigns
        return form

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if "campaign" in form.changed_data:
            campaign_post_set(post=obj, campaign=form.cleaned_data["campaign"])

    @admin.display(description="campaign", ordering="campaign_post__campaign__name")
    def campaign(self, obj: Post) -> str:
        link = getattr(obj, "campaign_post", None)
        return str(link.campaign) if link is not None else "-"

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
