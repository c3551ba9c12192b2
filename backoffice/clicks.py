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
from clicks.links import CHANGEABLE, link_archive, link_delete, link_key_check, link_update, url_check
from clicks.models import UTM_FIELDS, Link, Post
from clicks.selectors import DIMENSIONS, SAMPLE, clicks_breakdown
from lftrack.currencies import amount_text
from lftrack.errors import Unprocessable
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


class PageRevenue:
    """A list's revenue per currency: the page's rows' in one statement (`revenue_of`, kept on each row as
    `revenue_shown`), an object page's in its own. The post, link and contact lists share it."""

    def revenue_of(self, ids: list[int]) -> dict[int, list[dict]]:
        raise NotImplementedError

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)  # evaluated once: the page renders these same objects
        revenue = self.revenue_of([row.pk for row in rows])
        for row in rows:
            row.revenue_shown = revenue.get(row.pk, [])
        return changelist

    def shown_revenue(self, obj) -> list[dict]:
        shown = getattr(obj, "revenue_shown", None)
        return shown if shown is not None else self.revenue_of([obj.pk]).get(obj.pk, [])


class NumbersColumns(PageRevenue):
    """A list column per count of the link numbers (rollups/selectors.py), and the revenue per currency, net of
    refunds, shared by the post and link lists."""

    money_group = "link"  # or "post"

    def revenue_of(self, ids: list[int]) -> dict[int, list[dict]]:
        return money_of(group=self.money_group, **{f"{self.money_group}_ids": ids})

    @admin.display(description="revenue (net)")
    def revenue(self, obj) -> str:
        return revenue_text(self.shown_revenue(obj))


for _number in COUNTS:
    setattr(NumbersColumns, _number.heading, _column(_number))


NUMBERS = [*(number.heading for number in COUNTS), "revenue"]


def _value(value) -> str:
    if value is None or value == "" or value == []:
        return "(none)"
    return ", ".join(value) if isinstance(value, list) else str(value)


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
        """A deleted or archived link stays among its post's links (its numbers are the post's), marked."""
        state = " (deleted)" if obj.deleted_at else " (archived)" if obj.archived_at else ""
        return format_html('<a href="{0}/l/{1}">/l/{1}</a>{2}', settings.PUBLIC_BASE_URL, obj.key, state)


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
    key = forms.CharField(
        max_length=64,
        required=False,
        help_text="The link is /l/<key>: letters, digits, - and _, case-sensitive. Empty: 8 random characters.",
    )
    tag_names = forms.CharField(max_length=1100, required=False, label="Tags", help_text="Comma-separated.")

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, workspaces=workspaces, **kwargs)
        self.fields["campaign"].queryset = Campaign.objects.filter(workspace__in=workspaces).order_by("name", "pk")


