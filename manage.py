#!/usr/bin/env python
"""Django's command-line entry point.

In a checkout it first reads `.env` (written by `make run`: DEBUG=1, a SECRET_KEY of its own and
DATABASE_URL=embedded), never overriding the environment, and refusing to where the environment is a
deployment's (lftrack/devdb.py, env_file_read); ENV_FILE names another file, or none when empty.
DATABASE_URL=embedded starts (or joins) the embedded PostgreSQL of lftrack/devdb.py.
"""

import os
import sys

if __name__ == "__main__":
    from lftrack.devdb import embedded_url, env_file_read

    env_file_read()
    if os.environ.get("DATABASE_URL") == "embedded":
        os.environ["DATABASE_URL"] = embedded_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 (reads the environment now, so a missing variable is one line, not a traceback)
    except ImproperlyConfigured as error:
        sys.exit(f"manage.py: {error} (development: `make run` writes a .env that sets them)")
    execute_from_command_line(sys.argv)
