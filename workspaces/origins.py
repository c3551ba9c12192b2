"""The browser origins a workspace allows to call the pixel's endpoint (CORS): written as browsers send them in
`Origin`, parsed from Settings, checked per request."""

from urllib.parse import urlsplit

from django.db import transaction

from lftrack.errors import Unprocessable
from workspaces.models import Workspace
from workspaces.tokens import workspace_changed


def allowed_origins_parse(text: str) -> list[str]:
    """The Settings field: one origin per line (commas too), normalized as browsers send them, deduplicated."""
    origins: list[str] = []
    for line in text.replace(",", "\n").splitlines():
        if not line.strip():
            continue
        origin = origin_normalize(line)
        if origin is None:
            raise Unprocessable(f"invalid origin: {line.strip()[:100]}")
        if origin not in origins:
            origins.append(origin)
    return origins


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_normalize(value: str) -> str | None:
    """`scheme://host[:port]` as a browser writes it in `Origin` (lower case, no default port), or None.

    Accepts what an operator types in the admin too: a trailing slash or a path is dropped.
    """
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username or parts.password:
        return None
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


def workspace_origins(workspace: Workspace) -> frozenset[str]:
    """The browser origins allowed to call the pixel's endpoint for `workspace` (one per line)."""
    return frozenset(filter(None, map(origin_normalize, workspace.allowed_origins.splitlines())))


def workspace_origin_allowed(workspace: Workspace, origin: str) -> bool:
    normalized = origin_normalize(origin)
    return normalized is not None and normalized in workspace_origins(workspace)


def origin_allowed_anywhere(origin: str) -> bool:
    """True when some workspace allows `origin`: a CORS preflight carries no key, only the origin."""
    normalized = origin_normalize(origin)
    if normalized is None:
        return False
    host = normalized.split("://", 1)[1]
    # A substring narrows the rows; the exact per-line comparison below decides.
    candidates = Workspace.objects.filter(allowed_origins__icontains=host).only("allowed_origins")
    return any(normalized in workspace_origins(workspace) for workspace in candidates.iterator())


def workspace_origin_allow(*, workspace: Workspace, origin: str) -> Workspace:
    """Add `origin` to the workspace's allowed origins (idempotent)."""
    normalized = origin_normalize(origin)
    if normalized is None:
        raise Unprocessable(f"invalid origin: {origin}")
    if normalized not in workspace_origins(workspace):
        lines = [line for line in workspace.allowed_origins.splitlines() if line.strip()]
        workspace.allowed_origins = "\n".join([*lines, normalized])
        workspace.save(update_fields=["allowed_origins"])
        transaction.on_commit(workspace_changed)
    return workspace
