"""Webhook endpoints in the back office (owners): create (secret shown once), change, send a test event,
rotate the secret, re-enable in one click, the delivery log, and replay of any past event."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from backoffice.base import ServiceFormAdmin, WorkspaceScopedAdmin
from backoffice.display import when
from backoffice.forms import OnceForm, WorkspaceChoiceForm, form_nonce_issue, form_nonce_use
from backoffice.scoping import OWNERS
from webhooks.events import EVENT_TYPES
from webhooks.models import Attempt, Endpoint, Event
from webhooks.services import (
    OVERLAP_MAX_HOURS,
    endpoint_create,
    endpoint_enable,
    endpoint_secret_rotate,
    endpoint_test_send,
    endpoint_update,
    event_replay,
)

EVENT_CHOICES = [(name, f"{name}: {description}") for name, (_, description) in EVENT_TYPES.items()]
LOG_ROWS = 50


class EndpointCreateForm(OnceForm, WorkspaceChoiceForm):
    url = forms.CharField(max_length=2048, help_text="https only. It must resolve to a public address.")
    event_types = forms.MultipleChoiceField(choices=EVENT_CHOICES, widget=forms.CheckboxSelectMultiple)
    description = forms.CharField(max_length=200, required=False)
    test = forms.BooleanField(required=False, label="Test mode", help_text="Receives test-mode events only.")


class RotateForm(OnceForm):
    overlap_hours = forms.IntegerField(
        min_value=0,
        max_value=OVERLAP_MAX_HOURS,
        label="Old secret signs for (hours)",
        help_text="Both secrets sign meanwhile, so your receiver can switch. 0 retires the old one now (a leaked secret).",
    )


class EndpointChangeForm(forms.ModelForm):
    event_types = forms.MultipleChoiceField(choices=EVENT_CHOICES, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = Endpoint
        fields = ["url", "description", "event_types"]


@admin.register(Endpoint)
class EndpointAdmin(ServiceFormAdmin):
    view_roles = add_roles = change_roles = delete_roles = OWNERS
    form = EndpointChangeForm
    add_form = EndpointCreateForm
    add_title = "Add a webhook endpoint"
    add_submit = "Create endpoint"
    add_intro = (
        "lftrack POSTs each event it wants, signed per Standard Webhooks. The signing secret is shown once, next."
    )
    changelist_title = "Webhook endpoints"
    list_display = ["url", "events", "status", "failures_in_row", "created_at"]
    list_filter = ["workspace", "enabled"]
    ordering = ["-created_at", "-pk"]
    readonly_fields = ["status", "test", "failures_in_row", "created_at", "buttons", "delivery_log", "recent_events"]
    fieldsets = [
        (None, {"fields": ["url", "description", "event_types", "status", "test", "failures_in_row", "created_at"]}),
        ("Do", {"fields": ["buttons"]}),
        ("Delivery log", {"fields": ["delivery_log"]}),
        ("Events (replay any of them)", {"fields": ["recent_events"]}),
    ]

    def get_actions(self, request):
        return {}

    @admin.display(description="events")
    def events(self, obj: Endpoint) -> str:
        return ", ".join(obj.event_types)

    @admin.display(description="status", ordering="enabled")
    def status(self, obj: Endpoint) -> str:
        return "enabled" if obj.enabled else f"disabled ({obj.disabled_reason or 'by hand'})"

    @admin.display(description="")
    def buttons(self, obj: Endpoint) -> str:
        """POST buttons of the change form, each to its own screen (formaction), with the form's CSRF token; the
        rotation asks first, on its own page (a reload of its answer must not rotate again)."""
        actions = [("test", "Send test event")]
        if not obj.enabled:
            actions.insert(0, ("enable", "Re-enable"))
        posts = format_html_join(
            " ",
            '<button type="submit" class="button" formaction="{}" formnovalidate id="endpoint-{}">{}</button>',
            ((reverse(f"admin:webhooks_endpoint_{name}", args=[obj.pk]), name, label) for name, label in actions),
        )
        rotate = reverse("admin:webhooks_endpoint_rotate", args=[obj.pk])
        return format_html('{} <a class="button" href="{}" id="endpoint-rotate">Rotate secret</a>', posts, rotate)

    @admin.display(description="")
    def delivery_log(self, obj: Endpoint) -> str:
        attempts = Attempt.objects.filter(endpoint=obj).select_related("delivery__event").order_by("-id")[:LOG_ROWS]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{} ms</td><td>{}</td></tr>",
            (
                (
                    when(a.started_at),
                    a.delivery.event.type,
                    a.delivery.event.public_id,
                    a.number,
                    a.status_code or a.error or "-",
                    a.duration_ms,
                    a.response_excerpt[:200],
                )
                for a in attempts
            ),
        )
        return format_html(
            '<table id="delivery-log"><thead><tr><th>when</th><th>event</th><th>id</th><th>attempt</th><th>status</th>'
            "<th>time</th><th>response</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="")
    def recent_events(self, obj: Endpoint) -> str:
        events = Event.objects.filter(workspace_id=obj.workspace_id, test=obj.test).order_by("-id")[:LOG_ROWS]
        rows = format_html_join(
            "",
            '<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><button type="submit" class="button" '
            'formaction="{}" formnovalidate>Replay</button></td></tr>',
            (
                (
                    when(e.created_at),
                    e.type,
                    e.public_id,
                    reverse("admin:webhooks_endpoint_replay", args=[obj.pk, e.pk]),
                )
                for e in events
            ),
        )
        return format_html('<table id="recent-events"><tbody>{}</tbody></table>', rows)

    def add_done(self, request, form):
        data = form.cleaned_data
        issued = endpoint_create(
            workspace=data["workspace"],
            url=data["url"],
            event_types=data["event_types"],
            description=data["description"],
            test=data["test"],
        )
        self.log_addition(request, issued.endpoint, [{"added": {}}])
        return self._secret_page(request, issued, title="Endpoint created")

    def _secret_page(self, request, issued, *, title: str, overlap=None):
        return self.render_screen(
            request,
            "admin/webhooks/endpoint/secret.html",
            {"endpoint": issued.endpoint, "secret": issued.secret, "overlap": overlap},
            title=title,
        )

    def save_model(self, request, obj, form, change) -> None:
        data = form.cleaned_data
        endpoint_update(endpoint=obj, url=data["url"], event_types=data["event_types"], description=data["description"])

    def get_urls(self):
        def route(suffix: str, view, name: str):
            return path(
                f"<path:object_id>/{suffix}/", self.admin_site.admin_view(view), name=f"webhooks_endpoint_{name}"
            )

        return [
            route("test", self.test_view, "test"),
            route("rotate", self.rotate_view, "rotate"),
            route("enable", self.enable_view, "enable"),
            route("replay/<int:event_id>", self.replay_view, "replay"),
            *super().get_urls(),
        ]

    def _endpoint(self, request, object_id) -> Endpoint:
        """The endpoint of a POST from its change page, which the user may change; 404-like otherwise."""
        endpoint = self.get_object(request, unquote(object_id))
        if endpoint is None or not self.has_change_permission(request, endpoint):
            raise PermissionDenied
        return endpoint

    def _back(self, endpoint: Endpoint) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:webhooks_endpoint_change", args=[endpoint.pk]))

    def test_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        endpoint = self._endpoint(request, object_id)
        event = endpoint_test_send(endpoint=endpoint)
        self.message_user(
            request, f"Test event {event.public_id} queued; it shows in the delivery log.", messages.SUCCESS
        )
        return self._back(endpoint)

    def rotate_view(self, request, object_id):
        """Asks, then rotates once: the answer shows the new secret, and a reload or a second click of it
        would otherwise rotate again, retiring at once the secret the receiver still verifies with."""
        endpoint = self._endpoint(request, object_id)
        if request.method == "POST":
            form = RotateForm(request.POST)
            if form.is_valid():
                if not form_nonce_use(request, form.cleaned_data["nonce"]):
                    self.message_user(
                        request, "That rotation was already done; rotate again from here if needed.", messages.WARNING
                    )
                    return self._back(endpoint)
                issued = endpoint_secret_rotate(endpoint=endpoint, overlap_hours=form.cleaned_data["overlap_hours"])
                self.log_change(request, endpoint, [{"changed": {"fields": ["secret"]}}])
                return self._secret_page(
                    request, issued, title="Secret rotated", overlap=issued.endpoint.previous_secret_expires_at
                )
        else:
            form = RotateForm(
                initial={"nonce": form_nonce_issue(request), "overlap_hours": settings.WEBHOOK_SECRET_OVERLAP_HOURS}
            )
        return self.render_screen(
            request,
            "admin/backoffice/form.html",
            {
                "form": form,
                "submit_label": "Rotate secret",
                "changelist_title": self.changelist_title,
                "intro": f"A new signing secret for {endpoint.url}, shown once on the next page.",
            },
            title="Rotate the signing secret",
        )

    def enable_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        endpoint = endpoint_enable(endpoint=self._endpoint(request, object_id))
        self.message_user(request, "Enabled again; the deliveries it missed go out now.", messages.SUCCESS)
        return self._back(endpoint)

    def replay_view(self, request, object_id, event_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        endpoint = self._endpoint(request, object_id)
        event = Event.objects.filter(pk=event_id, workspace_id=endpoint.workspace_id, test=endpoint.test).first()
        if event is None:
            raise PermissionDenied
        event_replay(event=event, endpoint=endpoint)
        self.message_user(request, f"Replaying {event.type} {event.public_id}.", messages.SUCCESS)
        return self._back(endpoint)


@admin.register(Attempt)
class AttemptAdmin(WorkspaceScopedAdmin):
    """Every endpoint's delivery log: one row per POST, newest first."""

    view_roles = OWNERS
    list_display = ["started", "endpoint", "event", "event_id", "number", "status", "duration_ms", "excerpt"]
    list_filter = ["endpoint", "ok"]
    list_select_related = ["endpoint", "delivery__event"]
    ordering = ["-id"]
    actions = ["replay"]

    def has_replay_permission(self, request) -> bool:
        return self.allowed(request, OWNERS)

    @admin.display(description="when", ordering="started_at")
    def started(self, obj: Attempt) -> str:
        return when(obj.started_at)

    @admin.display(description="event")
    def event(self, obj: Attempt) -> str:
        return obj.delivery.event.type

    @admin.display(description="id")
    def event_id(self, obj: Attempt) -> str:
        return obj.delivery.event.public_id

    @admin.display(description="status")
    def status(self, obj: Attempt) -> str:
        return str(obj.status_code) if obj.status_code else obj.error or "-"

    @admin.display(description="response")
    def excerpt(self, obj: Attempt) -> str:
        return obj.response_excerpt[:120]

    @admin.action(description="Replay the selected attempts' events", permissions=["replay"])
    def replay(self, request, queryset):
        attempts = self.action_queryset(request, queryset, OWNERS).select_related("delivery__event", "endpoint")
        pairs = {(a.delivery.event_id, a.endpoint_id): a for a in attempts}
        for attempt in pairs.values():
            event_replay(event=attempt.delivery.event, endpoint=attempt.endpoint)
        self.message_user(request, f"Replaying {len(pairs)} event(s).", messages.SUCCESS)
