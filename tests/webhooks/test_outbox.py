"""The outbox: events written in the change's transaction, only when an endpoint wants them, dispatched after commit."""

import pytest
from django.utils import timezone
from procrastinate.contrib.django.models import ProcrastinateJob

from campaigns.services import campaign_pause, suppression_add
from clicks.models import Click
from clicks.services import _Visit, _visits_record
from conversions.services import conversion_record
from customers.services import customer_match
from lftrack.errors import Unprocessable
from tests.factories import CampaignFactory, ClickFactory, EndpointFactory, LinkFactory
from webhooks.models import Delivery, Event
from webhooks.outbox import event_emit, events_dispatch, events_dispatch_pending

pytestmark = pytest.mark.django_db


def types(**filters) -> list[str]:
    return list(Event.objects.filter(**filters).order_by("pk").values_list("type", flat=True))


def test_nothing_is_written_without_an_endpoint_that_wants_the_type(acme):
    EndpointFactory(workspace=acme, event_types=["sale.created"])
    click = ClickFactory(link__workspace=acme, workspace=acme)
    conversion_record(
        workspace=acme, channel="api", event="lead", click_id=click.click_id, customer={"email": "ada@example.com"}
    )
    assert types() == []


def test_a_conversion_writes_its_events_and_their_dispatch_jobs_in_order(acme):
    endpoint = EndpointFactory(workspace=acme)
    click = ClickFactory(link__workspace=acme, workspace=acme)
    sale = conversion_record(
        workspace=acme,
        channel="api",
        event="sale",
        click_id=click.click_id,
        value_cents=900,
        customer={"email": "ada@example.com"},
    )
    assert types() == ["customer.created", "sale.created"]
    created, sold = Event.objects.order_by("pk")
    assert (created.subject_id, created.customer_id) == (sale.customer_id, sale.customer_id)
    assert (sold.subject_id, sold.customer_id, sold.test) == (sale.pk, sale.customer_id, False)
    # queued in the same transaction, the workspace's one at a time in this order
    dispatches = list(ProcrastinateJob.objects.order_by("id").values_list("task_name", "args", "lock"))
    lock = f"webhooks:dispatch:{acme.pk}"
    assert dispatches == [
        ("webhooks.dispatch", {"event_id": created.pk, "workspace_id": acme.pk}, lock),
        ("webhooks.dispatch", {"event_id": sold.pk, "workspace_id": acme.pk}, lock),
    ]
    # the worker dispatches both at once: the objects built and kept, one delivery each, one sending job for
    # the endpoint's batch (locked per endpoint), and the second event's dispatch job dropped
    assert events_dispatch(workspace_id=acme.pk) == 2
    sold.refresh_from_db()
    assert sold.data["value_cents"] == 900 and sold.dispatched_at is not None
    deliveries = list(Delivery.objects.order_by("pk"))
    assert [(d.event_id, d.endpoint_id, d.state) for d in deliveries] == [
        (created.pk, endpoint.pk, "pending"),
        (sold.pk, endpoint.pk, "pending"),
    ]
    jobs = list(ProcrastinateJob.objects.order_by("id").values_list("task_name", "args", "lock"))
    assert jobs == [
        (
            "webhooks.deliver_batch",
            {"endpoint_id": endpoint.pk, "delivery_ids": [d.pk for d in deliveries]},
            f"webhooks:{endpoint.pk}",
        )
    ]
    assert events_dispatch(event_ids=[sold.pk]) == 0  # dispatched once


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_conversion_writes_no_event_and_queues_nothing(acme):
    EndpointFactory(workspace=acme)
    with pytest.raises(Unprocessable):
        conversion_record(
            workspace=acme, channel="api", event="lead", click_id="no-such-click", customer={"email": "ada@example.com"}
        )
    assert types() == [] and not ProcrastinateJob.objects.exists()


def test_disabled_test_mode_and_foreign_endpoints_get_nothing(acme, globex):
    EndpointFactory(workspace=acme, enabled=False)
    EndpointFactory(workspace=acme, test=True)
    EndpointFactory(workspace=globex)
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    assert types() == []


