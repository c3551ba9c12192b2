"""`manage.py email_hooks create WORKSPACE [--signing-key PROVIDER=KEY]`: the email providers' webhook URLs."""

import argparse

from campaigns.provider_hooks import provider_hook_create, provider_hook_urls
from lftrack.cli import JsonCommand
from workspaces.cli import workspace_from_arg


def _pair(text: str) -> tuple[str, str]:
    provider, sep, key = text.partition("=")
    if not sep or not provider or not key:
        raise argparse.ArgumentTypeError("expected PROVIDER=KEY")
    return provider, key


class Command(JsonCommand):
    help = "Webhook URLs for the email provider's bounces and complaints."

    def add_actions(self, sub) -> None:
        create = sub.add_parser(
            "create", help="A new secret for the workspace's webhook URLs (the previous URLs stop working); shown once."
        )
        create.add_argument("workspace")
        create.add_argument(
            "--signing-key",
            type=_pair,
            action="append",
            default=[],
            metavar="PROVIDER=KEY",
            help="the key a provider signs its webhooks with (mailgun: its HTTP webhook signing key)",
        )

    def do_create(self, *, workspace: str, signing_key: list[tuple[str, str]], **_) -> dict:
        target = workspace_from_arg(workspace)
        _, secret = provider_hook_create(workspace=target, signing_keys=dict(signing_key))
        return {"workspace": target.slug, "urls": provider_hook_urls(workspace=target, secret=secret)}
