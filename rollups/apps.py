"""App config for rollups."""

from django.apps import AppConfig


class RollupsConfig(AppConfig):
    name = "rollups"

    def ready(self) -> None:
        from lftrack.metrics import scrape_collector_add
        from rollups.metrics import TablesCollector

        scrape_collector_add(TablesCollector())
