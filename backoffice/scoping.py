"""The back office's tenant scoping: staff see and change only their workspaces, by Membership role."""

import logging
import secrets
from collections.abc import Iterable

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.filters import RelatedFieldListFilter, SimpleListFilter
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.functional import cached_property
from django.utils.timezone import localtime

from backoffice.labels import plural_label
from lftrack.db import as_id
from lftrack.errors import ServiceError
from workspaces.models import Membership, Workspace

OWNER = Membership.Role.OWNER
EDITOR = Membership.Role.EDITOR
MEMBERS = frozenset({OWNER, EDITOR})
OWNERS = frozenset({OWNER})
NOBODY: frozenset[str] = frozenset()
# The one-time nonces of the create forms shown to a session (the last ten).
FORM_NONCES = "lftrack_form_nonces"
logger = logging.getLogger("lftrack.backoffice")


def is_superuser(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.is_superuser)


def member_roles(request: HttpRequest) -> dict[int, str]:
    """`{workspace_id: role}` of the request's user, read once per request (one query)."""
    roles = getattr(request, "_lftrack_roles", None)
    if roles is None:
        user = request.user
        if user.is_active and user.is_staff:
            roles = dict(Membership.objects.filter(user_id=user.pk).values_list("workspace_id", "role"))
        else:
            roles = {}
        request._lftrack_roles = roles
    return roles


def workspace_ids(request: HttpRequest, roles: Iterable[str]) -> list[int]:
    """The workspaces where the user holds one of `roles` (superusers are not special here)."""
    roles = frozenset(roles)
    return sorted(ws for ws, role in member_roles(request).items() if role in roles)


def scope(queryset: QuerySet, request: HttpRequest, roles: Iterable[str], field: str = "workspace") -> QuerySet:
    """`queryset` cut down to the workspaces where the user holds one of `roles`; superusers keep all."""
    roles = frozenset(roles)
    if is_superuser(request):
        return queryset if roles else queryset.none()
    return queryset.filter(**{f"{field}__in": workspace_ids(request, roles)})


def visible_workspaces(request: HttpRequest, roles: Iterable[str] = MEMBERS) -> QuerySet:
    return scope(Workspace.objects.order_by("name", "pk"), request, roles, field="pk")


def has_workspace(model: type[models.Model]) -> bool:
    try:
        field = model._meta.get_field("workspace")
    except Exception:
        return False
    return field.is_relation and field.related_model is Workspace


class WorkspaceFilter(SimpleListFilter):
    """By workspace, listing only the user's own; hidden for someone with a single workspace."""

    title = "workspace"
    parameter_name = "workspace"

    def lookups(self, request, model_admin):
        roles = getattr(model_admin, "visible_roles", MEMBERS)
        return [(str(pk), name) for pk, name in visible_workspaces(request, roles).values_list("pk", "name")]

    def has_output(self) -> bool:
        # A filter without output is not applied at all: keep it when a value is asked for.
        return len(self.lookup_choices) > 1 or self.value() is not None

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        workspace_id = as_id(self.value())
        return queryset.none() if workspace_id is None else queryset.filter(workspace_id=workspace_id)


class ModeFilter(admin.SimpleListFilter):
    """Live data unless test data is asked for: test-mode records never mix into what a marketer reads."""

    title = "mode"
    parameter_name = "mode"

    def lookups(self, request, model_admin):
        return [("test", "Test data")]

    def choices(self, changelist):
        yield {
            "selected": self.value() != "test",
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Live",
        }
        yield {
            "selected": self.value() == "test",
            "query_string": changelist.get_query_string({self.parameter_name: "test"}),
            "display": "Test data",
        }

    field = "is_test"  # a subclass names the row's mode through a relation

    def queryset(self, request, queryset):
        return queryset.filter(**{self.field: self.value() == "test"})


class ScopedRelatedFilter(RelatedFieldListFilter):
    """A foreign-key filter whose choices come from the user's workspaces only (names never leak)."""

    def field_choices(self, field, request, model_admin):
        ordering = self.field_admin_ordering(field, request, model_admin)
        related = field.related_model
        if is_superuser(request):
            limit = None
        elif has_workspace(related):
            limit = {"workspace__in": workspace_ids(request, getattr(model_admin, "visible_roles", MEMBERS))}
        else:
            return []
        return field.get_choices(include_blank=False, limit_choices_to=limit, ordering=ordering)

    def has_output(self) -> bool:
        # Django skips a filter with a single choice, and with it the value asked for in the URL.
        return super().has_output() or bool(self.lookup_val or self.lookup_val_isnull)


