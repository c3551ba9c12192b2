"""factory-boy factories, one per model, with `SubFactory` up to the workspace."""

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from campaigns.models import Campaign, CampaignEmail, CampaignLead, CampaignPost, EmailSend, Enrollment, Suppression
from clicks.models import Click, Link, Post
from conversions.models import ConversionEvent, Refund
from customers.models import Customer, CustomerActivity
from webhooks.events import EVENT_TYPES
from webhooks.models import Endpoint
from webhooks.secrets import secret_new, secret_seal
from workspaces.models import ApiToken, Membership, Workspace
from workspaces.tokens import api_token_create


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    is_staff = True
    password = factory.django.Password("correct horse battery staple")


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"workspace-{n}")
    name = factory.LazyAttribute(lambda w: w.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    workspace = factory.SubFactory(WorkspaceFactory)
    role = Membership.Role.EDITOR


class ApiTokenFactory(factory.django.DjangoModelFactory):
    """Builds through the service so the digest is real; the secret is on `token.secret`."""

    class Meta:
        model = ApiToken

    workspace = factory.SubFactory(WorkspaceFactory)
    name = "Test token"

    @classmethod
    def _create(cls, model_class, workspace, name, **kwargs):
        issued = api_token_create(workspace=workspace, name=name)
        issued.token.secret = issued.secret
        return issued.token


class PostFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Post
        skip_postgeneration_save = True

    workspace = factory.SubFactory(WorkspaceFactory)
    title = factory.Sequence(lambda n: f"Launch post {n}")

    @factory.post_generation
    def campaign(post, create, campaign, **kwargs):
        """`PostFactory(campaign=c)` puts the post in `c` (a CampaignPost row), whatever the workspaces."""
        if campaign is not None:
            CampaignPost.objects.create(workspace=post.workspace, campaign=campaign, post=post)


class LinkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Link

    post = factory.SubFactory(PostFactory)
    workspace = factory.SelfAttribute("post.workspace")
    destination = "https://shop.example.com/landing?utm_source=newsletter#pricing"


class ClickFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Click

    link = factory.SubFactory(LinkFactory)
    workspace = factory.SelfAttribute("link.workspace")
    user_agent = "Mozilla/5.0 (X11; Linux x86_64)"


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    workspace = factory.SubFactory(WorkspaceFactory)
    email = factory.Sequence(lambda n: f"person{n}@example.com")
    name = factory.Sequence(lambda n: f"Person {n}")
    source = Customer.Channel.API


class CustomerActivityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CustomerActivity

    customer = factory.SubFactory(CustomerFactory)
    workspace = factory.SelfAttribute("customer.workspace")
    kind = CustomerActivity.Kind.CREATED
    channel = Customer.Channel.API


class ConversionEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ConversionEvent

    click = factory.SubFactory(ClickFactory)
    link = factory.SelfAttribute("click.link")
    workspace = factory.SelfAttribute("click.workspace")
    event = ConversionEvent.Event.LEAD
    occurred_at = factory.LazyFunction(timezone.now)
    channel = Customer.Channel.API


class RefundFactory(factory.django.DjangoModelFactory):
    """A refund as the refund service stores it: the sale's link, currency, test flag and time copied in."""

    class Meta:
        model = Refund

    conversion = factory.SubFactory(ConversionEventFactory, event=ConversionEvent.Event.SALE, value_cents=10000)
    workspace = factory.SelfAttribute("conversion.workspace")
    link = factory.SelfAttribute("conversion.link")
    currency = factory.SelfAttribute("conversion.currency")
    is_test = factory.SelfAttribute("conversion.is_test")
    sale_occurred_at = factory.SelfAttribute("conversion.occurred_at")
    amount_cents = 1000
    created_at = factory.LazyFunction(timezone.now)


class CampaignFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Campaign

    workspace = factory.SubFactory(WorkspaceFactory)
    slug = factory.Sequence(lambda n: f"spring-launch-{n}")
    name = factory.LazyAttribute(lambda c: c.slug.replace("-", " ").title())


class CampaignEmailFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CampaignEmail

    campaign = factory.SubFactory(CampaignFactory)
    workspace = factory.SelfAttribute("campaign.workspace")
    position = factory.Sequence(lambda n: n + 1)
    subject = "Welcome, {{ name }}"
    body = "Hi {{ name }}, thanks for signing up with {{ email }}."
    delay_minutes = 60
    active = True


class EnrollmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Enrollment

    campaign = factory.SubFactory(CampaignFactory)
    workspace = factory.SelfAttribute("campaign.workspace")
    customer = factory.SubFactory(CustomerFactory, workspace=factory.SelfAttribute("..workspace"))
    enrolled_at = factory.LazyFunction(timezone.now)
    is_test = factory.SelfAttribute("customer.is_test")  # as campaign_enroll copies it


class CampaignLeadFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CampaignLead

    enrollment = factory.SubFactory(EnrollmentFactory)
    campaign = factory.SelfAttribute("enrollment.campaign")
    customer = factory.SelfAttribute("enrollment.customer")
    workspace = factory.SelfAttribute("enrollment.workspace")
    outcome = CampaignLead.Outcome.CREATED
    channel = "api"


class SuppressionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Suppression

    workspace = factory.SubFactory(WorkspaceFactory)
    email = factory.Sequence(lambda n: f"suppressed{n}@example.com")
    reason = Suppression.Reason.UNSUBSCRIBED


class EmailSendFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EmailSend

    enrollment = factory.SubFactory(EnrollmentFactory)
    campaign = factory.SelfAttribute("enrollment.campaign")
    workspace = factory.SelfAttribute("enrollment.workspace")
    position = 1
    to_email = factory.SelfAttribute("enrollment.customer.email")
    status = EmailSend.Status.SENT
    sent_at = factory.LazyFunction(timezone.now)


class EndpointFactory(factory.django.DjangoModelFactory):
    """A webhook endpoint wanting every event type but clicks; its clear secret is on `endpoint.secret_clear`."""

    class Meta:
        model = Endpoint

    workspace = factory.SubFactory(WorkspaceFactory)
    url = "https://hooks.example.com/lftrack"
    event_types = factory.LazyFunction(lambda: [t for t in EVENT_TYPES if t != "click.created"])
    secret_clear = factory.LazyFunction(secret_new)
    secret = factory.LazyAttribute(lambda e: secret_seal(e.secret_clear))

    @classmethod
    def _create(cls, model_class, *args, secret_clear, **kwargs):
        endpoint = super()._create(model_class, *args, **kwargs)
        endpoint.secret_clear = secret_clear
        return endpoint
