"""`manage.py workspace create SLUG [--name NAME] [--owner USERNAME]`, `workspace allow-origin WORKSPACE ORIGIN`,
`workspace retention WORKSPACE DAYS|forever`."""

from django.core.management.base import CommandError

from lftrack.cli import JsonCommand
from workspaces.cli import workspace_from_arg
from workspaces.origins import workspace_origin_allow, workspace_origins
from workspaces.services import workspace_create, workspace_retention_set


class Command(JsonCommand):
    help = "Manage workspaces."

    def add_actions(self, sub) -> None:
        create = sub.add_parser("create", help="Create a workspace.")
        create.add_argument("slug")
        create.add_argument("--name", default="")
        create.add_argument("--owner", default=None, help="existing username; becomes owner and staff")
        allow = sub.add_parser("allow-origin", help="Let the pixel record leads from pages on ORIGIN.")
        allow.add_argument("workspace")
        allow.add_argument("origin", help="scheme://host[:port], as browsers send it in Origin")
        keep = sub.add_parser("retention", help="Keep clicks and conversions DAYS days (or forever); numbers stay.")
        keep.add_argument("workspace")
        keep.add_argument("days", help="a number of days, or `forever`")

    def do_create(self, *, slug: str, name: str, owner: str | None, **_) -> dict:
        workspace = workspace_create(slug=slug, name=name, owner_username=owner)
        return {"id": workspace.pk, "slug": workspace.slug, "tracking_key": workspace.tracking_key}

    def do_allow_origin(self, *, workspace: str, origin: str, **_) -> dict:
        allowed = workspace_origin_allow(workspace=workspace_from_arg(workspace), origin=origin)
        return {"slug": allowed.slug, "allowed_origins": sorted(workspace_origins(allowed))}

    def do_retention(self, *, workspace: str, days: str, **_) -> dict:
        if days != "forever" and not days.isdigit():
            raise CommandError("days must be a number of days or `forever`")
        kept = workspace_retention_set(
            workspace=workspace_from_arg(workspace), days=None if days == "forever" else int(days)
        )
        return {"slug": kept.slug, "retention_days": kept.retention_days}
