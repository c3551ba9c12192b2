"""App config for campaigns."""

from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"

    def ready(self) -> None:
        from webhooks.payloads import payload_builders_register

        # The webhook objects of its events, imported when first built (webhooks/payloads.py).
        payload_builders_register(
            {
                "enrollment": "campaigns.webhook_payloads.enrollment_object",
                "campaign": "campaigns.webhook_payloads.campaign_object",
            }
        )
        from customers.erasure import erasure_parts_register

        # Its part of a person, erased and exported with them (customers/erasure.py).
        erasure_parts_register({"campaigns": (30, "campaigns.erasure.person_erase", "campaigns.erasure.person_export")})
        from campaigns import checks  # noqa: F401  (registers the deploy check)
