"""An email's preview (desktop and narrow, in sandboxed frames) with a chosen contact's data, and "Send me a test":
the same two views for a sequence step and for a broadcast, each resolved by a small function of its own kind."""

from dataclasses import dataclass

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from campaigns.broadcasts import EDITABLE
from campaigns.models import Broadcast, BroadcastRecipient, CampaignEmail, Enrollment
from campaigns.preview import content_preview, content_test_send
from campaigns.segments import segment_contacts
from customers.models import Customer
from lftrack.db import as_id
from lftrack.errors import ServiceError
from lftrack.ratelimit import Limit, ip_key, limit_exceeded

# Per signed-in user, steps and broadcasts alike: a test goes to their own address only, but each one is a real
# email on the workspace's sender reputation (docs/security.md, "HTML emails").
TEST_SENDS = Limit("test-sends-user", ip_key, "RATELIMIT_TEST_SENDS")
SAMPLE = ("Ada Lovelace", "ada@example.com")
CHOICES = 20  # contacts offered in the picker


@dataclass
class Previewed:
    """What is previewed, where its page sits, and the contacts its picker offers."""

    content: CampaignEmail | Broadcast
    heading: str  # the breadcrumb's last part: "#2" for a step, the broadcast's name
    parents: list[tuple[str, str]]  # the breadcrumbs above it: (url, label)
    preview_url: str
    test_url: str
    choices: QuerySet[Customer]


def _step(model_admin, request: HttpRequest, object_id: str, position: str) -> Previewed:
    campaign = model_admin.get_object(request, object_id)  # scoped to the user's workspaces
    if campaign is None:
        raise Http404("unknown campaign")
    step = (
        CampaignEmail.objects.filter(campaign=campaign, position=as_id(position) or 0)
        .select_related("workspace", "campaign")
        .first()
    )
    if step is None:
        raise Http404("unknown step")
    recent = Enrollment.objects.filter(campaign_id=campaign.pk).order_by("-enrolled_at", "-pk")
    args = [campaign.pk, step.position]
    return Previewed(
        content=step,
        heading=f"#{step.position}",
        parents=[
            (reverse("admin:campaigns_campaign_changelist"), "Campaigns"),
            (reverse("admin:campaigns_campaign_change", args=[campaign.pk]), str(campaign)),
        ],
        preview_url=reverse("admin:campaigns_campaign_preview", args=args),
        test_url=reverse("admin:campaigns_campaign_test_send", args=args),
        # The campaign's most recent recipients.
        choices=Customer.objects.filter(pk__in=recent.values("customer_id")[:CHOICES], is_test=False).exclude(email=""),
    )


def _broadcast(model_admin, request: HttpRequest, object_id: str) -> Previewed:
    broadcast = model_admin.get_object(request, object_id)  # scoped to the user's workspaces
    if broadcast is None:
        raise Http404("unknown broadcast")
    broadcast = Broadcast.objects.select_related("workspace", "segment").get(pk=broadcast.pk)
    if broadcast.status in EDITABLE:  # who it would go to now
        contacts = segment_contacts(workspace_id=broadcast.workspace_id, filters=broadcast.segment.filters)
        choices = Customer.objects.filter(pk__in=contacts.order_by("email").values("pk")[:CHOICES])
    else:  # who it went to: its first recipients (the unique (broadcast, customer) index)
        fixed = BroadcastRecipient.objects.filter(broadcast=broadcast).order_by("customer_id")
        choices = Customer.objects.filter(pk__in=fixed.values("customer_id")[:CHOICES]).exclude(email="")
    return Previewed(
        content=broadcast,
        heading=str(broadcast),
        parents=[
            (reverse("admin:campaigns_broadcast_changelist"), "Broadcasts"),
            (reverse("admin:campaigns_broadcast_change", args=[broadcast.pk]), str(broadcast)),
        ],
        preview_url=reverse("admin:campaigns_broadcast_preview", args=[broadcast.pk]),
        test_url=reverse("admin:campaigns_broadcast_test_send", args=[broadcast.pk]),
        choices=choices,
    )


def _previewed(model_admin, request: HttpRequest, object_id: str, position: str | None) -> Previewed:
    if model_admin.model is Broadcast:
        return _broadcast(model_admin, request, object_id)
    return _step(model_admin, request, object_id, position or "")


def _contact(previewed: Previewed, contact_id: str | None) -> Customer | None:
    """The contact chosen: any of the email's workspace with an address, or None for the sample."""
    chosen_id = as_id(contact_id)
    if chosen_id is None:
        return None
    workspace_id = previewed.content.workspace_id
    return Customer.objects.filter(pk=chosen_id, workspace_id=workspace_id).exclude(email="").first()


def preview_view(model_admin, request: HttpRequest, object_id: str, position: str | None = None) -> HttpResponse:
    """GET: the email filled for the chosen contact (or a sample), in two sandboxed frames of the layout."""
    previewed = _previewed(model_admin, request, object_id, position)
    chosen = _contact(previewed, request.GET.get("contact"))
    name, email = (chosen.name, chosen.email) if chosen else SAMPLE
    preview = content_preview(content=previewed.content, name=name, email=email)
    return model_admin.render_screen(
        request,
        "admin/campaigns/preview.html",
        {
            "previewed": previewed,
            "preview": preview,
            "choices": list(previewed.choices.order_by("email")),
            "chosen": chosen,
            "sample": SAMPLE,
            "recipient": request.user.email,
        },
        title=f"Preview of {previewed.heading} {preview.subject}",
    )


def send_test_view(model_admin, request: HttpRequest, object_id: str, position: str | None = None) -> HttpResponse:
    """POST: the email, filled for the chosen contact, to the signed-in user's own address; nothing recorded."""
    if request.method != "POST":
        raise PermissionDenied
    previewed = _previewed(model_admin, request, object_id, position)
    chosen = _contact(previewed, request.POST.get("contact"))
    name, email = (chosen.name, chosen.email) if chosen else SAMPLE
    back = previewed.preview_url + (f"?contact={chosen.pk}" if chosen else "")
    if limit_exceeded(TEST_SENDS, [f"user:{request.user.pk}"])[0]:
        model_admin.message_user(request, "Too many tests in a minute: wait a little.", messages.ERROR)
        return HttpResponseRedirect(back)
    try:
        content_test_send(content=previewed.content, name=name, email=email, to=request.user.email)
    except ServiceError as exc:
        model_admin.message_user(request, exc.message, messages.ERROR)
    else:
        model_admin.message_user(request, f"Test sent to {request.user.email}.", messages.SUCCESS)
    return HttpResponseRedirect(back)
