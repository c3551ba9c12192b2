"""List filters of the back office: by workspace and related rows, offering the user's workspaces only, and by
mode (live data unless test data is asked for)."""

from django.contrib import admin
from django.contrib.admin.filters import RelatedFieldListFilter, SimpleListFilter

from backoffice.scoping import MEMBERS, has_workspace, is_superuser, visible_workspaces, workspace_ids
from lftrack.db import as_id


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
