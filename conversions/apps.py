"""App config for conversions."""
from django.apps import AppConfig


class ConversionsConfig(AppConfig):
    name = "conversions"

    def ready(self) -> None:
        from conversions import webhook_payloads  # noqa: F401  (registers the webhook objects of its events)
