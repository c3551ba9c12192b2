"""Posts and links with their clicks, leads, sales and revenue: rolled-up totals plus the live tail (rollups/)."""
from django import forms
from django.conf import settings
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from backoffice.scoping import (
    MEMBERS,
    OWNERS,
    WorkspaceModelForm,
    WorkspaceScopedAdmin,
    WorkspaceScopedInline,
    cents,
    scope,
)
from campaigns.models import Campaign
from campaigns.services import campaign_post_set
from clicks.models import Link, Post
from clicks.selectors import DIMENSIONS, SAMPLE, clicks_breakdown
from rollups.selectors import LINK_NUMBERS, LinkNumber, links_with_numbers, posts_with_numbers


def _column(number: LinkNumber):
    def column(self, obj) -> int | str:
        value = getattr(obj, number.annotation)
        return cents(value) if number.money else value

    return admin.display(description=number.heading, ordering=number.annotation)(column)


# A list column per link number (rollups/selectors.py), shared by the post and link lists.
NumbersColumns = type("NumbersColumns", (), {number.heading: _column(number) for number in LINK_NUMBERS})


NUMBERS = [number.heading for number in LINK_NUMBERS]


def breakdown_table(**link_or_post) -> str:
    """Where the latest clicks came from: the top devices, browsers, OSes and referrers, side by side."""
    found = clicks_breakdown(**link_or_post)
    if not any(found.values()):
        return "No clicks yet."
    columns = [
        format_html_join("", "<li>{} <b>{}</b></li>", ((value or "(none)", count) for value, count in found[column]))
        for column, _ in DIMENSIONS
    ]
    return format_html(
        '<table class="lf-breakdown"><tr>{}</tr><tr>{}</tr></table><p class="help">The latest {} clicks of each link,'
        " bots included.</p>",
        format_html_join("", "<th>{}</th>", ((heading,) for _, heading in DIMENSIONS)),
        format_html_join("", "<td><ul>{}</ul></td>", ((items,) for items in columns)),
        f"{SAMPLE:,}",
    )


class LinkInline(NumbersColumns, WorkspaceScopedInline):
    model = Link
    fields = ["short_url", "destination", *NUMBERS, "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def get_queryset(self, request):
        return links_with_numbers(links=super().get_queryset(request)).order_by("pk")

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
    list_display = ["title", "campaign", "links", *NUMBERS, "created_at"]
    list_filter = [("campaign_post__campaign", admin.RelatedOnlyFieldListFilter), "workspace"]
    search_fields = ["title"]
    ordering = ["-created_at", "-pk"]
    fields = ["title", "campaign", "links", *NUMBERS, "clicks_from", "created_at"]
    readonly_fields = ["links", *NUMBERS, "clicks_from", "created_at"]
    inlines = [LinkInline]
    actions = []

    def get_queryset(self, request):
        # Joined here, not only in the list: the change page's form reads the post's campaign too. The
        # changelist then skips list_select_related, so the workspace column's join is here as well.
        queryset = super().get_queryset(request).select_related("workspace", "campaign_post__campaign")
        return posts_with_numbers(posts=queryset)

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

    @admin.display(description="clicks from")
    def clicks_from(self, obj: Post) -> str:
        return breakdown_table(post_id=obj.pk)


@admin.register(Link)
class LinkAdmin(NumbersColumns, WorkspaceScopedAdmin):
    """Tracked links; created with `manage.py link create`, read-only here."""

    view_roles = MEMBERS
    list_display = ["short_url", "destination", "post", *NUMBERS, "created_at"]
    list_filter = ["workspace"]  # posts are many: reach a post's links from its page or by search
    list_select_related = ["post"]
    search_fields = ["=key", "destination", "post__title"]
    ordering = ["-created_at", "-pk"]
    fields = ["short_url", "destination", "post", *NUMBERS, "clicks_from", "created_at"]
    readonly_fields = fields
    actions = []

    def get_queryset(self, request):
        return links_with_numbers(links=super().get_queryset(request))

    @admin.display(description="clicks from")
    def clicks_from(self, obj: Link) -> str:
        return breakdown_table(link_id=obj.pk)

    @admin.display(description="tracked link", ordering="key")
    def short_url(self, obj: Link) -> str:
        return f"/l/{obj.key}"
