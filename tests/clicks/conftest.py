"""Every click test twice: through Django's test client, and through lftrack.wsgi.application, the entry point
gunicorn serves, whose GET /l/<key> is answered before Django's handler (clicks/wsgi.py)."""

import pytest
from django.test import Client

from tests.conftest import WsgiClient


@pytest.fixture(params=["django", "wsgi"])
def client(request):
    return Client() if request.param == "django" else WsgiClient()
