"""Payment providers in the back office (owners): connect Stripe or Shopify, the URL to paste and the events to
select, the signing secret pasted or rotated (never shown), the delivery log with replay, and a test event."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from backoffice.base import ServiceFormAdmin
from backoffice.display import when
from backoffice.forms import OnceForm, WorkspaceChoiceForm
from backoffice.scoping import OWNERS
from lftrack.errors import ServiceError
from payments.connections import (
    DEFAULT_OVERLAP_HOURS,
    OVERLAP_MAX_HOURS,
    connection_create,
    connection_disconnect,
    connection_secret_set,
    connection_url,
)
from payments.models import Connection, Delivery
from payments.samples import connection_test_send
from payments.services import delivery_replay
from payments.shopify_events import SHOPIFY_TOPICS
from payments.stripe_events import STRIPE_API_VERSION, STRIPE_EVENTS

LOG_ROWS = 50
SECRET_HELP = {
    Connection.Provider.STRIPE: "Stripe's endpoint signing secret (whsec_...), shown under the endpoint once you add the URL.",
    Connection.Provider.SHOPIFY: "The secret Shopify signs webhooks with: Settings → Notifications → Webhooks, or your app's client secret.",
}


class ConnectForm(OnceForm, WorkspaceChoiceForm):
    provider = forms.ChoiceField(choices=Connection.Provider.choices)
    name = forms.CharField(max_length=200, required=False, help_text="For you: which account or shop it is.")
    signing_secret = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.PasswordInput,
        help_text="Optional now: Stripe shows it only after you add the URL. Stored encrypted, never shown again.",
    )


class SecretForm(forms.Form):  # sent twice, it saves the same secret twice: no nonce needed
    signing_secret = forms.CharField(max_length=200, widget=forms.PasswordInput)
    overlap_hours = forms.IntegerField(
        min_value=0,
        max_value=OVERLAP_MAX_HOURS,
        initial=DEFAULT_OVERLAP_HOURS,
        label="Old secret verifies for (hours)",
        help_text="As long as the provider still signs with it (Stripe's roll: up to 24). 0 retires it now.",
    )


@admin.register(Connection)
class ConnectionAdmin(ServiceFormAdmin):
    view_roles = add_roles = change_roles = OWNERS
    add_form = ConnectForm
    add_title = "Connect a payment provider"
    add_submit = "Connect"
    add_intro = (
        "lftrack takes the provider's webhooks at an address of this connection's own and records each payment "
        "as a sale of the click that brought the buyer, renewals and refunds included. The next page shows the "
        "address to paste into the provider's dashboard."
    )
    changelist_title = "Payment providers"
    list_display = ["__str__", "provider", "status", "created_at"]
    list_filter = ["workspace", "provider"]
    ordering = ["-created_at", "-pk"]
    readonly_fields = ["provider", "name", "status", "setup", "buttons", "delivery_log"]
    fieldsets = [
        (None, {"fields": ["provider", "name", "status"]}),
        ("Set up", {"fields": ["setup"]}),
        ("Do", {"fields": ["buttons"]}),
        ("Delivery log", {"fields": ["delivery_log"]}),
    ]

    def get_actions(self, request):
        return {}

    def change_view(self, request, object_id, form_url="", extra_context=None):
        # Nothing on the page is edited in place: its buttons call the services (no Save, no Delete: Disconnect).
        hidden = {"show_save": False, "show_save_and_continue": False, "show_save_and_add_another": False}
        return super().change_view(request, object_id, form_url, {**hidden, **(extra_context or {})})

    @admin.display(description="status")
    def status(self, obj: Connection) -> str:
        if obj.disconnected_at:
            return f"disconnected {when(obj.disconnected_at)}"
        if not obj.secret:
            return "waiting for the signing secret: deliveries are refused until you paste it"
        if obj.previous_secret_expires_at:
            return f"connected; the previous secret verifies until {when(obj.previous_secret_expires_at)}"
        return "connected"

    @admin.display(description="")
    def setup(self, obj: Connection) -> str:
        url = connection_url(obj)
        if obj.provider == Connection.Provider.STRIPE:
            steps = format_html(
                "In Stripe: Developers → Webhooks → Add endpoint. Paste the URL, choose API version <code>{}</code>, "
                "select these events: {}. Then paste the endpoint's signing secret here (Paste a new secret).",
                STRIPE_API_VERSION,
                format_html_join(", ", "<code>{}</code>", ((e,) for e in STRIPE_EVENTS)),
            )
        else:
            steps = format_html(
                "In Shopify: Settings → Notifications → Webhooks → Create webhook, format JSON, the URL, once for "
                "each event: {}. Paste the signing secret shown there here.",
                format_html_join(", ", "<code>{}</code>", ((t,) for t in SHOPIFY_TOPICS)),
            )
        return format_html(
            '<div class="lf-copy-row"><input type="text" readonly class="lf-snippet" id="connection-url" value="{}" '
            'aria-label="Endpoint URL"><button type="button" class="button" data-copy="connection-url">Copy</button>'
            "</div><p>{}</p><p>Setup, what is read from each event and the edge cases: docs/payments.md.</p>",
            url,
            steps,
        )

    @admin.display(description="")
    def buttons(self, obj: Connection) -> str:
        if obj.disconnected_at:
            return "-"
        test = reverse("admin:payments_connection_test", args=[obj.pk])
        disconnect = reverse("admin:payments_connection_disconnect", args=[obj.pk])
        secret = reverse("admin:payments_connection_secret", args=[obj.pk])
        return format_html(
            '<button type="submit" class="button" formaction="{}" formnovalidate id="connection-test">Send a test '
            'event</button> <a class="button" href="{}" id="connection-secret">Paste a new secret</a> '
            '<button type="submit" class="button" formaction="{}" formnovalidate id="connection-disconnect">'
            "Disconnect</button>",
            test,
            secret,
            disconnect,
        )

    @admin.display(description="")
    def delivery_log(self, obj: Connection) -> str:
        deliveries = Delivery.objects.filter(connection=obj).order_by("-id")[:LOG_ROWS]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    when(d.received_at),
                    d.event_type or "-",
                    d.event_id or "-",
                    "test" if d.is_test else "live",
                    _outcome(d),
                    d.reason or "",
                    _replay_button(obj, d),
                )
                for d in deliveries
            ),
        )
        return format_html(
            '<div class="lf-scroll"><table class="lf-table" id="delivery-log"><thead><tr><th>when</th><th>event</th>'
            "<th>id</th><th>mode</th><th>outcome</th><th>why</th><th></th></tr></thead><tbody>{}</tbody></table></div>",
            rows,
        )

    def add_done(self, request, form):
        data = form.cleaned_data
        connected = connection_create(
            workspace=data["workspace"],
            provider=data["provider"],
            name=data["name"],
            signing_secret=data["signing_secret"],
        )
        self.log_addition(request, connected.connection, [{"added": {}}])
        self.message_user(request, f"Connected. Paste {connected.url} into the provider's dashboard.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:payments_connection_change", args=[connected.connection.pk]))

    def get_urls(self):
        def route(suffix: str, view, name: str):
            return path(
                f"<path:object_id>/{suffix}/", self.admin_site.admin_view(view), name=f"payments_connection_{name}"
            )

        return [
            route("test", self.test_view, "test"),
            route("secret", self.secret_view, "secret"),
            route("disconnect", self.disconnect_view, "disconnect"),
            route("replay/<int:delivery_id>", self.replay_view, "replay"),
            *super().get_urls(),
        ]

    def _connection(self, request, object_id) -> Connection:
        connection = self.get_object(request, unquote(object_id))
        if connection is None or not self.has_change_permission(request, connection):
            raise PermissionDenied
        return connection

    def _back(self, connection: Connection) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:payments_connection_change", args=[connection.pk]))

    def test_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        connection = self._connection(request, object_id)
        try:
            delivery = connection_test_send(connection=connection)
        except ServiceError as error:
            self.message_user(request, error.message, messages.ERROR)
            return self._back(connection)
        self.message_user(
            request, f"Test event {delivery.event_type}: {_outcome(delivery)}. It shows in the log.", messages.SUCCESS
        )
        return self._back(connection)

    def secret_view(self, request, object_id):
        connection = self._connection(request, object_id)
        form = SecretForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            connection_secret_set(
                connection=connection,
                signing_secret=form.cleaned_data["signing_secret"],
                overlap_hours=form.cleaned_data["overlap_hours"],
            )
            self.log_change(request, connection, [{"changed": {"fields": ["secret"]}}])
            self.message_user(request, "Signing secret saved. It is never shown again.", messages.SUCCESS)
            return self._back(connection)
        return self.render_screen(
            request,
            "admin/backoffice/form.html",
            {
                "form": form,
                "submit_label": "Save secret",
                "changelist_title": self.changelist_title,
                "intro": SECRET_HELP[Connection.Provider(connection.provider)],
            },
            title="Paste the signing secret",
        )

    def disconnect_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        connection = connection_disconnect(connection=self._connection(request, object_id))
        self.message_user(request, "Disconnected: its address answers 404 from now on.", messages.SUCCESS)
        return self._back(connection)

    def replay_view(self, request, object_id, delivery_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        connection = self._connection(request, object_id)
        delivery = Delivery.objects.filter(pk=delivery_id, connection=connection).first()
        if delivery is None:
            raise PermissionDenied
        try:
            delivery = delivery_replay(delivery=delivery)
        except ServiceError as error:
            self.message_user(request, error.message, messages.ERROR)
            return self._back(connection)
        self.message_user(request, f"Replayed {delivery.event_type}: {_outcome(delivery)}.", messages.SUCCESS)
        return self._back(connection)


def _outcome(delivery: Delivery) -> str:
    """ "sale #12", "refund #3 of sale #12", "not attributed", ..."""
    label = Delivery.Outcome(delivery.outcome).label
    if delivery.outcome == Delivery.Outcome.REFUND and delivery.refund_id:
        return f"refund #{delivery.refund_id} of sale #{delivery.conversion_id}"
    if delivery.conversion_id and delivery.outcome in (Delivery.Outcome.SALE, Delivery.Outcome.DUPLICATE):
        return f"{label}: sale #{delivery.conversion_id}"
    return label


def _replay_button(connection: Connection, delivery: Delivery) -> str:
    if not delivery.body:
        return ""
    return format_html(
        '<button type="submit" class="button" formaction="{}" formnovalidate>Replay</button>',
        reverse("admin:payments_connection_replay", args=[connection.pk, delivery.pk]),
    )
