"""App config for conversions."""

from django.apps import AppConfig


class ConversionsConfig(AppConfig):
    name = "conversions"

    def ready(self) -> None:
        from webhooks.payloads import payload_builders_register

        # The webhook objects of its events, imported when first built (webhooks/payloads.py).
        payload_builders_register(
            {
                "conversion": "conversions.webhook_payloads.conversion_object",
                "customer": "conversions.webhook_payloads.customer_object",
                "external_id_move": "conversions.webhook_payloads.external_id_move_object",
                "suppression": "conversions.webhook_payloads.suppression_object",
            }
        )
