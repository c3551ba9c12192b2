"""Posts and links with their clicks, leads, sales and revenue: rolled-up totals plus the live tail (rollups/)."""

import base64
import io

import segno
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from backoffice.base import ServiceFormAdmin, WorkspaceScopedAdmin, WorkspaceScopedInline
from backoffice.forms import OnceForm, WorkspaceChoiceForm, WorkspaceModelForm
from backoffice.scoping import MEMBERS, OWNERS, scope
from campaigns.models import Campaign
from campaigns.services import campaign_link_create, campaign_post_set
from clicks.models import Link, Post
from clicks.selectors import DIMENSIONS, SAMPLE, clicks_breakdown
from lftrack.currencies import amount_text
from rollups.selectors import COUNTS, LinkNumber, links_with_numbers, money_of, posts_with_numbers


def _column(number: LinkNumber):
    def column(self, obj) -> int:
        return getattr(obj, number.annotation)

    return admin.display(description=number.heading, ordering=number.annotation)(column)


def revenue_text(revenue: list[dict]) -> str:
    """Net revenue per currency, one line each; gross and refunded beside it when something was refunded."""
    lines = [
        (
            amount_text(entry["net_cents"], entry["currency"]),
            f" (gross {amount_text(entry['gross_cents'], entry['currency'])}, refunded "
            f"{amount_text(entry['refunded_cents'], entry['currency'])})"
            if entry["refunded_cents"]
            else "",
        )
        for entry in revenue
    ]
    return format_html_join(mark_safe("<br>"), "{}{}", lines) if lines else "-"


class NumbersColumns:
    """A list column per count of the link numbers (rollups/selectors.py), and the revenue per currency, net of
    refunds, shared by the post and link lists: a page's revenue in one statement."""

    money_group = "link"  # or "post"

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)  # evaluated once: the page renders these same objects
        money = self.money_for([row.pk for row in rows])
        for row in rows:
            row.revenue_shown = money.get(row.pk, [])
        return changelist

    def money_for(self, ids: list[int]) -> dict[int, list[dict]]:
        return money_of(group=self.money_group, **{f"{self.money_group}_ids": ids})

    @admin.display(description="revenue (net)")
    def revenue(self, obj) -> str:
        shown = getattr(obj, "revenue_shown", None)
        if shown is None:  # an object page: its own statement
            shown = self.money_for([obj.pk]).get(obj.pk, [])
        return revenue_text(shown)


for _number in COUNTS:
    setattr(NumbersColumns, _number.heading, _column(_number))


NUMBERS = [*(number.heading for number in COUNTS), "revenue"]


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

    def revenue(self, obj: Link) -> str:
        """The post's links are rows of one page: their revenue in one statement, for the first of them."""
        if getattr(self, "_money", None) is None:
            self._money = money_of(group="link", post_ids=[obj.post_id])
        return revenue_text(self._money.get(obj.pk, []))

    revenue.short_description = NumbersColumns.revenue.short_description

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
    money_group = "post"
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


class LinkCreateForm(OnceForm, WorkspaceChoiceForm):
    destination = forms.URLField(
        max_length=2048, assume_scheme="https", help_text="Where visitors land; the click id is added as lf_cid."
    )
    post_title = forms.CharField(
        max_length=200,
        required=False,
        label="Post",
        help_text="The post the link is shared in: an existing title reuses that post; empty makes a new one.",
    )
    campaign = forms.ModelChoiceField(
        queryset=Campaign.objects.none(),
        required=False,
        help_text="Leads and sales of this post's links enroll their person in the campaign.",
    )

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, workspaces=workspaces, **kwargs)
        self.fields["campaign"].queryset = Campaign.objects.filter(workspace__in=workspaces).order_by("name", "pk")


@admin.register(Link)
class LinkAdmin(NumbersColumns, ServiceFormAdmin):
    """Tracked links. Owners make them here (`campaign_link_create`, as `manage.py link create`); nobody edits
    one: its key is printed in posts already."""

    view_roles = MEMBERS
    add_roles = OWNERS
    add_form = LinkCreateForm
    add_title = "Make a tracked link"
    add_submit = "Make link"
    add_intro = "Share the short link it gives in your post; each visit through it is a click."
    list_display = ["short_link", "goes_to", "post", *NUMBERS, "created_at"]
    list_filter = ["workspace"]  # posts are many: reach a post's links from its page or by search
    list_select_related = ["post"]
    search_fields = ["=key", "destination", "post__title"]
    ordering = ["-created_at", "-pk"]
    fields = ["short_url", "qr_code", "destination", "post", *NUMBERS, "clicks_from", "created_at"]
    readonly_fields = fields
    actions = []

    def get_queryset(self, request):
        return links_with_numbers(links=super().get_queryset(request))

    @admin.display(description="clicks from")
    def clicks_from(self, obj: Link) -> str:
        return breakdown_table(link_id=obj.pk)

    @admin.display(description="tracked link", ordering="key")
    def short_link(self, obj: Link) -> str:
        return f"/l/{obj.key}"  # the full short URL, to copy, is on the link's page

    @admin.display(description="destination", ordering="destination")
    def goes_to(self, obj: Link) -> str:
        """Clipped to a column's width; the whole address shows on hover and on the link's page."""
        return format_html('<span class="lf-clip" title="{0}">{0}</span>', obj.destination)

    @admin.display(description="QR code")
    def qr_code(self, obj: Link) -> str:
        """The short link as a QR code (segno), for print and slides: shown inline, and as an SVG to download."""
        svg = io.BytesIO()
        segno.make(f"{settings.PUBLIC_BASE_URL}/l/{obj.key}", error="m").save(svg, kind="svg", scale=4, xmldecl=False)
        data = svg.getvalue()
        return format_html(
            '<div class="lf-qr">{}</div><a href="data:image/svg+xml;base64,{}" download="link-{}.svg">Download SVG</a>',
            mark_safe(data.decode()),  # segno's own markup of our URL: no user input in it
            base64.b64encode(data).decode(),
            obj.key,
        )

    @admin.display(description="tracked link")
    def short_url(self, obj: Link) -> str:
        return format_html(
            '<div class="lf-copy-row"><input type="text" readonly class="lf-snippet" id="link-{0}" value="{1}/l/{2}" '
            'aria-label="Short link"><button type="button" class="button" data-copy="link-{0}">Copy</button></div>',
            obj.pk,
            settings.PUBLIC_BASE_URL,
            obj.key,
        )

    def add_done(self, request, form):
        data = form.cleaned_data
        link = campaign_link_create(
            workspace=data["workspace"],
            destination=data["destination"],
            campaign=data["campaign"],
            post_title=data["post_title"] or None,
        )
        self.log_addition(request, link, [{"added": {}}])
        self.message_user(request, f"Made {settings.PUBLIC_BASE_URL}/l/{link.key}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:clicks_link_change", args=[link.pk]))