def test_a_test_event_reaches_test_endpoints_only(acme):
    live = EndpointFactory(workspace=acme)
    test = EndpointFactory(workspace=acme, test=True)
    event_id = event_emit(workspace_id=acme.pk, type="customer.created", subject_id=1, test=True)
    events_dispatch(event_ids=[event_id])
    assert list(Delivery.objects.values_list("endpoint_id", flat=True)) == [test.pk]
    assert live.pk != test.pk


def test_identity_moves_suppressions_and_pauses_are_events(acme):
    EndpointFactory(workspace=acme)
    first = customer_match(workspace=acme, channel="api", email="a@example.com", external_id="u1").customer
    second = customer_match(workspace=acme, channel="api", email="b@example.com", external_id="u1").customer
    suppression_add(workspace=acme, email="B@example.com", reason="unsubscribed", channel="email")
    campaign_pause(campaign=CampaignFactory(workspace=acme))
    assert types() == [
        "customer.created",
        "customer.created",
        "customer.external_id_moved",
        "contact.unsubscribed",
        "campaign.paused",
    ]
    moved = Event.objects.get(type="customer.external_id_moved")
    assert (moved.subject_id, moved.detail) == (second.pk, {"external_id": "u1", "from_customer_id": first.pk})


def test_the_sweeper_dispatches_what_a_dead_process_left(acme, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    EndpointFactory(workspace=acme, event_types=["click.created"])
    # a redirect's process that died between its statement and queueing the dispatch
    Event.objects.create(
        workspace=acme, type="click.created", subject_id=ClickFactory(workspace=acme).pk, created_at=timezone.now()
    )
    assert events_dispatch_pending() == 0  # still within the grace of its dispatch job
    time_machine.shift(11 * 60)
    assert events_dispatch_pending() == 1
    assert (
        Delivery.objects.count() == 1
        and ProcrastinateJob.objects.filter(task_name="webhooks.deliver_batch").count() == 1
    )
    assert events_dispatch_pending() == 0  # dispatched once


def test_an_unknown_type_is_a_bug(acme):
    with pytest.raises(ValueError, match="unknown webhook event type"):
        event_emit(workspace_id=acme.pk, type="customer.deleted", subject_id=1)


def test_a_batch_of_redirects_writes_one_click_event_per_recorded_click_of_a_workspace_that_wants_them(
    acme, globex, settings
):
    """The redirect's batch statement (clicks/services.py): a click.created for each click it stores in a workspace
    with a live endpoint that wants clicks, one dispatch job each; none past the click limit, none elsewhere."""
    settings.RATELIMIT_REDIRECT_IP = "1/m"
    EndpointFactory(workspace=acme, event_types=["click.created"])
    EndpointFactory(workspace=globex)  # everything but clicks
    EndpointFactory(workspace=globex, event_types=["click.created"], test=True)  # test data only: no live click
    ours, theirs = (
        LinkFactory(workspace=acme, post__workspace=acme),
        LinkFactory(workspace=globex, post__workspace=globex),
    )

    def visit(link, client, click_id):
        return _Visit(link.key, click_id, "UA", "", False, "other", "", "", "", "", "", client)

    answers = _visits_record(
        [
            visit(ours, "198.51.100.1", "c1"),
            visit(theirs, "198.51.100.2", "c2"),
            visit(ours, "198.51.100.1", "c3"),
            visit(ours, "198.51.100.4", "c4"),
        ]
    )
    assert [answer and answer[1] for answer in answers] == ["c1", "c2", None, "c4"]  # c3: past the limit
    clicks = dict(Click.objects.values_list("click_id", "pk"))
    assert sorted(Event.objects.values_list("type", "subject_id", "workspace_id", "test")) == sorted(
        [("click.created", clicks["c1"], acme.pk, False), ("click.created", clicks["c4"], acme.pk, False)]
    )
    jobs = ProcrastinateJob.objects.filter(task_name="webhooks.dispatch")
    assert sorted(job.args["event_id"] for job in jobs) == sorted(Event.objects.values_list("pk", flat=True))
    assert {job.lock for job in jobs} == {f"webhooks:dispatch:{acme.pk}"}
