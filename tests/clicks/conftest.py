"""Every click test twice: through Django's test client and through lftrack.wsgi.application (tests/conftest.py,
either_client)."""

import pytest


@pytest.fixture
def client(either_client):
    return either_client
