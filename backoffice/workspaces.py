"""Settings, members and API tokens in the back office; owners only, every write through a service."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.core.validators import URLValidator
from django.db import transaction
from django.http import HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html

from backoffice.base import ServiceFormAdmin, WorkspaceScopedAdmin
from backoffice.display import when
from backoffice.forms import OnceForm, WorkspaceChoiceForm
from backoffice.scoping import NOBODY, OWNERS, is_superuser, visible_workspaces
from conversions.testdata import test_data_of, workspace_test_data_delete
from lftrack.currencies import MINOR_UNITS
from lftrack.db import as_id
from lftrack.errors import ServiceError
from workspaces.invitations import invitation_cancel, invitation_create
from workspaces.models import RETENTION_MAX_DAYS, ApiToken, Invitation, Membership, Workspace
from workspaces.origins import allowed_origins_parse
from workspaces.services import (
    email_layout_clean,
    membership_remove,
    membership_set,
    workspace_email_layout_set,
    workspace_retention_set,
    workspace_settings_update,
)
from workspaces.tokens import api_token_create, api_token_revoke


def pixel_snippet(workspace: Workspace) -> str:
    return f'<script src="{settings.PUBLIC_BASE_URL}/lf.js" data-key="{workspace.tracking_key}" defer></script>'


def connect_site(workspace: Workspace, *, settings_url: str | None = None) -> dict:
    return {"workspace": workspace, "snippet": pixel_snippet(workspace), "settings_url": settings_url}


# ---------------------------------------------------------------------------------------------- Settings


class SettingsForm(forms.ModelForm):
    currency = forms.ChoiceField(
        choices=[(code, code) for code in sorted(MINOR_UNITS)],
        required=False,
        help_text="The currency of a sale that names none. Sales already recorded keep theirs.",
    )
    # Optional in the form (a form without it keeps the workspace's colour); the service checks #rrggbb.
    email_brand_color = forms.CharField(
        required=False,
        max_length=7,
        label="brand colour",
        help_text="#rrggbb: the top border and the links of HTML emails.",
        widget=forms.TextInput(attrs={"type": "color"}),
    )

    link_fallback_url = forms.URLField(
        max_length=2048,
        assume_scheme="https",
        validators=[URLValidator(schemes=["http", "https"])],
        required=False,
        label="Fallback page",
        help_text="Where a deleted link, or an expired one without a fallback of its own, sends visitors; empty: a "
        "404 page.",
    )

    class Meta:
        model = Workspace
        fields = [
            "name",
            "allowed_origins",
            "currency",
            "email_logo_url",
            "email_brand_color",
            "postal_address",
            "link_fallback_url",
            "retention_days",
        ]
        labels = {"email_logo_url": "logo URL", "retention_days": "Keep clicks and conversions (days)"}
        help_texts = {
            "retention_days": "Older ones are deleted; every number stays (the daily totals keep them). Empty: keep "
            "forever. Their click ids then answer “unknown click_id”.",
            "allowed_origins": "Sites allowed to send leads with the pixel, one per line, e.g. https://shop.example.com",
            "email_logo_url": "An https address of your logo, shown 40 px high at the top of HTML emails.",
            "postal_address": "Printed in every email's footer, as CAN-SPAM requires.",
        }
        widgets = {
            "postal_address": forms.Textarea(attrs={"rows": 3, "cols": 40}),
        }

    def clean(self):
        data = super().clean()
        data["email_brand_color"] = data.get("email_brand_color") or self.instance.email_brand_color
        try:  # the service's rules, checked before anything is saved (save_model applies them)
            email_layout_clean(
                logo_url=data.get("email_logo_url") or "",
                brand_color=data.get("email_brand_color") or "",
                postal_address=data.get("postal_address") or "",
            )
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None
        return data

    def clean_retention_days(self) -> int | None:
        days = self.cleaned_data["retention_days"]
        if days is not None and not 1 <= days <= RETENTION_MAX_DAYS:
            raise forms.ValidationError(f"Between 1 and {RETENTION_MAX_DAYS} days, or empty to keep forever.")
        return days

    def clean_allowed_origins(self) -> str:
        try:
            return "\n".join(allowed_origins_parse(self.cleaned_data["allowed_origins"]))
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None


@admin.register(Workspace)
class WorkspaceAdmin(WorkspaceScopedAdmin):
    """A workspace's Settings page: name, Connect your site (key, snippet, origins, tokens)."""

    view_roles = OWNERS
    change_roles = OWNERS
    workspace_id_attr = "pk"
    scope_field = "pk"
    form = SettingsForm
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    readonly_fields = [
        "slug",
        "tracking_key",
        "snippet",
        "manage_tokens",
        "members",
        "daily_send_limit",
        "created_at",
        "delete_test_data",
    ]
    fieldsets = [
        (None, {"fields": ["name", "slug", "created_at"]}),
        ("Connect your site", {"fields": ["tracking_key", "snippet", "allowed_origins", "manage_tokens"]}),
        ("Money", {"fields": ["currency", "delete_test_data"]}),
        ("Links", {"fields": ["link_fallback_url"]}),
        ("Privacy", {"fields": ["retention_days"]}),
        ("Team and sending", {"fields": ["members", "daily_send_limit"]}),
        ("Email layout", {"fields": ["email_logo_url", "email_brand_color", "postal_address"]}),
    ]

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # workspaces are created by an operator (`manage.py workspace create`)

    def get_actions(self, request):
        return {}

    @admin.display(description="pixel snippet")
    def snippet(self, obj: Workspace) -> str:
        return format_html(
            '<div class="lf-copy-row"><textarea readonly rows="2" class="lf-snippet" id="pixel-snippet-{}">{}</textarea>'
            '<button type="button" class="button" data-copy="pixel-snippet-{}">Copy</button></div>',
            obj.pk,
            pixel_snippet(obj),
            obj.pk,
        )

    @admin.display(description="API tokens")
    def manage_tokens(self, obj: Workspace) -> str:
        url = reverse("admin:workspaces_apitoken_changelist") + f"?workspace={obj.pk}"
        return format_html('<a href="{}" class="button" id="manage-tokens">Manage tokens</a>', url)

    @admin.display(description="test data")
    def delete_test_data(self, obj: Workspace) -> str:
        url = reverse("admin:workspaces_workspace_delete_test_data", args=[obj.pk])
        return format_html(
            '<a href="{}" class="button" id="delete-test-data">Delete test data</a><p class="help">What test tokens '
            "(lf_test_…) recorded: never counted, never emailed; see it under Conversions, Contacts and Recipients, "
            "mode “Test data”.</p>",
            url,
        )

    def get_urls(self):
        view = self.admin_site.admin_view(self.delete_test_data_view)
        return [
            path("<path:object_id>/delete-test-data/", view, name="workspaces_workspace_delete_test_data"),
            *super().get_urls(),
        ]

    def delete_test_data_view(self, request, object_id):
        """Owners: a confirmation, then `workspace_test_data_delete` (one click, one POST)."""
        workspace = self.get_object(request, unquote(object_id))
        if workspace is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, workspace):
            raise PermissionDenied
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            counts = workspace_test_data_delete(workspace=workspace)
            self.message_user(request, f"Deleted {_test_data_summary(counts)}.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:workspaces_workspace_change", args=[workspace.pk]))
        counts = {name: rows.count() for name, rows in test_data_of(workspace_id=workspace.pk)}
        return self.render_screen(
            request,
            "admin/workspaces/workspace/delete_test_data.html",
            {"workspace": workspace, "summary": _test_data_summary(counts)},
            title="Delete test data",
        )

    @admin.display(description="members")
    def members(self, obj: Workspace) -> str:
        url = reverse("admin:workspaces_membership_changelist") + f"?workspace={obj.pk}"
        return format_html('<a href="{}">Manage members</a>', url)

    def save_model(self, request, obj, form, change) -> None:
        workspace_settings_update(
            workspace=obj,
            name=form.cleaned_data["name"],
            allowed_origins=form.cleaned_data["allowed_origins"],
            currency=form.cleaned_data["currency"] or None,
            link_fallback_url=form.cleaned_data["link_fallback_url"],
        )
        workspace_email_layout_set(
            workspace=obj,
            logo_url=form.cleaned_data["email_logo_url"],
            brand_color=form.cleaned_data["email_brand_color"],
            postal_address=form.cleaned_data["postal_address"],
        )
        if "retention_days" in form.changed_data:
            workspace_retention_set(workspace=obj, days=form.cleaned_data["retention_days"])

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {"title": "Settings", **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra_context)


