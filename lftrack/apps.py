"""lftrack's plumbing as an app: hooks that need the app registry."""

from django.apps import AppConfig
from django.db.models.signals import pre_migrate


class LftrackConfig(AppConfig):
    name = "lftrack"
    verbose_name = "lftrack"

    def ready(self) -> None:
        from lftrack.db import lift_timeouts

        # Migrations build indexes on big tables: no statement or lock timeout for them.
        pre_migrate.connect(lambda using, **kwargs: lift_timeouts(using=using), dispatch_uid="lftrack.lift_timeouts")