def titled(title: str, base: type = admin.ChoicesFieldListFilter) -> type:
    """A field's list filter under a title of our own ("how they came in"), not the field's name ("source")."""

    class Titled(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.title = title

    return Titled


class WorkspaceModelForm(forms.ModelForm):
    """Every chosen related row must live in the same workspace as the row being saved."""

    def clean(self):
        data = super().clean()
        workspace = data.get("workspace") if "workspace" in self.fields else None
        workspace_id = workspace.pk if workspace else getattr(self.instance, "workspace_id", None)
        if workspace_id is None:
            return data
        for name, value in data.items():
            if (
                isinstance(value, models.Model)
                and not isinstance(value, Workspace)
                and getattr(value, "workspace_id", workspace_id) != workspace_id
            ):
                self.add_error(name, "Choose one from the same workspace.")
        return data


class _Scoped:
    """Role rules shared by model admins and inlines; `obj` is the row (or the inline's parent row)."""

    # Roles that may view, add, change, delete. Superusers may do whatever some role may.
    view_roles: frozenset[str] = MEMBERS
    add_roles: frozenset[str] = NOBODY
    change_roles: frozenset[str] = NOBODY
    delete_roles: frozenset[str] = NOBODY
    # Path from the model to its workspace id: "workspace_id", or "pk" for Workspace itself.
    workspace_id_attr = "workspace_id"
    scope_field = "workspace"

    @property
    def visible_roles(self) -> frozenset[str]:
        return self.view_roles | self.change_roles

    def allowed(self, request: HttpRequest, roles: frozenset[str], obj=None) -> bool:
        if not roles:
            return False
        if is_superuser(request):
            return True
        mine = member_roles(request)
        if obj is None:
            return any(role in roles for role in mine.values())
        return mine.get(getattr(obj, self.workspace_id_attr)) in roles

    def has_module_permission(self, request) -> bool:
        return self.allowed(request, self.visible_roles)

    def has_view_permission(self, request, obj=None) -> bool:
        return self.allowed(request, self.visible_roles, obj)

    def has_add_permission(self, request, obj=None) -> bool:
        # ModelAdmin calls it without obj; an inline passes the parent row.
        return self.allowed(request, self.add_roles, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return self.allowed(request, self.change_roles, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self.allowed(request, self.delete_roles, obj)

    def scoped(self, queryset: QuerySet, request: HttpRequest, roles: Iterable[str] | None = None) -> QuerySet:
        return scope(queryset, request, self.visible_roles if roles is None else roles, field=self.scope_field)

    def get_queryset(self, request):
        return self.scoped(super().get_queryset(request), request)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        related = db_field.related_model
        roles = self.add_roles | self.change_roles
        if related is Workspace:
            kwargs["queryset"] = visible_workspaces(request, roles)
        elif has_workspace(related):
            kwargs["queryset"] = scope(related._default_manager.all(), request, roles)
        elif "queryset" not in kwargs and not is_superuser(request):
            kwargs["queryset"] = related._default_manager.none()  # e.g. users: each admin says how
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


def form_nonce_issue(request: HttpRequest) -> str:
    """A nonce for a create form shown now; the session keeps it until the form comes back."""
    nonce = secrets.token_urlsafe(16)
    request.session[FORM_NONCES] = [*request.session.get(FORM_NONCES, [])[-9:], nonce]
    return nonce


def form_nonce_use(request: HttpRequest, nonce: str) -> bool:
    """True the first time a nonce this session was given comes back, False after: a reload of the page
    that answered the POST, or a second click. The session forgets it for reloads; a double click sends
    both POSTs before either saved the session, so Redis's SET NX settles which one acts."""
    nonces = request.session.get(FORM_NONCES, [])
    if nonce not in nonces:
        return False
    nonces.remove(nonce)
    request.session[FORM_NONCES] = nonces
    try:
        return cache.add(f"form-nonce:{nonce}", 1, timeout=24 * 3600)
    except Exception as exc:  # Redis gone: the session alone still stops a reload
        logger.warning("form nonce not claimed in the cache", extra={"error": type(exc).__name__})
        return True


class OnceForm(forms.Form):
    """A create form that acts once (its answer shows a secret, or a second one would do harm): ServiceFormAdmin
    gives it a nonce and refuses the nonce a second time."""

    nonce = forms.CharField(widget=forms.HiddenInput, max_length=64)


class WorkspaceChoiceForm(forms.Form):
    """A form for a write in one of the user's workspaces; the choice is hidden when there is only one."""

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), empty_label=None)

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = workspaces
        if len(workspaces) == 1:
            self.fields["workspace"].widget = forms.HiddenInput()
            self.fields["workspace"].initial = workspaces[0].pk


class CappedCountPaginator(Paginator):
    """Counts at most CAP rows. An exact COUNT(*) over a million contacts or enrollments would cost
    more than the page itself; past the cap the list says "more than 10,000" and pages that far."""

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        # SELECT COUNT(*) FROM (SELECT id ... LIMIT CAP + 1): no ordering, and none of the list's
        # annotations, which Django would otherwise compute for every counted row.
        return self.object_list.order_by().values("pk")[: self.CAP + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > self.CAP


class WorkspaceScopedAdmin(_Scoped, admin.ModelAdmin):
    """The base of every tenant model's admin: queryset, object lookups, FK choices, filters, actions."""

    form = WorkspaceModelForm
    paginator = CappedCountPaginator
    show_full_result_count = False  # one COUNT less per page on big tables

    # A service refusing a write (the last owner leaving, a bad slug) rolls the save back and comes
    # back as an error message on the same page, never a 500.
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ServiceError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except ServiceError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changelist_view(self, request, extra_context=None):
        # "Recipients", not Django's "Select enrollment to change"; subclasses may pass a title of their own.
        return super().changelist_view(request, {"title": plural_label(self.model._meta), **(extra_context or {})})

    def get_list_filter(self, request):
        filters = []
        for item in super().get_list_filter(request):
            if item == "workspace":
                filters.append(WorkspaceFilter)
            elif isinstance(item, str) and "__" not in item and self.model._meta.get_field(item).is_relation:
                filters.append((item, ScopedRelatedFilter))
            else:
                filters.append(item)
        return filters

    def get_list_display(self, request):
        columns = list(super().get_list_display(request))
        if "workspace" not in columns and has_workspace(self.model) and self.shows_many_workspaces(request):
            columns.append("workspace")
        return columns

    def get_list_select_related(self, request):
        related = self.list_select_related
        if related is not True and has_workspace(self.model) and self.shows_many_workspaces(request):
            related = ["workspace", *(related or [])]
        return related

    def shows_many_workspaces(self, request) -> bool:
        if is_superuser(request):
            return True
        return len(workspace_ids(request, self.visible_roles)) > 1

    def action_queryset(self, request, queryset: QuerySet, roles: Iterable[str] | None = None) -> QuerySet:
        """Rows an action may touch: selected, visible, and in a workspace where the role allows it."""
        return self.scoped(queryset, request, self.change_roles if roles is None else roles)

    def render_screen(self, request, template: str, context: dict, title: str) -> TemplateResponse:
        """An extra admin screen (get_urls entry) with the site's header, sidebar and breadcrumbs."""
        return TemplateResponse(
            request,
            template,
            {**self.admin_site.each_context(request), "opts": self.model._meta, "title": title, **context},
        )


class ServiceFormAdmin(WorkspaceScopedAdmin):
    """An add page that is a plain form handed to one service, not a ModelForm saved as it is.

    Subclasses name the form (a `WorkspaceChoiceForm`, offered the workspaces where the user may add)
    and write `add_done()`, which calls the service and answers; a refusal of the service (a
    `ServiceError`) comes back as an error on the same form. `add_initial()` may prepare the GET.
    """

    add_form: type[forms.Form]
    add_title = ""
    add_submit = ""
    add_intro = ""
    changelist_title = ""  # the breadcrumb back to the list; the model's plural name when empty

    def add_initial(self, request: HttpRequest, workspaces: QuerySet) -> dict:
        return {}

    def add_done(self, request: HttpRequest, form: forms.Form) -> HttpResponse:
        raise NotImplementedError

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        workspaces = visible_workspaces(request, self.add_roles)
        if request.method == "POST":
            form = self.add_form(request.POST, workspaces=workspaces)
            if form.is_valid():
                # The nonce is spent before the service acts: a reload of the answer (a secret shown
                # once) or a second click lands on the list instead of making a second one.
                if "nonce" in form.fields and not form_nonce_use(request, form.cleaned_data["nonce"]):
                    self.message_user(
                        request, "This form was already sent; what it made is in the list below.", messages.WARNING
                    )
                    return HttpResponseRedirect(
                        reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
                    )
                try:
                    return self.add_done(request, form)
                except ServiceError as exc:
                    form.add_error(None, exc.message)
                    if "nonce" in form.fields:  # corrected and sent again, it acts
                        form.data = form.data.copy()
                        form.data["nonce"] = form_nonce_issue(request)
        else:
            form = self.add_form(initial=self.add_initial(request, workspaces), workspaces=workspaces)
            if "nonce" in form.fields:
                form.initial["nonce"] = form_nonce_issue(request)
        return self.render_screen(
            request,
            "admin/backoffice/form.html",
            {
                "form": form,
                "submit_label": self.add_submit,
                "intro": self.add_intro,
                "changelist_title": self.changelist_title,
                **(extra_context or {}),
            },
            title=self.add_title,
        )


class WorkspaceScopedInline(_Scoped, admin.TabularInline):
    """An inline under a workspace row; read-only unless the subclass grants roles."""

    extra = 0
    show_change_link = False


class WorkspaceScopedStackedInline(_Scoped, admin.StackedInline):
    """The stacked layout of WorkspaceScopedInline, for rows with long text."""

    extra = 0


def when(value) -> str:
    """A moment as the back office writes every one (lftrack/formats/): 2026-03-02 09:00, in UTC."""
    return date_format(localtime(value), "DATETIME_FORMAT") if value else "-"
