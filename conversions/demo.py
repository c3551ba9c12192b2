"""The demo landing page of `make run` (DEBUG only): a signup form the pixel reports and a newsletter box it skips."""

from functools import wraps

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from campaigns.management.commands.demo import DEMO_SLUG
from conversions.models import ConversionEvent
from customers.models import Customer
from workspaces.selectors import workspace_by_slug

SESSION_KEY = "demo_signup"
MAX_TRIES = 5


def debug_only(view):
    """A page for local development: without DEBUG it does not exist (404)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not settings.DEBUG:
            raise Http404("demo pages are served only with DEBUG on")
        return view(request, *args, **kwargs)

    return wrapper


@debug_only
@require_GET
def demo_landing(request: HttpRequest) -> HttpResponse:
    workspace = workspace_by_slug(slug=DEMO_SLUG)
    return render(
        request,
        "demo/landing.html",
        # The snippet an integrator pastes: the script comes from our public address, wherever the page is.
        {"workspace": workspace, "script_url": settings.PUBLIC_BASE_URL + "/lf.js"},
    )


@debug_only
@require_http_methods(["GET", "POST"])
def demo_thanks(request: HttpRequest) -> HttpResponse:
    """Stands for the integrator's own signup handler (POST, then a redirect), and shows what the pixel
    recorded on this visitor's click. The pixel's request travels beside the form's, so the page
    looks again a few times, once a second, until the lead is there."""
    if request.method == "POST":
        request.session[SESSION_KEY] = {field: request.POST.get(field, "")[:254] for field in ("form", "email", "name")}
        return redirect("demo-thanks")
    submitted = request.session.get(SESSION_KEY, {})
    click_id = request.COOKIES.get("lf_cid", "")
    leads = []
    if click_id:
        leads = list(
            ConversionEvent.objects.filter(
                workspace__slug=DEMO_SLUG, click__click_id=click_id, channel=Customer.Channel.PIXEL
            )
            .select_related("customer", "link")
            .order_by("-occurred_at")[:10]
        )
    attempt = _tries(request.GET.get("try"))
    return render(
        request,
        "demo/thanks.html",
        {
            "newsletter": submitted.get("form") == "newsletter",
            "email": submitted.get("email", ""),
            "name": submitted.get("name", ""),
            "click_id": click_id,
            "leads": leads,
            "next_try": attempt + 1 if click_id and not leads and attempt < MAX_TRIES else None,
        },
    )


def _tries(value: str | None) -> int:
    try:
        return max(0, min(int(value or 0), MAX_TRIES))
    except ValueError:
        return MAX_TRIES