def _test_data_summary(counts: dict[str, int]) -> str:
    """ "1 test conversion(s), 0 test refund(s), ...": what "Delete test data" deletes or deleted, by kind."""
    words = {
        "conversions": "conversion(s)",
        "refunds": "refund(s)",
        "sends": "send(s)",
        "enrollments": "enrollment(s)",
        "suppressions": "suppression(s)",
        "customers": "contact(s)",
        "webhook events": "webhook event(s)",
    }
    return ", ".join(f"{counts[name]} test {word}" for name, word in words.items())


# ---------------------------------------------------------------------------------------------- Members


@admin.register(Membership)
class MembershipAdmin(WorkspaceScopedAdmin):
    view_roles = add_roles = change_roles = delete_roles = OWNERS
    list_display = ["username", "email", "role", "created_at"]
    list_filter = ["role", "workspace"]
    list_select_related = ["user"]
    search_fields = ["user__username", "user__email"]
    ordering = ["workspace", "user__username"]

    def get_actions(self, request):
        return {}  # removal goes one by one through membership_remove, which keeps an owner

    @admin.display(description="user", ordering="user__username")
    def username(self, obj: Membership) -> str:
        return obj.user.get_username()

    @admin.display(description="email", ordering="user__email")
    def email(self, obj: Membership) -> str:
        return obj.user.email

    fields = ["workspace", "user", "role"]
    readonly_fields = ["workspace", "user"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # nobody is added without saying yes: owners invite (InvitationAdmin)

    def changelist_view(self, request, extra_context=None):
        invite = reverse("admin:workspaces_invitation_add")
        return super().changelist_view(request, {"title": "Members", "invite_url": invite, **(extra_context or {})})

    def save_model(self, request, obj, form, change) -> None:
        saved = membership_set(workspace=obj.workspace, user=obj.user, role=obj.role)
        obj.pk, obj.user, obj.created_at = saved.pk, saved.user, saved.created_at

    def delete_model(self, request, obj) -> None:
        membership_remove(membership=obj)


class InvitationForm(OnceForm, WorkspaceChoiceForm):
    email = forms.EmailField(max_length=254)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.EDITOR)


