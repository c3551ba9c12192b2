"""The back office's tenant scoping: staff see and change only their workspaces, by Membership role."""

from collections.abc import Iterable

from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from workspaces.models import Membership, Workspace

OWNER = Membership.Role.OWNER
EDITOR = Membership.Role.EDITOR
MEMBERS = frozenset({OWNER, EDITOR})
OWNERS = frozenset({OWNER})
NOBODY: frozenset[str] = frozenset()


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
