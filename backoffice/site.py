"""The back office's admin site: its name, the sidebar in a marketer's words and order, the dashboard as home."""
from django.contrib import admin
from django.db.models.options import Options
from django.http import HttpRequest

# What people call each page, where the model's own name is a developer's (`manage.py` and the API keep those).
LABELS = {
    "customers.customer": "Contacts",
    "conversions.conversionevent": "Conversions",
    "clicks.link": "Links",
    "clicks.post": "Posts",
    "campaigns.campaign": "Campaigns",
    "campaigns.enrollment": "Recipients",
    "campaigns.emailsend": "Emails sent",
    "campaigns.suppression": "Do-not-email list",
    "workspaces.workspace": "Settings",
    "workspaces.membership": "Members",
    "workspaces.invitation": "Invitations",
    "workspaces.apitoken": "API tokens",
}
# The sidebar's sections, in the order a marketer's day goes; apps not named here follow, as Django lists them.
SECTIONS = {
    "customers": "Audience",
    "conversions": "Results",
    "clicks": "Links",
    "campaigns": "Campaigns",
    "workspaces": "Workspace",
}


def plural_label(opts: Options) -> str:
    """The name of a model's list page: LABELS, or its verbose plural name."""
    return LABELS.get(opts.label_lower) or str(opts.verbose_name_plural).capitalize()


class BackOffice(admin.AdminSite):
    site_header = "lftrack back office"
    site_title = "lftrack"
    index_title = "Back office"
    site_url = None  # no public site to link to from the header

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        apps = super().get_app_list(request, app_label)
        for app in apps:
            app["name"] = SECTIONS.get(app["app_label"], app["name"])
            for entry in app["models"]:
                entry["name"] = LABELS.get(f"{app['app_label']}.{entry['object_name'].lower()}", entry["name"])
        order = list(SECTIONS)
        return sorted(apps, key=lambda app: order.index(app["app_label"]) if app["app_label"] in order else len(order))
