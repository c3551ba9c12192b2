"""`check --deploy`: webhooks allowed to private networks outside DEBUG is worth a warning (SSRF)."""

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def check_private_networks(app_configs, **kwargs) -> list[checks.Warning]:
    if settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS and not settings.DEBUG:
        return [
            checks.Warning(
                "WEBHOOKS_ALLOW_PRIVATE_NETWORKS is on: any workspace owner can make lftrack POST to addresses of your "
                "own network (SSRF). Turn it off unless every owner is trusted.",
                id="lftrack.W001",
            )
        ]
    return []
