"""App config for workspaces."""

from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