@admin.register(Invitation)
class InvitationAdmin(ServiceFormAdmin):
    """Invite by email: the person joins only by accepting the link. The answer is the same whether or not
    the address has an account here; pending invitations are listed and can be cancelled."""

    view_roles = add_roles = OWNERS
    list_display = ["email", "role", "status", "invited_by", "created_at"]
    list_filter = ["workspace"]
    list_select_related = ["invited_by"]
    search_fields = ["email"]
    ordering = ["-created_at", "-pk"]
    fields = ["email", "role", "invited_by", "created_at", "accepted_at", "cancelled_at"]
    readonly_fields = fields
    actions = ["cancel_invitations"]
    add_form = InvitationForm
    add_title = "Invite someone"
    add_submit = "Send the invitation"
    add_intro = "They get an email with a link valid for a week; they join when they accept it."
    changelist_title = "Invitations"

    def add_done(self, request, form):
        data = form.cleaned_data
        invitation_create(workspace=data["workspace"], email=data["email"], role=data["role"], invited_by=request.user)
        self.message_user(request, f"Invitation sent to {data['email']}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:workspaces_invitation_changelist"))

    @admin.display(description="status")
    def status(self, obj: Invitation) -> str:
        if obj.accepted_at:
            return "accepted"
        return "cancelled" if obj.cancelled_at else "pending"

    def has_cancel_permission(self, request) -> bool:
        return self.allowed(request, OWNERS)

    @admin.action(description="Cancel selected invitations", permissions=["cancel"])
    def cancel_invitations(self, request, queryset):
        pending = self.action_queryset(request, queryset, OWNERS).filter(
            accepted_at__isnull=True, cancelled_at__isnull=True
        )
        for invitation in pending:
            invitation_cancel(invitation=invitation)
        self.message_user(request, f"Cancelled {len(pending)} invitation(s).", messages.SUCCESS)


# ---------------------------------------------------------------------------------------------- Tokens


class TokenStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


class TokenCreateForm(OnceForm):
    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), empty_label=None)
    name = forms.CharField(max_length=100, help_text="What will use it, e.g. “Checkout server” or “Zapier”.")
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="What it may do. None ticked: everything, now and as the API grows.",
    )
    test = forms.BooleanField(
        required=False,
        label="Test mode",
        help_text="An lf_test_ token for trying the API: what it records is test data, left out of every number, "
        "never emailed, never sent to live webhooks, and deleted with “Delete test data”.",
    )

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = workspaces
        if len(workspaces) == 1:
            self.fields["workspace"].widget = forms.HiddenInput()


