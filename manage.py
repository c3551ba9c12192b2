#!/usr/bin/env python
"""Django's command-line entry point."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # reads the environment now, so a missing variable is one line, not a traceback
    except ImproperlyConfigured as error:
        sys.exit(f"manage.py: {error} (development: DEBUG=1, and DATABASE_URL unless through make)")
    execute_from_command_line(sys.argv)
