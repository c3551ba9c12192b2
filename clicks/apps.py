"""App config for clicks."""

from django.apps import AppConfig


class ClicksConfig(AppConfig):
    name = "clicks"

    def ready(self) -> None:
        from clicks.geo import city_reader_load
        from webhooks.payloads import payload_builders_register

        city_reader_load()

        # The webhook objects of its events, imported when first built (webhooks/payloads.py).
        payload_builders_register(
            {
                "click": "clicks.webhook_payloads.click_object",
            }
        )
