"""App config for clicks."""
from django.apps import AppConfig


class ClicksConfig(AppConfig):
    name = "clicks"

    def ready(self) -> None:
        from clicks import webhook_payloads  # noqa: F401  (registers the webhook objects of its events)
