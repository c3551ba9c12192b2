"""Endpoint signing secrets: made per the Standard Webhooks spec, encrypted at rest with a key from SECRET_KEY.

The secret must be usable to sign (HMAC-SHA256), so it cannot be kept as a hash the way API tokens
are. It is stored encrypted (Fernet: AES-128-CBC with an HMAC) under a key derived from SECRET_KEY,
and each of SECRET_KEY_FALLBACKS can still decrypt, so rotating SECRET_KEY the Django way keeps every
endpoint working. A copy of the database alone (a backup, a replica) yields no usable secret.
"""

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings

PREFIX = "whsec_"
_SALT = b"lftrack.webhooks.secret"


def secret_new() -> str:
    """`whsec_` and 32 random bytes in base64, as Standard Webhooks receivers (and its library) read it."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _fernet(key: str) -> Fernet:
    digest = hashlib.sha256(_SALT + key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _keys() -> MultiFernet:
    return MultiFernet([_fernet(settings.SECRET_KEY), *map(_fernet, getattr(settings, "SECRET_KEY_FALLBACKS", []))])


def secret_seal(secret: str) -> str:
    return _keys().encrypt(secret.encode()).decode()


def secret_open(sealed: str) -> str:
    return _keys().decrypt(sealed.encode()).decode()
