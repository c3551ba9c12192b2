"""Connections of the acme workspace to Stripe and Shopify, and the URL each is posted to on the live server."""

import pytest

from payments.connections import connection_create
from tests.factories import ClickFactory
from tests.payments.providers import SHOPIFY_SECRET, STRIPE_SECRET


@pytest.fixture
def stripe_connection(acme):
    return connection_create(workspace=acme, provider="stripe", signing_secret=STRIPE_SECRET).connection


@pytest.fixture
def shopify_connection(acme):
    return connection_create(workspace=acme, provider="shopify", signing_secret=SHOPIFY_SECRET).connection


def hook_url(live_server, connection) -> str:
    return f"{live_server.url}/hooks/payments/{connection.url_token}"


@pytest.fixture
def stripe_url(live_server, stripe_connection):
    return hook_url(live_server, stripe_connection)


@pytest.fixture
def shopify_url(live_server, shopify_connection):
    return hook_url(live_server, shopify_connection)


@pytest.fixture
def click(acme):
    return ClickFactory(link__post__workspace=acme)
