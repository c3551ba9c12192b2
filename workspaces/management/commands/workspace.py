"""`manage.py workspace create SLUG [--name NAME] [--owner USERNAME]`."""
from lftrack.cli import JsonCommand
from workspaces.services import workspace_create


class Command(JsonCommand):
    help = "Manage workspaces."

    def add_actions(self, sub) -> None:
        create = sub.add_parser("create", help="Create a workspace.")
        create.add_argument("slug")
        create.add_argument("--name", default="")
        create.add_argument("--owner", default=None, help="existing username; becomes owner and staff")

    def do_create(self, *, slug: str, name: str, owner: str | None, **_) -> dict:
        workspace = workspace_create(slug=slug, name=name, owner_username=owner)
        return {"id": workspace.pk, "slug": workspace.slug, "tracking_key": workspace.tracking_key}
