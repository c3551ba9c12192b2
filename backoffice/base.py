"""The base admins every tenant model's admin extends: rows, choices and actions scoped by role, service errors
answered on the page, add pages that hand a form to one service, and the inlines."""

from collections.abc import Iterable

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from backoffice.filters import ScopedRelatedFilter, WorkspaceFilter
from backoffice.forms import WorkspaceModelForm, form_nonce_issue, form_nonce_use
from backoffice.labels import plural_label
from backoffice.paginator import CappedCountPaginator
from backoffice.scoping import (
    MEMBERS,
    NOBODY,
    has_workspace,
    is_superuser,
    member_roles,
    scope,
    visible_workspaces,
    workspace_ids,
)
from lftrack.errors import ServiceError
from workspaces.models import Workspace


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
