"""Erased addresses' digests: how an erased person stays on the suppression list without their address.

docs/privacy.md, "The suppression digest": SHA-256 of `<workspace id>:<lower-cased address>`, written as
`sha256:<hex>` in Suppression.email. Not keyed with SECRET_KEY: rotating the key would silently forget every
erased person's suppression, and the sender would mail them again.
"""

import hashlib


def email_digest(*, workspace_id: int, email: str) -> str:
    """The digest an erased address is suppressed under in this workspace; '' for no address."""
    normalised = email.strip().lower()
    if not normalised:
        return ""
    return "sha256:" + hashlib.sha256(f"{workspace_id}:{normalised}".encode()).hexdigest()


def suppression_keys(*, workspace_id: int, email: str) -> list[str]:
    """What a suppression of this address may be stored under: the address, or its digest once erased."""
    if not email:
        return []
    return [email.lower(), email_digest(workspace_id=workspace_id, email=email)]
