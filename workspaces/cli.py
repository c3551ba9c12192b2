"""Command-line lookups of workspaces: an unknown slug is a one-line error."""

from django.core.management.base import CommandError

from workspaces.models import Workspace
from workspaces.selectors import workspace_by_slug


def workspace_from_arg(slug: str) -> Workspace:
    workspace = workspace_by_slug(slug=slug)
    if workspace is None:
        raise CommandError(f"unknown workspace: {slug}")
    return workspace
