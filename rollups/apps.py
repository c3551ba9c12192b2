"""App config for rollups."""

from django.apps import AppConfig


class RollupsConfig(AppConfig):
    name = "rollups"
