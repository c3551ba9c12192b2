"""`manage.py workspace create SLUG [--name NAME] [--owner USERNAME]`, `workspace allow-origin WORKSPACE ORIGIN`."""

from lftrack.cli import JsonCommand
from workspaces.cli import workspace_from_arg
from workspaces.origins import workspace_origin_allow, workspace_origins
from workspaces.services import workspace_create


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

    def do_create(self, *, slug: str, name: str, owner: str | None, **_) -> dict:
        workspace = workspace_create(slug=slug, name=name, owner_username=owner)
        return {"id": workspace.pk, "slug": workspace.slug, "tracking_key": workspace.tracking_key}

    def do_allow_origin(self, *, workspace: str, origin: str, **_) -> dict:
        allowed = workspace_origin_allow(workspace=workspace_from_arg(workspace), origin=origin)
        return {"slug": allowed.slug, "allowed_origins": sorted(workspace_origins(allowed))}
