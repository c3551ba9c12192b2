"""`manage.py token create WORKSPACE [--name NAME] [--scope SCOPE ...] [--test]` and `manage.py token revoke WORKSPACE TOKEN_ID`."""

from lftrack.cli import JsonCommand
from workspaces.cli import workspace_from_arg
from workspaces.models import ApiToken
from workspaces.tokens import api_token_create, api_token_revoke


class Command(JsonCommand):
    help = "Create or revoke API tokens. A new token's secret is printed once and never stored."

    def add_actions(self, sub) -> None:
        create = sub.add_parser("create", help="Create a token and print its secret once.")
        create.add_argument("workspace")
        create.add_argument("--name", default="CLI token")
        create.add_argument(
            "--scope",
            action="append",
            default=[],
            choices=ApiToken.Scope.values,
            help="what the token may do (repeat it); without any, everything",
        )
        create.add_argument(
            "--test",
            action="store_true",
            help="a test token (lf_test_...): what it records is test data, kept out of numbers, mail and live webhooks",
        )
        revoke = sub.add_parser("revoke", help="Revoke a token.")
        revoke.add_argument("workspace")
        revoke.add_argument("token_id", type=int)

    def do_create(self, *, workspace: str, name: str, scope: list[str], test: bool, **_) -> dict:
        issued = api_token_create(workspace=workspace_from_arg(workspace), name=name, scopes=scope, test=test)
        return {
            "id": issued.token.pk,
            "token": issued.secret,
            "scopes": issued.token.scopes.split() or ApiToken.Scope.values,
        }

    def do_revoke(self, *, workspace: str, token_id: int, **_) -> dict:
        token = api_token_revoke(workspace=workspace_from_arg(workspace), token_id=token_id)
        return {"id": token.pk, "revoked": True}
