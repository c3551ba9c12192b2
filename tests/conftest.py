"""Fixtures: the acme / globex story, an API client, and helpers shared by every test module."""
import json

import pytest
from django.db import connection
from django.test import Client

from tests.factories import ApiTokenFactory, MembershipFactory, UserFactory, WorkspaceFactory
from workspaces.models import Membership

requires_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (set DATABASE_URL)"
)


class ApiClient(Client):
    """A test client that sends JSON and an optional bearer token."""

    def post(self, path, data=None, *, token=None, content_type="application/json", raw=None, **extra):
        if token is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {getattr(token, 'secret', token)}"
        body = raw if raw is not None else json.dumps(data if data is not None else {})
        return super().post(path, body, content_type=content_type, **extra)

    def get(self, path, data=None, *, token=None, **extra):
        if token is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {getattr(token, 'secret', token)}"
        return super().get(path, data, **extra)


def assert_api_error(response, status: int, message: str) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"error": message}


@pytest.fixture
def api():
    return ApiClient()


@pytest.fixture
def acme(db):
    return WorkspaceFactory(slug="acme", name="Acme")


@pytest.fixture
def globex(db):
    return WorkspaceFactory(slug="globex", name="Globex")


@pytest.fixture
def alice(acme):
    user = UserFactory(username="alice")
    MembershipFactory(user=user, workspace=acme, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def bob(acme):
    user = UserFactory(username="bob")
    MembershipFactory(user=user, workspace=acme, role=Membership.Role.EDITOR)
    return user


@pytest.fixture
def charlie(globex):
    user = UserFactory(username="charlie")
    MembershipFactory(user=user, workspace=globex, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def acme_token(acme):
    """An ApiToken with its one-time secret on `.secret`."""
    return ApiTokenFactory(workspace=acme)


@pytest.fixture
def globex_token(globex):
    return ApiTokenFactory(workspace=globex)
