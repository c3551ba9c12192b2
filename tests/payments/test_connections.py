"""Connections through `manage.py provider`: the URL to paste, the secret stored encrypted and never printed,
rotated with an overlap, disconnected; and Stripe's roll (two v1 signatures) verified."""

import json
import time
from datetime import timedelta
from io import StringIO

import pytest
import stripe
from django.core.management import CommandError, call_command
from django.utils import timezone

from payments.connections import connection_secret_set
from payments.models import Connection, Delivery
from payments.services import deliveries_purge
from tests.payments.conftest import hook_url
from tests.payments.providers import post, sid, stripe_event, stripe_signed

pytestmark = pytest.mark.django_db(transaction=True)


def provider(*args) -> dict:
    out = StringIO()
    call_command("provider", *args, stdout=out)
    return json.loads(out.getvalue())


def test_connect_prints_the_url_and_never_the_secret(acme, settings):
    settings.PUBLIC_BASE_URL = "https://track.example.com"
    out = provider("connect", "acme", "stripe", "--signing-secret", "whsec_abc123")
    connection = Connection.objects.get(pk=out["id"])
    assert out["url"] == f"https://track.example.com/hooks/payments/{connection.url_token}"
    assert len(connection.url_token) >= 32
    assert "whsec_abc123" not in json.dumps(out) and "whsec_abc123" not in connection.secret  # encrypted at rest
    listed = provider("list", "acme")["connections"]
    assert [(c["id"], c["provider"], c["has_secret"], c["connected"]) for c in listed] == [
        (out["id"], "stripe", True, True)
    ]
    assert provider("disconnect", "acme", str(out["id"]))["connected"] is False


def test_the_secret_may_come_on_stdin(acme, monkeypatch):
    monkeypatch.setattr("sys.stdin", StringIO("shpss_from_stdin\n"))
    out = provider("connect", "acme", "shopify", "--signing-secret-stdin")
    assert out["has_secret"] is True and out["provider"] == "shopify"


def test_bad_input_is_a_one_line_error(acme, globex):
    theirs = provider("connect", "globex", "shopify", "--signing-secret", "shpss_x")
    with pytest.raises(CommandError, match="unknown workspace: nope"):
        provider("connect", "nope", "stripe")
    with pytest.raises(CommandError, match="unknown connection"):
        provider("disconnect", "acme", str(theirs["id"]))
    with pytest.raises(CommandError, match="printable ASCII"):
        provider("connect", "acme", "stripe", "--signing-secret", "has space")


def test_a_rotated_secret_keeps_the_old_one_for_the_overlap_only(live_server, acme, click):
    out = provider("connect", "acme", "stripe", "--signing-secret", "whsec_old")
    connection = Connection.objects.get(pk=out["id"])
    url = hook_url(live_server, connection)
    rotated = provider("secret", "acme", str(out["id"]), "--signing-secret", "whsec_new", "--overlap-hours", "1")
    assert rotated["previous_secret_expires_at"] is not None

    def event(secret):
        return post(url, *stripe_signed(stripe_event("customer.created", {"id": sid("cus")}), secret)).status_code

    assert (event("whsec_old"), event("whsec_new")) == (200, 200)
    connection_secret_set(connection=connection, signing_secret="whsec_newest", overlap_hours=0)  # a leak: at once
    assert (event("whsec_new"), event("whsec_newest")) == (400, 200)


def test_stripes_own_roll_sends_two_signatures_and_either_verifies(stripe_url):
    body = json.dumps(stripe_event("customer.created", {"id": sid("cus")}))
    now = int(time.time())
    ours = stripe.WebhookSignature._compute_signature(f"{now}.{body}", "whsec_test_4eC39HqLyjWDarjtT1zdp7dc")
    header = f"t={now},v1={'0' * 64},v1={ours}"  # the retiring secret's signature first, as during Stripe's roll
    assert post(stripe_url, body.encode(), {"Stripe-Signature": header}).status_code == 200


def test_the_log_is_purged_after_its_retention_but_waiting_events_are_kept_longer(acme, stripe_connection):
    now = timezone.now()
    for days, waiting in ((31, []), (29, []), (31, ["pi_1"]), (91, ["pi_2"])):
        Delivery.objects.create(
            workspace=acme,
            connection=stripe_connection,
            outcome="waiting" if waiting else "ignored",
            waiting_for=waiting,
            received_at=now - timedelta(days=days),
        )
    assert deliveries_purge(now=now) == 2
    assert sorted(Delivery.objects.values_list("waiting_for", flat=True)) == [[], ["pi_1"]]
