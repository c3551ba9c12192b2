"""The back office: Django's admin over every app, scoped to the user's workspaces (backoffice/scoping.py).

The one layer that spans the domain: its modules may import any app, and no app imports them. Django's
admin autodiscovery imports this module, which registers each app's screens by importing them; the site
itself (its name, sidebar and home page) is backoffice/site.py.
"""

from backoffice import (  # noqa: F401  (they register)
    broadcasts,
    campaigns,
    clicks,
    conversions,
    customers,
    payments,
    webhooks,
    workspaces,
)
