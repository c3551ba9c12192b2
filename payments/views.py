"""/hooks/payments/<token>: a connection's webhook endpoint, for the provider only (payments/services.py)."""

import re

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from lftrack.errors import RateLimited, json_error
from lftrack.ratelimit import Limit, ip_key, limits_enforce, limits_reached
from payments.models import Connection
from payments.readings import Unreadable
from payments.services import delivery_answer, delivery_receive, hook_read
from payments.signatures import SignatureRefused

_TOKEN = re.compile(r"^[\w-]{20,64}$")
# Refused deliveries (an unknown address, a bad signature), per client address: checked first, counted when
# refused, so a provider's many good deliveries from a few addresses never use it up.
FAILURES_PER_IP = (Limit("payment-hook-failures-ip", ip_key, "RATELIMIT_PAYMENT_HOOK_FAILURES_IP"),)
PER_CONNECTION = (
    Limit(
        "payment-hook-connection", lambda group, request: str(request.payment_connection.pk), "RATELIMIT_PAYMENT_HOOKS"
    ),
)


def _refused(request: HttpRequest, status: int, message: str) -> HttpResponse:
    limits_enforce(request, FAILURES_PER_IP)  # raises RateLimited past the limit: the 429 replaces this answer
    return json_error(status, message)


# csrf_exempt: the provider posts without a cookie; its signature over the raw body is the credential.
@csrf_exempt
@require_POST
def payment_hook(request: HttpRequest, token: str) -> HttpResponse:
    """200 with what became of the event (also when it is not attributed: the provider must stop retrying);
    400 when the signature or the payload is refused; 503 while the database is out of reach (the provider
    retries, and the retry is recorded once)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return json_error(400, "bad request")
    if length > settings.HOOK_MAX_BODY_BYTES:
        return json_error(413, "request too large")
    try:
        if (limited := limits_reached(request, FAILURES_PER_IP)) is not None:
            raise limited
        connection = None
        if _TOKEN.match(token):
            connection = (
                Connection.objects.select_related("workspace")
                .filter(url_token=token, disconnected_at__isnull=True)
                .first()
            )
        if connection is None:
            return _refused(request, 404, "unknown connection")
        try:
            reading = hook_read(connection=connection, body=request.body, headers=request.headers)
        except SignatureRefused as refused:
            return _refused(request, 400, refused.reason)
        except Unreadable:
            return _refused(request, 400, "invalid payload")
        # Counted once verified: without the secret, nobody can spend the connection's deliveries.
        request.payment_connection = connection
        limits_enforce(request, PER_CONNECTION)
        delivery = delivery_receive(connection=connection, reading=reading, body=request.body.decode())
        return JsonResponse(delivery_answer(delivery))
    except RateLimited as limited:
        return json_error(429, limited.message, limited.headers())