class LinkChangeForm(WorkspaceModelForm):
    """A link's changeable fields (clicks/links.py, CHANGEABLE), its tags as names; saved by `link_update`."""

    destination = forms.URLField(
        max_length=2048, assume_scheme="https", help_text="Where visitors land; a change applies to the next click."
    )
    fallback_url = forms.URLField(max_length=2048, assume_scheme="https", required=False)

    tag_names = forms.CharField(
        max_length=1100, required=False, label="Tags", help_text="Comma-separated; a new name makes a new tag."
    )

    class Meta:
        model = Link
        fields = ["destination", "key", *UTM_FIELDS, "expires_at", "fallback_url"]
        help_texts = {
            "key": "The link is /l/<key>: letters, digits, - and _, case-sensitive. A printed link with the old key "
            "stops working.",
            "expires_at": "From then on visitors go to the fallback URL (or a 404) and no click is recorded.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial.setdefault("tag_names", ", ".join(sorted(t.name for t in self.instance.tags.all())))

    def clean(self):
        data = super().clean()
        try:  # the service's rules, as errors on the form rather than after it
            if data.get("key"):
                link_key_check(data["key"])
            for field in ("destination", "fallback_url"):
                if data.get(field):
                    url_check(data[field], field=field)
        except Unprocessable as exc:
            raise forms.ValidationError(exc.message) from None
        data["tags"] = [name.strip() for name in data.get("tag_names", "").split(",") if name.strip()]
        return data


class ArchivedFilter(admin.SimpleListFilter):
    """Archived links are out of the list unless asked for."""

    title = "archived"
    parameter_name = "archived"

    def lookups(self, request, model_admin):
        return [("yes", "Archived"), ("all", "All")]

    def queryset(self, request, queryset):
        if self.value() == "all":
            return queryset
        return queryset.filter(archived_at__isnull=self.value() != "yes")


@admin.register(Link)
class LinkAdmin(NumbersColumns, ServiceFormAdmin):
    """Tracked links. Owners make them here (`campaign_link_create`, as `manage.py link create`); owners and editors
    change them (`link_update`: the history on the link's page), archive and delete them (soft: the numbers stay)."""

    view_roles = MEMBERS
    add_roles = OWNERS
    change_roles = MEMBERS
    add_form = LinkCreateForm
    add_title = "Make a tracked link"
    add_submit = "Make link"
    add_intro = "Share the short link it gives in your post; each visit through it is a click."
    form = LinkChangeForm
    list_display = ["short_link", "goes_to", "post", *NUMBERS, "created_at"]  # fits 1366 px: tags are a filter
    list_filter = [ArchivedFilter, ("tags", admin.RelatedOnlyFieldListFilter), "workspace"]
    list_select_related = ["post"]
    search_fields = ["=key", "destination", "post__title"]
    ordering = ["-created_at", "-pk"]
    readonly_fields = ["short_url", "qr_code", "post", *NUMBERS, "clicks_from", "history", "created_at"]
    fieldsets = [
        (None, {"fields": ["short_url", "qr_code", "post", *NUMBERS]}),
        ("Where it goes", {"fields": ["destination", "key", "tag_names", "expires_at", "fallback_url"]}),
        ("UTM", {"fields": list(UTM_FIELDS)}),
        (None, {"fields": ["clicks_from", "history", "created_at"]}),
    ]
    actions = ["archive_links", "unarchive_links", "delete_links"]

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a link is never deleted for real: delete_links marks it
        return actions

    def save_model(self, request, obj, form, change):
        changes = {field: form.cleaned_data[field] for field in CHANGEABLE if field in form.changed_data}
        if "tag_names" in form.changed_data:
            changes["tags"] = form.cleaned_data["tags"]
        link_update(link=obj, changes=changes, user=request.user)

    def save_related(self, request, form, formsets, change):
        pass  # the tags are saved by link_update, with the rest of the change and its history

    @admin.action(description="Archive selected links (they keep redirecting)")
    def archive_links(self, request, queryset):
        links = list(self.action_queryset(request, queryset))
        for link in links:
            link_archive(link=link, user=request.user)
        self.message_user(request, f"Archived {len(links)} link(s).", messages.SUCCESS)

    @admin.action(description="Unarchive selected links")
    def unarchive_links(self, request, queryset):
        links = list(self.action_queryset(request, queryset))
        for link in links:
            link_archive(link=link, archived=False, user=request.user)
        self.message_user(request, f"Unarchived {len(links)} link(s).", messages.SUCCESS)

    @admin.action(description="Delete selected links (they stop redirecting; their numbers stay)")
    def delete_links(self, request, queryset):
        links = list(self.action_queryset(request, queryset))
        for link in links:
            link_delete(link=link, user=request.user)
        self.message_user(request, f"Deleted {len(links)} link(s).", messages.SUCCESS)

    @admin.display(description="history")
    def history(self, obj: Link) -> str:
        """Every change of the link, newest first (the latest 100): when, who (a person or an API token), what."""
        changes = obj.changes.select_related("user", "token").order_by("-changed_at", "-pk")[:100]
        rows = [
            (
                f"{change.changed_at:%Y-%m-%d %H:%M:%S} UTC",
                change.user.get_username() if change.user else f"API token {change.token}" if change.token else "-",
                format_html_join(
                    mark_safe("<br>"),
                    "<b>{}</b>: {} → {}",
                    ((f, _value(change.before.get(f)), _value(change.after.get(f))) for f in change.after),
                ),
            )
            for change in changes
        ]
        if not rows:
            return "No changes yet."
        return format_html(
            '<table class="lf-history"><tr><th>When</th><th>Who</th><th>What</th></tr>{}</table>',
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    def get_queryset(self, request):
        queryset = super().get_queryset(request).filter(deleted_at__isnull=True)
        return links_with_numbers(links=queryset)

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
            key=data["key"] or None,
            tags=[name.strip() for name in data["tag_names"].split(",") if name.strip()],
        )
        self.log_addition(request, link, [{"added": {}}])
        self.message_user(request, f"Made {settings.PUBLIC_BASE_URL}/l/{link.key}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:clicks_link_change", args=[link.pk]))
