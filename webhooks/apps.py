"""App config for webhooks."""

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        from webhooks import checks  # noqa: F401  (registers the deploy check)
