"""The service's own emails (templates/emails/): each body word for word, and what a person typed (a workspace's
name) written as typed, never HTML-escaped: they are plain text."""

from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.core import mail

from campaigns.confirmation import confirm_url, confirmation_message
from tests.factories import EndpointFactory, EnrollmentFactory
from webhooks.delivery import owners_notify
from workspaces.invitations import invitation_create, invitation_url

pytestmark = pytest.mark.django_db

NAME = 'Tom & Jerry\'s "Shop" <1>'


@pytest.fixture(autouse=True)
def _clock(time_machine):
    time_machine.move_to(datetime(2026, 11, 23, 9, 0, tzinfo=UTC), tick=False)  # the signed links' timestamps


def test_an_invitation_names_the_workspace_the_role_and_the_link(acme, alice, django_capture_on_commit_callbacks):
    acme.name = NAME
    acme.save()
    with django_capture_on_commit_callbacks(execute=True):
        invitation = invitation_create(workspace=acme, email="dan@example.com", role="editor", invited_by=alice)
    (message,) = mail.outbox
    assert (message.subject, message.to) == (f"You are invited to {NAME} on lftrack", ["dan@example.com"])
    assert message.body == (
        f"You are invited to join {NAME} on lftrack as editor.\n"
        "\n"
        "To accept, open this link within 7 days:\n"
        f"{invitation_url(invitation)}\n"
        "\n"
        "If you did not expect this, ignore this email: nothing happens without you.\n"
    )


def test_a_disabled_endpoint_tells_the_owners_why_and_where_to_enable_it(acme, alice):
    alice.email = "alice@example.com"
    alice.save()
    acme.name = NAME
    acme.save()
    endpoint = EndpointFactory(workspace=acme, enabled=False, disabled_reason="20 failed attempts in a row")
    assert owners_notify(endpoint.pk) == 1
    (message,) = mail.outbox
    assert message.subject == "Webhook endpoint disabled: https://hooks.example.com/lftrack"
    assert message.body == (
        f"The webhook endpoint https://hooks.example.com/lftrack of {NAME} was disabled: 20 failed attempts in a row.\n"
        "\n"
        "Its deliveries wait; nothing new is kept for it until it is enabled again. Once it answers, re-enable it "
        "with one click on its page:\n"
        f"{settings.PUBLIC_BASE_URL}/admin/webhooks/endpoint/{endpoint.pk}/change/\n"
    )


def test_a_confirmation_names_the_workspace_and_the_link(acme):
    acme.name = NAME
    acme.save()
    enrollment = EnrollmentFactory(campaign__workspace=acme, customer__email="ada@example.com")
    message = confirmation_message(enrollment)
    assert (message.subject, message.to) == (f"Confirm your subscription to {NAME}", ["ada@example.com"])
    assert message.body == (
        f"Someone, we hope you, asked to receive emails from {NAME} at this address.\n"
        "\n"
        "To confirm, open this link:\n"
        f"{confirm_url(enrollment.pk)}\n"
        "\n"
        "If it was not you, ignore this email: without a confirmation you will get nothing more from us.\n"
    )
