"""Link creation and click recording, including the `lf_cid` rewrite of destinations."""
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction

from clicks.agents import referrer_domain, user_agent_describe
from clicks.models import Click, Link, Post, new_click_id
from lftrack.db import prepared_cursor
from lftrack.errors import Unprocessable
from webhooks.outbox import EVENT_TABLE, event_queue, wanted_sql
from workspaces.models import Workspace

CLICK_PARAM = "lf_cid"
_url_validator = URLValidator(schemes=["http", "https"])


def destination_with_click_id(destination: str, click_id: str) -> str:
    """`destination` with `lf_cid=<click_id>`: other parameters and the fragment kept byte for byte."""
    parts = urlsplit(destination)
    kept = [p for p in parts.query.split("&") if p and unquote(p.split("=", 1)[0]) != CLICK_PARAM]
    kept.append(f"{CLICK_PARAM}={quote(click_id, safe='')}")
    return urlunsplit(parts._replace(query="&".join(kept)))


# The redirect's one statement: find the link by its key, insert the click and return the destination,
# in one round trip and one commit (autocommit), prepared once per connection (lftrack/db.py). No row
# for an unknown key, and then no click. 0.26 ms of PostgreSQL and 0.4 ms of Python less than the ORM's
# lookup and insert did (docs/benchmarks.md, "GET /l/<key>"). The same statement writes the
# `click.created` webhook event, only for a workspace with an endpoint that asked for clicks: else it
# costs one probe of an empty index (docs/benchmarks.md, "Webhooks").
_FOLLOW_SQL = f"""
WITH link AS (SELECT id, workspace_id, destination FROM {Link._meta.db_table} WHERE key = %s),
click AS (
    INSERT INTO {Click._meta.db_table}
        (workspace_id, link_id, click_id, created_at, user_agent, referrer, is_bot, device, browser, os, referrer_domain)
    SELECT workspace_id, id, %s, now(), %s, %s, %s, %s, %s, %s, %s FROM link
    RETURNING id, workspace_id
),
event AS (
    INSERT INTO {EVENT_TABLE} (workspace_id, type, test, subject_id, detail, created_at)
    SELECT workspace_id, 'click.created', FALSE, id, '{{}}', now() FROM click
    WHERE {wanted_sql(workspace="click.workspace_id", event_type="'click.created'", test="FALSE")}
    RETURNING id
)
SELECT destination, (SELECT id FROM event), workspace_id FROM link
"""
_DESTINATION_SQL = f"SELECT destination FROM {Link._meta.db_table} WHERE key = %s"


def click_follow(*, key: str, user_agent: str, referrer: str, is_bot: bool) -> tuple[str, str] | None:
    """Record a click of the link `key`: (its destination, the new click id), or None for no such link."""
    user_agent, referrer = _clean(user_agent, 512), _clean(referrer, 2048)
    device, browser, os = user_agent_describe(user_agent, is_bot)
    click_id = new_click_id()
    with prepared_cursor() as cursor:
        cursor.execute(
            _FOLLOW_SQL,
            [key, click_id, user_agent, referrer, is_bot, device, browser, os, referrer_domain(referrer)],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    if row[1] is not None:  # committed with its click (autocommit); the sweeper covers a death right here
        event_queue(event_id=row[1], workspace_id=row[2], customer_id=None)
    return row[0], click_id


def link_destination(key: str) -> str | None:
    """The destination of the link `key`, recording nothing (a HEAD, a visitor past the click limit)."""
    with prepared_cursor() as cursor:
        cursor.execute(_DESTINATION_SQL, [key])
        row = cursor.fetchone()
    return None if row is None else row[0]


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
