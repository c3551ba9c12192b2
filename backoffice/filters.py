"""List filters of the back office: by workspace and related rows, offering the user's workspaces only, by mode
(live data unless test data is asked for), and by a range of days."""

from datetime import UTC, date, datetime, time, timedelta

from django.contrib import admin, messages
from django.contrib.admin.filters import ListFilter, RelatedFieldListFilter, SimpleListFilter
from django.http import QueryDict

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


def _day(raw: str) -> date | None:
    try:
        return date.fromisoformat(raw) if len(raw) == 10 else None
    except ValueError:
        return None


class DayRangeFilter(ListFilter):
    """Rows of the UTC days `since` to `until` (YYYY-MM-DD, both included, either left open), as the dashboard and
    GET /api/v1/analytics name and read them. A day not understood is said on the page and the range is not applied,
    never a 500; the list is then as without it. `field` is the time a subclass filters on."""

    title = "date range (UTC)"
    template = "admin/backoffice/day_range_filter.html"
    field = "occurred_at"

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        raw = {name: (params.pop(name, None) or [""])[-1].strip() for name in ("since", "until")}
        self.raw = raw
        days = {name: _day(value) for name, value in raw.items()}
        problems = [f"{name} must be a date (YYYY-MM-DD)" for name in raw if raw[name] and days[name] is None]
        if not problems and days["since"] and days["until"] and days["since"] > days["until"]:
            problems.append("since is after until")
        for problem in problems:
            messages.warning(request, f"Date range not applied: {problem}.")
        self.since, self.until = (None, None) if problems else (days["since"], days["until"])
        self.used_parameters = {name: value for name, value in raw.items() if value}

    def has_output(self) -> bool:
        return True

    def expected_parameters(self) -> list[str]:
        return ["since", "until"]

    def choices(self, changelist):
        # The form's other fields: the list's other filters, search and order stay as they are (not the page).
        kept = QueryDict(changelist.get_query_string(remove=["since", "until", "p"]).lstrip("?"))
        yield {
            "since": self.raw["since"],
            "until": self.raw["until"],
            "kept": [(name, value) for name, values in kept.lists() for value in values],
            "clear": changelist.get_query_string(remove=["since", "until", "p"]),
            "selected": bool(self.since or self.until),
        }

    def queryset(self, request, queryset):
        # Half-open in UTC: the (workspace, -occurred_at) index serves it as one range.
        if self.since:
            queryset = queryset.filter(**{f"{self.field}__gte": datetime.combine(self.since, time(), UTC)})
        if self.until:
            end = datetime.combine(self.until + timedelta(days=1), time(), UTC)
            queryset = queryset.filter(**{f"{self.field}__lt": end})
        return queryset
