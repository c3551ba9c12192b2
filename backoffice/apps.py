from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps  # not its class: a class named here would be a candidate


class BackofficeConfig(AppConfig):
    default = True  # of the two configs here; INSTALLED_APPS names the other one itself
    name = "backoffice"
    verbose_name = "Back office"


class BackOfficeAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with our site (backoffice/site.py) as `admin.site`: INSTALLED_APPS names this."""

    default = False
    default_site = "backoffice.site.BackOffice"
