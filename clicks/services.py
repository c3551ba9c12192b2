"""Link creation and click recording, including the `lf_cid` rewrite of destinations."""
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction

from clicks.models import Click, Link, Post
from lftrack.errors import Unprocessable
from workspaces.models import Workspace

CLICK_PARAM = "lf_cid"
_url_validator = URLValidator(schemes=["http", "https"])


def destination_with_click_id(destination: str, click_id: str) -> str:
    """`destination` with `lf_cid=<click_id>`: other parameters and the fragment kept byte for byte."""
    parts = urlsplit(destination)
    kept = [p for p in parts.query.split("&") if p and unquote(p.split("=", 1)[0]) != CLICK_PARAM]
    kept.append(f"{CLICK_PARAM}={quote(click_id, safe='')}")
    return urlunsplit(parts._replace(query="&".join(kept)))


def click_record(
    *, link_id: int, workspace_id: int, user_agent: str = "", referrer: str = "", is_bot: bool = False
) -> Click:
    """One INSERT: the redirect is the hottest path of the product."""
    return Click.objects.create(
        link_id=link_id,
        workspace_id=workspace_id,
        user_agent=_clean(user_agent, 512),
        referrer=_clean(referrer, 2048),
        is_bot=is_bot,
    )


def _clean(value: str, limit: int) -> str:
    return value.replace("\x00", "")[:limit]


@transaction.atomic
def link_create(*, workspace: Workspace, destination: str, post_title: str | None = None) -> Link:
    """A tracked link. `post_title` names an existing or new post; without it the link gets its own post."""
    if len(destination) > 2048:
        raise Unprocessable("destination is too long")
    try:
        _url_validator(destination)
    except ValidationError:
        raise Unprocessable("destination must be an http or https URL") from None
    if post_title:
        post = Post.objects.filter(workspace=workspace, title=post_title[:200]).order_by("pk").first()
        if post is None:
            post = Post.objects.create(workspace=workspace, title=post_title[:200])
    else:
        post = Post.objects.create(workspace=workspace, title=destination[:200])
    for _ in range(5):  # a 48-bit key collides almost never; retry rather than fail when it does
        try:
            with transaction.atomic():
                return Link.objects.create(workspace=workspace, post=post, destination=destination)
        except IntegrityError:
            continue
    raise RuntimeError("could not allocate a unique link key")
