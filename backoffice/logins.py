"""Back-office sign-in lockouts: django-axes counting wrong passwords per account and address, per address, and per
account from addresses it never signed in from (docs/security.md, "Back-office logins")."""

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt, AccessLog
from django.conf import settings
from django.db.models import Q, Sum
from django.http import HttpRequest


class LoginLockouts(AxesDatabaseHandler):
    """Wrong passwords of the last LOGIN_LOCKOUT_MINUTES, from the address as lftrack.ratelimit.client_key keys it
    (an IPv6 client by its /64), lock a sign-in out (429, before any password is hashed) when

    - the account had LOGIN_FAILURE_LIMIT of them from this address;
    - this address had LOGIN_ADDRESS_FAILURE_LIMIT of them, whatever the accounts;
    - the account had LOGIN_FAILURE_LIMIT of them from anywhere, and it never signed in from this address.

    Axes alone locked an account for everybody after its limit: anyone could keep its owner out with a few
    wrong passwords from any addresses. Now they lock the guessers out, while the owner still signs in from an
    address they used before; the owner's own typos lock that one address.
    """

    def get_failures(self, request: HttpRequest, credentials: dict | None = None) -> int:
        """The failures counted against the lockout that applies, on the scale of LOGIN_FAILURE_LIMIT, which axes
        compares this with (an address past its own limit counts as the whole of it)."""
        username = get_client_username(request, credentials)
        address = request.axes_ip_address
        recent = AccessAttempt.objects.filter(attempt_time__gte=get_cool_off_threshold(request))
        counts = recent.filter(Q(username=username) | Q(ip_address=address)).aggregate(
            pair=Sum("failures_since_start", filter=Q(username=username, ip_address=address), default=0),
            account=Sum("failures_since_start", filter=Q(username=username), default=0),
            address=Sum("failures_since_start", filter=Q(ip_address=address), default=0),
        )
        if counts["address"] >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            return settings.AXES_FAILURE_LIMIT
        if username and AccessLog.objects.filter(username=username, ip_address=address).exists():
            return counts["pair"]
        return counts["account"]

    def reset_user_attempts(self, request: HttpRequest, credentials: dict | None = None) -> int:
        """On a sign-in, forget the account's failures from this address only. Axes would forget every failure
        of the account and of the address: anyone with an account of their own could then guess other accounts'
        passwords without end, signing in to theirs between rounds."""
        username = get_client_username(request, credentials)
        deleted, _ = AccessAttempt.objects.filter(username=username, ip_address=request.axes_ip_address).delete()
        return deleted
