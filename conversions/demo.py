"""The demo landing page of `make run` (DEBUG only): a signup form the pixel reports and a newsletter box it skips."""
from functools import wraps

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from campaigns.management.commands.demo import DEMO_SLUG
from conversions.models import ConversionEvent
from customers.models import Customer
from workspaces.models import Workspace


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
    workspace = Workspace.objects.filter(slug=DEMO_SLUG).first()
    return render(
        request,
        "demo/landing.html",
        # The snippet an integrator pastes: the script comes from our public address, wherever the page is.
        {"workspace": workspace, "script_url": settings.PUBLIC_BASE_URL + "/lf.js"},
    )


@debug_only
@require_POST
def demo_thanks(request: HttpRequest) -> HttpResponse:
    """Stands for the integrator's own signup handler; it shows what the pixel recorded on this click."""
    click_id = request.COOKIES.get("lf_cid", "")
    leads = (
        ConversionEvent.objects.filter(
            workspace__slug=DEMO_SLUG, click__click_id=click_id, channel=Customer.Channel.PIXEL
        )
        if click_id
        else ConversionEvent.objects.none()
    )
    return render(
        request,
        "demo/thanks.html",
        {
            "newsletter": request.POST.get("form") == "newsletter",
            "email": request.POST.get("email", ""),
            "name": request.POST.get("name", ""),
            "click_id": click_id,
            "leads": leads.select_related("customer", "link").order_by("-occurred_at")[:10],
        },
    )
