"""Admin fixtures: a logged-in client per person of the story, and one small world per workspace."""

from dataclasses import dataclass

import pytest
from django.test import Client

from campaigns.models import Enrollment
from conversions.models import ConversionEvent
from customers.models import Customer, CustomerActivity
from tests.factories import (
    ApiTokenFactory,
    CampaignEmailFactory,
    CampaignFactory,
    CampaignLeadFactory,
    ClickFactory,
    ConversionEventFactory,
    CustomerActivityFactory,
    CustomerFactory,
    EmailSendFactory,
    EnrollmentFactory,
    LinkFactory,
    PostFactory,
    SuppressionFactory,
    UserFactory,
)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root(db):
    return UserFactory(username="root", is_superuser=True)


@pytest.fixture
def as_alice(alice):
    return client_for(alice)


@pytest.fixture
def as_bob(bob):
    return client_for(bob)


@pytest.fixture
def as_charlie(charlie):
    return client_for(charlie)


@pytest.fixture
def as_root(root):
    return client_for(root)


@dataclass
class World:
    """One workspace's rows, one of each kind the admin shows."""

    workspace: object
    token: object
    contact: Customer
    post: object
    link: object
    click: object
    conversion: ConversionEvent
    campaign: object
    email: object
    enrollment: Enrollment
    suppression: object
    send: object
    activity: CustomerActivity

    def objects(self) -> dict:
        return {
            "workspaces.workspace": self.workspace,
            "workspaces.apitoken": self.token,
            "customers.customer": self.contact,
            "clicks.post": self.post,
            "clicks.link": self.link,
            "conversions.conversionevent": self.conversion,
            "campaigns.campaign": self.campaign,
            "campaigns.enrollment": self.enrollment,
            "campaigns.suppression": self.suppression,
            "campaigns.emailsend": self.send,
        }


def build_world(workspace, prefix: str) -> World:
    contact = CustomerFactory(
        workspace=workspace,
        email=f"{prefix}-ada@example.com",
        name=f"{prefix.title()} Ada",
        external_id=f"{prefix}-user-1",
    )
    activity = CustomerActivityFactory(customer=contact, external_id=contact.external_id)
    post = PostFactory(workspace=workspace, title=f"{prefix.title()} launch post")
    link = LinkFactory(post=post, destination=f"https://{prefix}.example.com/landing")
    click = ClickFactory(link=link)
    conversion = ConversionEventFactory(
        click=click, customer=contact, event="sale", value_cents=49000, event_name=f"{prefix.title()} annual plan"
    )
    campaign = CampaignFactory(workspace=workspace, slug=f"{prefix}-spring", name=f"{prefix.title()} spring campaign")
    email = CampaignEmailFactory(campaign=campaign, position=1, subject=f"{prefix.title()} welcome")
    enrollment = EnrollmentFactory(campaign=campaign, customer=contact)
    CampaignLeadFactory(enrollment=enrollment)
    send = EmailSendFactory(enrollment=enrollment, campaign_email=email)
    suppression = SuppressionFactory(workspace=workspace, email=f"{prefix}-gone@example.com")
    token = ApiTokenFactory(workspace=workspace, name=f"{prefix.title()} server")
    return World(
        workspace,
        token,
        contact,
        post,
        link,
        click,
        conversion,
        campaign,
        email,
        enrollment,
        suppression,
        send,
        activity,
    )


@pytest.fixture
def acme_world(acme):
    return build_world(acme, "acme")


@pytest.fixture
def globex_world(globex):
    return build_world(globex, "globex")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The users of these tests log in with a hash; PBKDF2's deliberate slowness buys nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
