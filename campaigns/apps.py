"""App config for campaigns."""
from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"

    def ready(self) -> None:
        from campaigns import webhook_payloads  # noqa: F401  (registers the webhook objects of its events)
        from campaigns import checks  # noqa: F401  (registers the deploy check)
