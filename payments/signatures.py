"""Verifying a delivery with the provider's own rules, before a byte of its body is parsed."""

import base64
import hashlib
import hmac
from collections.abc import Mapping

import stripe

# Stripe's own default, and what its libraries apply: an older signature is a replay.
STRIPE_TOLERANCE_SECONDS = 300


class SignatureRefused(Exception):
    """The delivery is not the provider's (answered 400, recorded nowhere but the connection's log)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def stripe_verify(body: bytes, headers: Mapping[str, str], secrets: list[str]) -> None:
    """`Stripe-Signature` checked by Stripe's own library (stripe.WebhookSignature): any `v1` signature of the
    header made with any of `secrets` (ours and Stripe's rolls overlap), over `<t>.<raw body>`, at most
    STRIPE_TOLERANCE_SECONDS old."""
    header = headers.get("Stripe-Signature")
    if not header:
        raise SignatureRefused("no Stripe-Signature header")
    if not secrets:
        raise SignatureRefused("no signing secret on this connection")
    stale = False
    for secret in secrets:
        try:
            stripe.WebhookSignature.verify_header(body, header, secret, STRIPE_TOLERANCE_SECONDS)
            return
        except stripe.SignatureVerificationError as error:
            stale = stale or "tolerance" in str(error)  # signed with this secret, but too long ago
        except UnicodeDecodeError:  # Stripe signs text: a body that is not UTF-8 is not Stripe's
            break
    raise SignatureRefused("stale timestamp" if stale else "invalid signature")


def shopify_verify(body: bytes, headers: Mapping[str, str], secrets: list[str]) -> None:
    """`X-Shopify-Hmac-Sha256`: base64 of HMAC-SHA256 over the raw body with the app's or store's secret."""
    header = headers.get("X-Shopify-Hmac-Sha256")
    if not header:
        raise SignatureRefused("no X-Shopify-Hmac-Sha256 header")
    if not secrets:
        raise SignatureRefused("no signing secret on this connection")
    for secret in secrets:
        expected = base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()
        if hmac.compare_digest(expected, header.strip()):
            return
    raise SignatureRefused("invalid signature")


def stripe_sign(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """A `Stripe-Signature` header for `body` (the back office's "Send a test event"), by Stripe's own helper."""
    return stripe.WebhookSignature.generate_signature_header(body.decode(), secret, timestamp)


def shopify_sign(body: bytes, secret: str) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()
