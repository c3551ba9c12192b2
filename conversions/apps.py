"""App config for conversions."""
from django.apps import AppConfig


class ConversionsConfig(AppConfig):
    name = "conversions"
