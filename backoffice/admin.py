"""The back office: Django's admin over every app, scoped to the user's workspaces (backoffice/scoping.py).

The one layer that spans the domain: its modules may import any app, and no app imports them. Django's
admin autodiscovery imports this module, which registers each app's screens by importing them.
"""
from django.contrib import admin

from backoffice import campaigns, clicks, conversions, customers, webhooks, workspaces  # noqa: F401  (they register)

admin.site.site_header = "lftrack back office"
admin.site.site_title = "lftrack"
admin.site.index_title = "Back office"
admin.site.site_url = None  # no public site to link to from the header
