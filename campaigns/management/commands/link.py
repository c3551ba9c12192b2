"""`manage.py link create WORKSPACE DESTINATION_URL [--post TITLE] [--campaign SLUG]` (here, not in clicks: it may
put the post in a campaign)."""

from campaigns.cli import campaign_from_arg
from campaigns.services import campaign_link_create
from lftrack.cli import JsonCommand
from workspaces.cli import workspace_from_arg


class Command(JsonCommand):
    help = "Create tracked links."

    def add_actions(self, sub) -> None:
        create = sub.add_parser("create", help="Create a tracked link.")
        create.add_argument("workspace")
        create.add_argument("destination")
        create.add_argument("--post", default=None, help="post title; created when the workspace has none")
        create.add_argument("--campaign", default=None, help="campaign slug the post belongs to")

    def do_create(self, *, workspace: str, destination: str, post: str | None, campaign: str | None, **_) -> dict:
        ws = workspace_from_arg(workspace)
        campaign_obj = campaign_from_arg(ws, campaign) if campaign else None
        link = campaign_link_create(workspace=ws, destination=destination, post_title=post, campaign=campaign_obj)
        return {"id": link.pk, "key": link.key, "path": f"/l/{link.key}", "post_id": link.post_id}
