"""WSGI entry point for gunicorn: `gunicorn lftrack.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
django_application = get_wsgi_application()

from clicks.wsgi import redirect_first  # noqa: E402  (after Django is set up)

# The redirect's GET before Django's handler, a third of its CPU (clicks/wsgi.py).
application = redirect_first(django_application)
