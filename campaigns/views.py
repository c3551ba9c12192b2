"""The pages behind the links of our emails: unsubscribe (GET asks, POST, also one-click RFC 8058, unsubscribes)
and double opt-in confirmation (GET asks, POST confirms); and the email providers' webhooks."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from campaigns.confirmation import confirm_token_read, enrollment_confirm
from campaigns.models import Enrollment
from campaigns.provider_hooks import PROVIDERS, Unauthorized, provider_events_record, provider_hook_authenticate
from campaigns.unsubscribe import unsubscribe as unsubscribe_address
from campaigns.unsubscribe import unsubscribe_target
from lftrack.errors import RateLimited, ServiceError, json_error
from lftrack.ratelimit import Limit, ip_key, limits_enforce, limits_reached

_TEMPLATE = "campaigns/unsubscribe.html"
_CONFIRM = "campaigns/confirm.html"
PAGES_PER_IP = (Limit("unsubscribe-ip", ip_key, "RATELIMIT_UNSUBSCRIBE_IP"),)


def _over_the_limit(request: HttpRequest) -> HttpResponse | None:
    """429 for an address past RATELIMIT_UNSUBSCRIBE_IP on these pages, shared by both."""
    try:
        limits_enforce(request, PAGES_PER_IP)
    except RateLimited as limited:
        response = HttpResponse("Too many requests; try again in a minute.", status=429, content_type="text/plain")
        response["Retry-After"] = str(limited.retry_after)
        return response
    return None


# csrf_exempt: mail clients' one-click POST (body `List-Unsubscribe=One-Click`) carries no cookie.
# The signed token is the credential, so a forged cross-site POST would need it anyway.
@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    if (limited := _over_the_limit(request)) is not None:
        return limited
    try:
        workspace, email = unsubscribe_target(token=token)
        if request.method == "POST":
            unsubscribe_address(workspace=workspace, email=email)
            state = "done"
        else:
            # GET changes nothing: link scanners and previews open links without asking anyone.
            state = "confirm"
    except ServiceError:
        return render(request, _TEMPLATE, {"state": "invalid"}, status=400)
    return render(request, _TEMPLATE, {"state": state, "workspace": workspace, "email": email})


@csrf_exempt  # the signed link is the credential; a person may open it in a browser with no session
@never_cache
@require_http_methods(["GET", "POST"])
def confirm(request: HttpRequest, token: str) -> HttpResponse:
    if (limited := _over_the_limit(request)) is not None:
        return limited
    try:
        enrollment_id = confirm_token_read(token)
    except ServiceError:
        return render(request, _CONFIRM, {"state": "invalid"}, status=400)
    enrollment = Enrollment.objects.select_related("campaign__workspace").filter(pk=enrollment_id).first()
    if enrollment is None:
        return render(request, _CONFIRM, {"state": "invalid"}, status=400)
    workspace = enrollment.campaign.workspace
    if request.method == "GET":  # link scanners open links: only the button confirms
        return render(request, _CONFIRM, {"state": "confirm", "workspace": workspace})
    if enrollment_confirm(enrollment_id=enrollment_id) is None:
        return render(request, _CONFIRM, {"state": "invalid"}, status=400)
    return render(request, _CONFIRM, {"state": "done", "workspace": workspace})


# Wrong secrets, per client address (checked first, counted when the secret fails: a provider's many
# calls from a few addresses never use it up); the calls of each workspace, per workspace.
HOOK_FAILURES_PER_IP = (Limit("email-hook-failures-ip", ip_key, "RATELIMIT_EMAIL_EVENTS_IP"),)
HOOKS_PER_WORKSPACE = (
    Limit(
        "email-hook-workspace", lambda group, request: str(request.provider_hook.workspace_id), "RATELIMIT_EMAIL_HOOKS"
    ),
)


# csrf_exempt: providers post without a cookie; the basic-auth secret (and a signature) is the credential.
@csrf_exempt
@require_http_methods(["POST", "HEAD"])
def provider_hook(request: HttpRequest, provider: str) -> HttpResponse:
    """/hooks/email/<provider>: an email provider's event webhook (campaigns/provider_hooks.py). JSON answers;
    401 carries a Basic challenge, which Amazon SNS waits for before it sends the credentials."""
    if provider not in PROVIDERS:
        return json_error(404, "unknown provider")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return json_error(400, "bad request")
    if length > settings.HOOK_MAX_BODY_BYTES:
        return json_error(413, "request too large")
    try:
        if (limited := limits_reached(request, HOOK_FAILURES_PER_IP)) is not None:
            raise limited
        try:
            request.provider_hook = provider_hook_authenticate(request)
        except Unauthorized:
            limits_enforce(request, HOOK_FAILURES_PER_IP)
            raise
        limits_enforce(request, HOOKS_PER_WORKSPACE)
        if request.method == "HEAD":  # some providers check the address with a HEAD first
            return HttpResponse()
        return JsonResponse(provider_events_record(request=request, provider=provider, hook=request.provider_hook))
    except RateLimited as limited:
        return json_error(429, limited.message, limited.headers())
    except Unauthorized as refused:
        return json_error(401, refused.message, {"WWW-Authenticate": 'Basic realm="lftrack email hooks"'})
    except ServiceError as error:
        return json_error(error.status_code, error.message)
