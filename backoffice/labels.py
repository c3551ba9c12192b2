"""What the back office calls its pages and the sidebar's sections: a marketer's words, not the models' names."""

from django.db.models.options import Options

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
    "webhooks.endpoint": "Webhook endpoints",
    "webhooks.attempt": "Webhook deliveries",
    "payments.connection": "Payment providers",
}
# The sidebar's sections, in the order a marketer's day goes; apps not named here follow, as Django lists them.
SECTIONS = {
    "customers": "Audience",
    "conversions": "Results",
    "clicks": "Links",
    "campaigns": "Campaigns",
    "workspaces": "Workspace",
    "webhooks": "Webhooks",
    "payments": "Payments",
}


def plural_label(opts: Options) -> str:
    """The name of a model's list page: LABELS, or its verbose plural name."""
    return LABELS.get(opts.label_lower) or str(opts.verbose_name_plural).capitalize()
