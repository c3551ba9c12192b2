"""A sequence step's preview (desktop and narrow, in sandboxed frames) with a chosen contact's data, and "Send me a test"."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from campaigns.models import CampaignEmail, Enrollment
from campaigns.preview import step_preview, step_test_send
from customers.models import Customer
from lftrack.db import as_id
from lftrack.errors import ServiceError
from lftrack.ratelimit import Limit, ip_key, limit_exceeded

# Per signed-in user: a test goes to their own address only, but each one is a real email on the workspace's
# sender reputation (docs/security.md, "HTML emails").
TEST_SENDS = Limit("test-sends-user", ip_key, "RATELIMIT_TEST_SENDS")
SAMPLE = ("Ada Lovelace", "ada@example.com")
CHOICES = 20  # contacts offered in the picker: the campaign's most recent recipients


def _step(model_admin, request: HttpRequest, object_id: str, position: str) -> CampaignEmail:
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
    return step


def _contact(step: CampaignEmail, contact_id: str | None) -> tuple[Customer | None, list[Customer]]:
    """The contact chosen (of the step's workspace, or None for the sample) and the picker's choices."""
    recent = Enrollment.objects.filter(campaign_id=step.campaign_id).order_by("-enrolled_at", "-pk")
    choices = list(
        Customer.objects.filter(pk__in=recent.values("customer_id")[:CHOICES], is_test=False)
        .exclude(email="")
        .order_by("email")
    )
    chosen_id = as_id(contact_id)
    chosen = None
    if chosen_id is not None:
        chosen = Customer.objects.filter(pk=chosen_id, workspace_id=step.workspace_id).exclude(email="").first()
    return chosen, choices


def preview_view(model_admin, request: HttpRequest, object_id: str, position: str) -> HttpResponse:
    """GET: the step filled for the chosen contact (or a sample), in two sandboxed frames of the layout."""
    step = _step(model_admin, request, object_id, position)
    chosen, choices = _contact(step, request.GET.get("contact"))
    name, email = (chosen.name, chosen.email) if chosen else SAMPLE
    preview = step_preview(step=step, name=name, email=email)
    return model_admin.render_screen(
        request,
        "admin/campaigns/campaign/preview.html",
        {
            "step": step,
            "campaign": step.campaign,
            "preview": preview,
            "choices": choices,
            "chosen": chosen,
            "sample": SAMPLE,
            "recipient": request.user.email,
            "can_test": model_admin.has_view_permission(request, step.campaign),
        },
        title=f"Preview of #{step.position} {preview.subject}",
    )


def test_send_view(model_admin, request: HttpRequest, object_id: str, position: str) -> HttpResponse:
    """POST: the step, filled for the chosen contact, to the signed-in user's own address; nothing recorded."""
    if request.method != "POST":
        raise PermissionDenied
    step = _step(model_admin, request, object_id, position)
    chosen, _ = _contact(step, request.POST.get("contact"))
    name, email = (chosen.name, chosen.email) if chosen else SAMPLE
    back = reverse("admin:campaigns_campaign_preview", args=[step.campaign_id, step.position])
    if chosen:
        back += f"?contact={chosen.pk}"
    if limit_exceeded(TEST_SENDS, [f"user:{request.user.pk}"])[0]:
        model_admin.message_user(request, "Too many tests in a minute: wait a little.", messages.ERROR)
        return HttpResponseRedirect(back)
    try:
        step_test_send(step=step, name=name, email=email, to=request.user.email)
    except ServiceError as exc:
        model_admin.message_user(request, exc.message, messages.ERROR)
    else:
        model_admin.message_user(request, f"Test sent to {request.user.email}.", messages.SUCCESS)
    return HttpResponseRedirect(back)
