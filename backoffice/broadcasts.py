"""Segments (built with a live count of the contacts they hold) and broadcasts (written, sent, followed) in the back office."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from backoffice.base import WorkspaceScopedAdmin
from backoffice.display import when
from backoffice.email_preview import preview_view, send_test_view
from backoffice.scoping import MEMBERS, OWNERS, scope
from campaigns.broadcasts import (
    broadcast_cancel,
    broadcast_pause,
    broadcast_progress,
    broadcast_resume,
    broadcast_save,
    broadcast_schedule,
)
from campaigns.models import Broadcast, Campaign, Enrollment, Segment
from campaigns.segments import segment_count, segment_filters_clean, segment_save
from clicks.models import Post
from conversions.step_numbers import broadcast_numbers
from customers.models import Customer
from customers.tags import tags_parse
from lftrack.currencies import amount_text
from lftrack.errors import ServiceError
from workspaces.models import Workspace

CONVERTED = [("", "either"), ("yes", "has converted (a lead or a sale)"), ("no", "has not converted")]


class SegmentForm(forms.Form):
    """The filter as fields; `filters()` is what segment_filters_clean checks and the segment stores."""

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), empty_label=None)
    name = forms.CharField(max_length=200)
    tags = forms.CharField(required=False, help_text="Comma-separated: contacts with any of these tags.")
    sources = forms.MultipleChoiceField(
        required=False,
        choices=Customer.Channel.choices,
        widget=forms.CheckboxSelectMultiple,
        label="how they came in",
    )
    campaign = forms.ModelChoiceField(queryset=Campaign.objects.none(), required=False, help_text="Enrolled in it.")
    enrollment_states = forms.MultipleChoiceField(
        required=False,
        choices=Enrollment.State.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="Their enrollment in that campaign is in one of these states.",
    )
    converted = forms.ChoiceField(required=False, choices=CONVERTED)
    first_touch_post = forms.ModelChoiceField(
        queryset=Post.objects.none(), required=False, help_text="The post of the click of their earliest conversion."
    )
    first_touch_link = forms.IntegerField(
        required=False, min_value=1, label="first-touch link id", help_text="The link of that click, by its id."
    )
    created_from = forms.DateField(required=False, help_text="YYYY-MM-DD (UTC).")
    created_to = forms.DateField(required=False, help_text="YYYY-MM-DD, that whole day included.")

    def __init__(self, *args, request, roles, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = scope(Workspace.objects.order_by("name"), request, roles, field="pk")
        self.fields["campaign"].queryset = scope(Campaign.objects.order_by("name"), request, roles)
        self.fields["first_touch_post"].queryset = scope(Post.objects.order_by("title"), request, roles)

    def clean_tags(self) -> list[str]:
        try:
            return tags_parse(self.cleaned_data["tags"])
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None

    def filters(self) -> dict:
        data = self.cleaned_data
        return {
            "tags": data.get("tags") or [],
            "sources": data.get("sources") or [],
            "campaign_id": data["campaign"].pk if data.get("campaign") else None,
            "enrollment_states": data.get("enrollment_states") or [],
            "converted": {"yes": True, "no": False}.get(data.get("converted") or ""),
            "first_touch_post_id": data["first_touch_post"].pk if data.get("first_touch_post") else None,
            "first_touch_link_id": data.get("first_touch_link"),
            "created_from": data["created_from"].isoformat() if data.get("created_from") else None,
            "created_to": data["created_to"].isoformat() if data.get("created_to") else None,
        }


def segment_initial(segment: Segment) -> dict:
    filters = segment.filters
    return {
        "workspace": segment.workspace_id,
        "name": segment.name,
        "tags": ", ".join(filters.get("tags", [])),
        "sources": filters.get("sources", []),
        "campaign": filters.get("campaign_id"),
        "enrollment_states": filters.get("enrollment_states", []),
        "converted": {True: "yes", False: "no"}.get(filters.get("converted"), ""),
        "first_touch_post": filters.get("first_touch_post_id"),
        "first_touch_link": filters.get("first_touch_link_id"),
        "created_from": filters.get("created_from"),
        "created_to": filters.get("created_to"),
    }


@admin.register(Segment)
class SegmentAdmin(WorkspaceScopedAdmin):
    """Segments are written on one form (with the live count beside it) and saved through segment_save."""

    view_roles = MEMBERS
    add_roles = change_roles = OWNERS
    list_display = ["name", "filter_text", "updated_at"]
    search_fields = ["name"]
    ordering = ["name", "pk"]

    @admin.display(description="filter")
    def filter_text(self, obj: Segment) -> str:
        return ", ".join(f"{name}: {value}" for name, value in obj.filters.items()) or "every contact with an email"

    def get_urls(self):
        edit = self.admin_site.admin_view(self.edit_view)
        return [
            path("add/", edit, name="campaigns_segment_add"),
            path("<path:object_id>/change/", edit, name="campaigns_segment_change"),
            path("count/", self.admin_site.admin_view(self.count_view), name="campaigns_segment_count"),
            *super().get_urls(),
        ]

    def edit_view(self, request, object_id=None):
        segment = None
        if object_id is not None:
            segment = self.get_object(request, unquote(object_id))
            if segment is None:
                return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        roles = self.change_roles
        if not (self.allowed(request, roles, segment) if segment else self.allowed(request, roles)):
            if segment is not None and self.allowed(request, self.view_roles, segment):
                roles = self.view_roles  # members read the filter and its count
            else:
                raise PermissionDenied
        initial = segment_initial(segment) if segment else {}
        form = SegmentForm(request.POST or None, initial=initial, request=request, roles=roles)
        if segment is not None:
            form.fields["workspace"].disabled = True
        if request.method == "POST" and roles == self.change_roles and form.is_valid():
            try:
                saved = segment_save(
                    workspace=segment.workspace if segment else form.cleaned_data["workspace"],
                    name=form.cleaned_data["name"],
                    filters={k: v for k, v in form.filters().items() if v not in (None, [], "")},
                    segment=segment,
                )
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                self.message_user(request, f"Saved segment “{saved}”.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:campaigns_segment_changelist"))
        count = None
        if segment is not None:
            count = segment_count(workspace_id=segment.workspace_id, filters=segment.filters)
        return self.render_screen(
            request,
            "admin/campaigns/segment/edit.html",
            {
                "form": form,
                "count": count,
                "count_url": reverse("admin:campaigns_segment_count"),
                "submit_label": "Save segment" if roles == self.change_roles else "",
            },
            title=str(segment) if segment else "Add segment",
        )

    def count_view(self, request):
        """The live count: how many contacts the filter on the form holds now (the page asks as it changes)."""
        form = SegmentForm(request.GET, request=request, roles=self.visible_roles)
        form.fields["name"].required = False
        if not form.is_valid():
            first = next(iter(form.errors.values()))[0]
            return JsonResponse({"error": first}, status=422)
        workspace = form.cleaned_data["workspace"]
        filters = {k: v for k, v in form.filters().items() if v not in (None, [], "")}
        try:
            clean = segment_filters_clean(workspace=workspace, filters=filters)
        except ServiceError as exc:
            return JsonResponse({"error": exc.message}, status=422)
        return JsonResponse({"count": segment_count(workspace_id=workspace.pk, filters=clean)})


class BroadcastForm(forms.ModelForm):
    """A broadcast is written as a step is: Markdown (an HTML email) or plain text."""

    send_at = forms.DateTimeField(
        required=False,
        label="schedule at",
        help_text="UTC, YYYY-MM-DD HH:MM. Empty: it stays a draft until “Send now”.",
    )

    class Meta:
        model = Broadcast
        fields = ["workspace", "segment", "name", "subject", "markdown", "body"]
        widgets = {
            "markdown": forms.Textarea(attrs={"rows": 12, "cols": 80, "class": "lf-markdown"}),
            "body": forms.Textarea(attrs={"rows": 4, "cols": 60}),
        }
        labels = {"markdown": "HTML email (Markdown)", "body": "plain text"}
        help_texts = {
            "markdown": "As a sequence step: {{ name }} and {{ email }} are filled per contact; sanitized on save; "
            "every link is tracked and credited to this broadcast.",
            "body": "Only for a plain-text email; for an HTML email it is made from the Markdown on save.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("body", "markdown"):  # absent when the broadcast has started (read-only)
            if name in self.fields:
                self.fields[name].required = False


@admin.register(Broadcast)
class BroadcastAdmin(WorkspaceScopedAdmin):
    """Broadcasts: owners write and send them; their progress and numbers are on the list and the page."""

    view_roles = MEMBERS
    add_roles = change_roles = OWNERS
    form = BroadcastForm
    list_display = ["name", "segment", "status", "scheduled_at", "progress", "created_at"]
    list_filter = ["status", "workspace"]
    list_select_related = ["segment"]
    search_fields = ["name", "subject"]
    ordering = ["-created_at", "-pk"]
    actions = ["send_now", "pause_broadcasts", "resume_broadcasts", "cancel_broadcasts"]
    done_fields = ["status", "scheduled_at", "started_at", "finished_at", "progress", "numbers", "preview"]

    def get_fields(self, request, obj=None):
        if obj is not None and obj.status not in (Broadcast.Status.DRAFT, Broadcast.Status.SCHEDULED):
            return ["workspace", "segment", "name", "subject", "markdown", "body", *self.done_fields]
        fields = ["workspace", "segment", "name", "subject", "markdown", "body", "send_at"]
        return fields if obj is None else [*fields, "progress", "preview"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        if obj.status in (Broadcast.Status.DRAFT, Broadcast.Status.SCHEDULED):
            return ["workspace", "progress", "preview"]
        return ["workspace", "segment", "name", "subject", "markdown", "body", *self.done_fields]

    def get_urls(self):
        def view(function):
            return self.admin_site.admin_view(lambda request, **kwargs: function(self, request, **kwargs))

        return [
            path("<path:object_id>/preview/", view(preview_view), name="campaigns_broadcast_preview"),
            path("<path:object_id>/test/", view(send_test_view), name="campaigns_broadcast_test_send"),
            *super().get_urls(),
        ]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        if "segment" in form.base_fields:
            form.base_fields["segment"].queryset = scope(Segment.objects.order_by("name"), request, self.change_roles)
        return form

    def save_model(self, request, obj, form, change) -> None:
        data = form.cleaned_data
        try:
            saved = broadcast_save(
                workspace=obj.workspace,
                segment=data["segment"],
                name=data["name"],
                subject=data["subject"],
                body=data.get("body") or "",
                markdown=data.get("markdown") or "",
                broadcast=obj if change else None,
            )
            if data.get("send_at"):
                saved = broadcast_schedule(broadcast=saved, at=data["send_at"])
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None
        obj.pk, obj.created_at, obj.status = saved.pk, saved.created_at, saved.status

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except forms.ValidationError as exc:  # the service refused what the form let through
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    @admin.display(description="progress")
    def progress(self, obj: Broadcast) -> str:
        if obj.status in (Broadcast.Status.DRAFT, Broadcast.Status.SCHEDULED):
            return "not started" if obj.scheduled_at is None else f"starts {when(obj.scheduled_at)}"
        done = broadcast_progress(broadcast_ids=[obj.pk])[obj.pk]
        return format_html(
            '<span class="lf-progress">{} sent / {} total, {} failed, {} skipped, {} to go</span>',
            done["sent"],
            obj.total,
            done["failed"],
            done["skipped"],
            done["waiting"],
        )

    @admin.display(description="preview")
    def preview(self, obj: Broadcast) -> str:
        url = reverse("admin:campaigns_broadcast_preview", args=[obj.pk])
        return format_html('<a href="{}" class="button lf-preview-link">Preview and test</a>', url)

    @admin.display(description="numbers")
    def numbers(self, obj: Broadcast) -> str:
        sent = broadcast_progress(broadcast_ids=[obj.pk])[obj.pk]["sent"]
        row = broadcast_numbers(broadcasts=[obj], sent={obj.pk: sent})[obj.pk]
        net = ", ".join(amount_text(money["net_cents"], money["currency"]) for money in row["revenue"]) or "-"
        return format_html(
            "{} unique clicks ({}% of sent), {} leads, {} sales, net revenue {}",
            row["clicks"],
            row["click_rate"],
            row["leads"],
            row["sales"],
            net,
        )

    def _each(self, request, queryset, service, done: str) -> None:
        chosen = list(self.action_queryset(request, queryset).order_by("pk"))
        changed = sum(1 for broadcast in chosen if service(broadcast=broadcast))
        self.message_user(request, f"{done} {changed} broadcast(s).", messages.SUCCESS)

    @admin.action(description="Send selected broadcasts now", permissions=["change"])
    def send_now(self, request, queryset) -> None:
        def now(*, broadcast):
            try:
                return broadcast_schedule(broadcast=broadcast, at=timezone.now())
            except ServiceError:
                return None

        self._each(request, queryset, now, "The sender starts on its next pass")

    @admin.action(description="Pause selected broadcasts", permissions=["change"])
    def pause_broadcasts(self, request, queryset) -> None:
        self._each(request, queryset, broadcast_pause, "Paused")

    @admin.action(description="Resume selected broadcasts", permissions=["change"])
    def resume_broadcasts(self, request, queryset) -> None:
        self._each(request, queryset, broadcast_resume, "Resumed")

    @admin.action(description="Cancel selected broadcasts", permissions=["change"])
    def cancel_broadcasts(self, request, queryset) -> None:
        self._each(request, queryset, broadcast_cancel, "Cancelled")
