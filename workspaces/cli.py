"""Command-line lookups of workspaces: an unknown slug is a one-line error."""
from django.core.management.base import CommandError

from workspaces.models import Workspace


def workspace_from_arg(slug: str) -> Workspace:
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise CommandError(f"unknown workspace: {slug}")
    return workspace
