"""SSRF at delivery time, the address check against IANA's registries, the address pinned for the connection, the
retry schedule and the engine's jobs."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from procrastinate.contrib.django import app

from customers.services import customer_match
from tests.factories import EndpointFactory, LinkFactory
from tests.webhooks.conftest import work
from webhooks.delivery import delivery_record, retry_delay
from webhooks.models import Attempt, Delivery, Event
from webhooks.network import Answer, address_allowed, registry_blocks
from webhooks.services import endpoint_create

REGISTRY_BLOCKS = registry_blocks("iana-ipv4-special-registry-1.csv") + registry_blocks(
    "iana-ipv6-special-registry-1.csv"
)


def test_the_registries_are_read_whole():
    blocks = set(map(str, REGISTRY_BLOCKS))
    assert len(REGISTRY_BLOCKS) == 37
    assert {
        "192.0.0.170/32",
        "192.0.0.171/32",
        "192.88.99.0/24",
        "255.255.255.255/32",
        "2001:10::/28",
        "2002::/16",
        "3fff::/20",
        "5f00::/16",
        "100:0:0:1::/64",
    } <= blocks  # footnoted, paired, retired, newest
    assert not {"192.0.0.9/32", "64:ff9b::/96", "2001:3::/32"} & blocks  # marked globally reachable


@pytest.mark.parametrize("block", REGISTRY_BLOCKS, ids=str)
def test_every_block_the_registries_do_not_call_globally_reachable_is_refused(block):
    assert not address_allowed(str(block[0])) and not address_allowed(str(block[-1]))


@pytest.mark.parametrize(
    "address",
    [
        "fec0::1",
        "feff:ffff::1",  # site-local, deprecated (RFC 3879): outside 2000::/3
        "5f00::1",
        "5f00:ffff::1",  # SRv6 SIDs (RFC 9602)
        "3fff::1",
        "3fff:fff:ffff::1",  # documentation (RFC 9637), inside 2000::/3
        "4000::1",
        "e000::1",
        "1::1",  # unallocated: only 2000::/3 is global unicast
        "ff0e::1",
        "fc00::1",
        "fd00:ec2::254",
    ],
)
def test_ipv6_outside_global_unicast_or_kept_for_documentation_is_refused(address):
    assert not address_allowed(address)


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
        "3fff:1000::1",
        "64:ff9b::5db8:d70e",
        "::ffff:93.184.215.14",
    ],
)
def test_public_addresses_are_allowed(address):
    assert address_allowed(address)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("local_hooks")
def test_a_host_that_now_resolves_inside_is_refused_at_delivery(acme, receiver, public_dns, settings):
    public_dns["hooks.example.com"] = ["93.184.215.14"]
    port = receiver.url.split(":")[2].split("/")[0]
    issued = endpoint_create(
        workspace=acme, url=f"http://hooks.example.com:{port}/hook", event_types=["customer.created"]
    )
    receiver.secret = issued.secret
    settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS = False  # production: the check runs again at every attempt
    public_dns["hooks.example.com"] = ["127.0.0.1"]  # DNS rebinding
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    work(until=lambda: Attempt.objects.exists())
    attempt = Attempt.objects.get()
    assert attempt.status_code is None and attempt.error.startswith("refused: url resolves to a private")
    assert receiver.received == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("local_hooks")
def test_the_connection_goes_to_the_address_checked_with_the_hosts_name(acme, receiver, public_dns):
    public_dns["hooks.example.com"] = ["127.0.0.1"]
    port = receiver.url.split(":")[2].split("/")[0]
    issued = endpoint_create(
        workspace=acme, url=f"http://hooks.example.com:{port}/hook?k=1", event_types=["customer.created"]
    )
    receiver.secret = issued.secret
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    work()
    ((_, payload, headers, path),) = receiver.received
    assert (
        headers["host"] == f"hooks.example.com:{port}" and path == "/hook?k=1" and payload["type"] == "customer.created"
    )


@pytest.mark.django_db
def test_the_redirect_writes_no_click_event_unless_an_endpoint_wants_clicks(acme):
    EndpointFactory(workspace=acme)  # every type but clicks
    link = LinkFactory(workspace=acme, post__workspace=acme)
    Client().get(f"/l/{link.key}")
    assert not Event.objects.exists()
    EndpointFactory(workspace=acme, event_types=["click.created"])
    Client().get(f"/l/{link.key}")
    assert list(Event.objects.values_list("type", flat=True)) == ["click.created"]


def test_retries_back_off_exponentially_with_jitter_up_to_the_cap(settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS, settings.WEBHOOK_RETRY_MAX_SECONDS = 10, 6 * 3600
    for attempt, base in ((1, 10), (2, 20), (5, 160), (30, 6 * 3600)):
        delays = {retry_delay(attempt).total_seconds() for _ in range(50)}
        assert all(0.75 * base <= d <= 1.25 * base for d in delays) and len(delays) > 1


@pytest.mark.django_db
def test_a_delivery_failing_past_three_days_fails_for_good(acme):
    endpoint = EndpointFactory(workspace=acme)
    event = Event.objects.create(workspace=acme, type="customer.created", subject_id=1, created_at=timezone.now())
    delivery = Delivery.objects.create(
        workspace=acme,
        event=event,
        endpoint=endpoint,
        attempts=15,
        queued_at=timezone.now() - timedelta(hours=71, minutes=59),
    )
    retry_at = delivery_record(delivery, Answer(status=503, duration_ms=5), started=timezone.now())
    delivery.refresh_from_db()
    assert retry_at is None and delivery.state == "failed" and delivery.attempts == 16
    endpoint.refresh_from_db()
    assert endpoint.failures_in_row == 1 and endpoint.enabled


def test_one_worker_runs_every_periodic_job():
    app.perform_import_paths()
    crons = {p.task.name: p.cron for p in app.periodic_registry.periodic_tasks.values()}
    assert crons == {
        "rollups.roll_up": "* * * * *",
        "conversions.idempotency_purge": "7 * * * *",
        "campaigns.expire_pending": "*/10 * * * *",
        "lftrack.clear_sessions": "23 4 * * *",
        "webhooks.sweep": "* * * * *",
        "tasks.retry_stalled": "* * * * *",
        "webhooks.purge": "17 3 * * *",
        "tasks.remove_old_jobs": "41 * * * *",
        "payments.purge": "29 3 * * *",
        "rollups.retention_purge": "*/5 * * * *",
    }


@pytest.mark.django_db(transaction=True)
def test_the_periodic_jobs_do_what_cron_did(acme):
    from campaigns.tasks import expire_pending
    from conversions.models import IdempotencyKey
    from conversions.tasks import idempotency_purge
    from lftrack.tasks import clear_sessions
    from rollups.tasks import roll_up
    from tests.factories import CampaignFactory, ClickFactory, CustomerFactory, EnrollmentFactory

    ClickFactory(workspace=acme, link__workspace=acme)
    assert roll_up(timestamp=0)["clicks_click"] is not None
    IdempotencyKey.objects.create(
        workspace=acme, key="old", request_digest="x", created_at=timezone.now() - timedelta(days=2)
    )
    assert idempotency_purge(timestamp=0) == 1
    EnrollmentFactory(
        campaign=CampaignFactory(workspace=acme),
        customer=CustomerFactory(workspace=acme),
        state="pending",
        confirm_by=timezone.now() - timedelta(minutes=1),
    )
    assert expire_pending(timestamp=0) == 1
    assert clear_sessions(timestamp=0) == 0
