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
        from campaigns import checks  # noqa: F401  (registers the deploy check)