@admin.register(ApiToken)
class ApiTokenAdmin(ServiceFormAdmin):
    """Manage tokens: create (secret shown once), list, revoke with confirmation. Never edited, never deleted."""

    view_roles = add_roles = OWNERS
    add_form = TokenCreateForm
    add_title = "Create token"
    add_submit = "Create token"
    add_intro = "The token is shown once, on the next page. Store it in your server's secrets."
    changelist_title = "Manage tokens"
    change_roles = delete_roles = NOBODY
    revoke_roles = OWNERS
    list_display = ["name", "prefix_shown", "scopes_shown", "mode", "created", "last_used", "status", "created_by"]
    list_display_links = ["name"]
    list_filter = [TokenStatusFilter, "is_test", "workspace"]
    list_select_related = ["created_by"]
    search_fields = ["name", "prefix"]
    ordering = ["-created_at", "-pk"]
    fields = [
        "workspace",
        "name",
        "prefix_shown",
        "scopes_shown",
        "mode",
        "status",
        "created_at",
        "last_used_at",
        "revoked_at",
        "created_by",
    ]
    readonly_fields = fields
    actions = ["revoke_tokens"]

    def has_revoke_permission(self, request, obj=None) -> bool:
        return self.allowed(request, self.revoke_roles, obj)

    @admin.display(description="token", ordering="prefix")
    def prefix_shown(self, obj: ApiToken) -> str:
        return obj.shown

    @admin.display(description="may")
    def scopes_shown(self, obj: ApiToken) -> str:
        return ", ".join(obj.scopes.split()) if obj.scopes else "everything"

    @admin.display(description="mode", ordering="is_test")
    def mode(self, obj: ApiToken) -> str:
        return "test" if obj.is_test else "live"

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: ApiToken):
        return obj.created_at

    @admin.display(description="last used", ordering="last_used_at", empty_value="never")
    def last_used(self, obj: ApiToken):
        return obj.last_used_at

    @admin.display(description="status", ordering="revoked_at")
    def status(self, obj: ApiToken) -> str:
        return "Active" if obj.revoked_at is None else f"Revoked {when(obj.revoked_at)}"

    def get_urls(self):
        revoke = path(
            "<path:object_id>/revoke/", self.admin_site.admin_view(self.revoke_view), name="workspaces_apitoken_revoke"
        )
        return [revoke, *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        workspaces = visible_workspaces(request, OWNERS)
        chosen = as_id(request.GET.get("workspace"))
        if chosen is not None:
            workspaces = workspaces.filter(pk=chosen)
        workspaces = list(workspaces[:20])
        sites = [
            connect_site(ws, settings_url=reverse("admin:workspaces_workspace_change", args=[ws.pk]))
            for ws in workspaces
        ]
        extra_context = {
            "title": "Manage tokens",
            "connect_sites": sites,
            "show_workspace_name": len(sites) > 1 or is_superuser(request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        can_revoke = obj is not None and obj.revoked_at is None and self.has_revoke_permission(request, obj)
        return super().change_view(request, object_id, form_url, {"can_revoke": can_revoke, **(extra_context or {})})

    def add_initial(self, request, workspaces):
        return {"workspace": as_id(request.GET.get("workspace")) or (workspaces[0].pk if workspaces else None)}

    def add_done(self, request, form):
        """Create the token; the response to the POST is the one page that ever shows its secret (a reload of
        it or a second click lands on the list: the form's nonce, ServiceFormAdmin)."""
        issued = api_token_create(
            workspace=form.cleaned_data["workspace"],
            name=form.cleaned_data["name"],
            created_by=request.user,
            scopes=form.cleaned_data["scopes"],
            test=form.cleaned_data["test"],
        )
        self.log_addition(request, issued.token, [{"added": {}}])
        return self.render_screen(
            request,
            "admin/workspaces/apitoken/created.html",
            {"token": issued.token, "secret": issued.secret, "base_url": settings.PUBLIC_BASE_URL},
            title="Token created",
        )

    def revoke_view(self, request, object_id):
        token = self.get_object(request, unquote(object_id))
        if token is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_revoke_permission(request, token):
            raise PermissionDenied
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            api_token_revoke(workspace=token.workspace, token_id=token.pk)
            self.log_change(request, token, [{"changed": {"fields": ["revoked_at"]}}])
            self.message_user(request, f"Revoked “{token.name}” ({token.shown}).", messages.SUCCESS)
            return HttpResponseRedirect(
                reverse("admin:workspaces_apitoken_changelist") + f"?workspace={token.workspace_id}"
            )
        return self.render_screen(
            request, "admin/workspaces/apitoken/revoke_confirm.html", {"tokens": [token]}, title="Revoke token"
        )

    @admin.action(description="Revoke selected tokens", permissions=["revoke"])
    def revoke_tokens(self, request, queryset):
        tokens = list(
            self.action_queryset(request, queryset, self.revoke_roles)
            .filter(revoked_at__isnull=True)
            .select_related("workspace")
        )
        if request.POST.get("confirm") != "yes":
            return self.render_screen(
                request,
                "admin/workspaces/apitoken/revoke_confirm.html",
                {"tokens": tokens, "action": "revoke_tokens", "action_checkbox_name": ACTION_CHECKBOX_NAME},
                title="Revoke tokens",
            )
        with transaction.atomic():
            for token in tokens:
                api_token_revoke(workspace=token.workspace, token_id=token.pk)
                self.log_change(request, token, [{"changed": {"fields": ["revoked_at"]}}])
        self.message_user(request, f"Revoked {len(tokens)} token(s).", messages.SUCCESS)
        return None
