"""The back office's admin site: its name, the sidebar in a marketer's words and order, the dashboard as home."""

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse

from backoffice.dashboard import dashboard_page
from backoffice.labels import LABELS, SECTIONS


class BackOffice(admin.AdminSite):
    site_header = "lftrack back office"
    site_title = "lftrack"
    index_title = "Back office"
    site_url = None  # no public site to link to from the header

    def index(self, request: HttpRequest, extra_context=None) -> TemplateResponse:
        """The dashboard of one of the user's workspaces (backoffice/dashboard.py); the stock list of pages for
        someone without one."""
        return dashboard_page(self, request) or super().index(request, extra_context)

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        apps = super().get_app_list(request, app_label)
        for app in apps:
            app["name"] = SECTIONS.get(app["app_label"], app["name"])
            for entry in app["models"]:
                entry["name"] = LABELS.get(f"{app['app_label']}.{entry['object_name'].lower()}", entry["name"])
        order = list(SECTIONS)
        return sorted(apps, key=lambda app: order.index(app["app_label"]) if app["app_label"] in order else len(order))
