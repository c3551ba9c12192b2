"""GET /l/<key>: record a click and redirect with `lf_cid`."""
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_safe

from clicks.models import Link
from clicks.services import click_record, destination_with_click_id


@require_safe
def follow_link(request: HttpRequest, key: str) -> HttpResponse:
    row = Link.objects.filter(key=key).values_list("pk", "workspace_id", "destination").first()
    if row is None:
        raise Http404("unknown link")
    link_id, workspace_id, destination = row
    if request.method == "HEAD":  # link previews and monitors: answer, but record no click
        response = HttpResponseRedirect(destination)
    else:
        click = click_record(
            link_id=link_id,
            workspace_id=workspace_id,
            user_agent=request.META.get("HTTP_USER_AGENT", ""),
            referrer=request.META.get("HTTP_REFERER", ""),
        )
        response = HttpResponseRedirect(destination_with_click_id(destination, click.click_id))
    # Every visit must reach us to be counted: no browser or proxy may cache the redirect.
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer-when-downgrade"
    return response
