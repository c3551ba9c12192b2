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

        from customers.erasure import erasure_parts_register

        # Its part of a person, erased and exported with them (customers/erasure.py).
        erasure_parts_register(
            {"conversions": (20, "conversions.erasure.person_erase", "conversions.erasure.person_export")}
        )
