"""Reads of workspaces that the API, the commands and the back office share."""

from workspaces.models import Workspace


def workspace_by_slug(*, slug: str) -> Workspace | None:
    return Workspace.objects.filter(slug=slug).first()
