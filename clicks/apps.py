"""App config for clicks."""
from django.apps import AppConfig


class ClicksConfig(AppConfig):
    name = "clicks"
