"""The back office's home page: a workspace's clicks, leads, sales and net revenue per day over a range, against
the range before, with its top posts and links, where the clicks came from, the numbers by country, UTM field or
tag, and the revenue per currency.

Every number comes from the daily roll-ups plus the rows not yet rolled up (rollups/selectors.py): four
statements whatever the range or the size of the workspace (five by tag) (docs/benchmarks.md, "Dashboard and back-office pages").
"""

from dataclasses import dataclass
from datetime import date, timedelta

from django.http import HttpRequest, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from backoffice.scoping import visible_workspaces
from campaigns.models import Campaign
from clicks.models import Link, Post, Tag
from lftrack.currencies import MINOR_UNITS, amount_text
from lftrack.db import as_id
from rollups.selectors import click_kinds, daily_numbers
from workspaces.models import Workspace

RANGES = (7, 30, 90)
DEFAULT_RANGE = 30
MAX_DAYS = 366
TOP = 10
KIND_LABELS = {"device": "Device", "browser": "Browser", "referrer": "Referrer"}
NO_VALUE = {"device": "unknown", "browser": "unknown", "referrer": "none (direct, an app or a private link)"}
# The breakdown table's dimensions (rollups/selectors.py, GROUPS), the first shown by default, and what a row
# without a value says.
BREAKDOWNS = {
    "country": ("Country", "unknown"),
    "utm_source": ("UTM source", "none"),
    "utm_medium": ("UTM medium", "none"),
    "utm_campaign": ("UTM campaign", "none"),
    "tag": ("Tag", "no tag"),
}
BREAKDOWN_ROWS = 20


@dataclass(frozen=True)
class Choice:
    """What the page shows, all of it from the URL (a view can be shared): workspace, days, filters."""

    workspace: Workspace
    since: date
    until: date
    range: str  # "7", "30", "90" or "custom"
    post: Post | None
    link: Link | None
    campaign: Campaign | None
    currency: str
    breakdown: str = "country"

    @property
    def days(self) -> int:
        return (self.until - self.since).days + 1

    @property
    def previous(self) -> tuple[date, date]:
        return self.since - timedelta(days=self.days), self.since - timedelta(days=1)

    def filters(self) -> dict:
        return {
            "link_ids": [self.link.pk] if self.link else None,
            "post_ids": [self.post.pk] if self.post else None,
            "campaign_ids": [self.campaign.pk] if self.campaign else None,
        }

    def query(self, **changes) -> str:
        """This view's URL query with `changes` (None drops a parameter)."""
        params = {
            "workspace": self.workspace.pk,
            "range": self.range,
            "post": self.post and self.post.pk,
            "link": self.link and self.link.pk,
            "campaign": self.campaign and self.campaign.pk,
            "currency": self.currency or None,
            "by": None if self.breakdown == "country" else self.breakdown,
        }
        if self.range == "custom":
            params.update(since=self.since.isoformat(), until=self.until.isoformat())
        params.update(changes)
        return "?" + urlencode({key: value for key, value in params.items() if value not in (None, "")})


def _day(raw: str | None) -> date | None:
    try:
        return date.fromisoformat(raw) if raw and len(raw) == 10 else None
    except ValueError:
        return None


def choice_from(request: HttpRequest, workspaces: list[Workspace]) -> tuple[Choice, list[str]]:
    """The view the URL asks for, and what of it was not understood (said on the page, never a 500)."""
    params: QueryDict = request.GET
    problems = []
    by_id = {workspace.pk: workspace for workspace in workspaces}
    workspace = by_id.get(as_id(params.get("workspace"))) or workspaces[0]
    today = timezone.now().date()
    range_ = params.get("range", str(DEFAULT_RANGE))
    since, until = _day(params.get("since")), _day(params.get("until"))
    if range_ == "custom" and since and until and since <= until <= today and (until - since).days < MAX_DAYS:
        pass
    else:
        if range_ == "custom":
            problems.append(
                f"A custom range needs two days, the first not after the second, at most {MAX_DAYS} days, "
                "none in the future: showing the last 30 days."
            )
        range_ = range_ if range_ in {str(days) for days in RANGES} else str(DEFAULT_RANGE)
        until = today
        since = today - timedelta(days=int(range_) - 1)

    def own(model, name: str):
        wanted = as_id(params.get(name))
        if wanted is None:
            return None
        found = model.objects.filter(pk=wanted, workspace=workspace).first()
        if found is None:
            problems.append(f"That {name} is not in {workspace.name}: showing all.")
        return found

    post, link, campaign = own(Post, "post"), own(Link, "link"), own(Campaign, "campaign")
    currency = (params.get("currency") or "").upper()[:3]
    breakdown = params.get("by", "country")
    if breakdown not in BREAKDOWNS:
        problems.append("Numbers break down by country, UTM source, medium or campaign, or tag: showing countries.")
        breakdown = "country"
    return Choice(workspace, since, until, range_, post, link, campaign, currency, breakdown), problems


def _change(now: int, before: int) -> dict:
    if before == 0:
        return {"text": "new" if now else "", "direction": "up" if now else "flat"}
    percent = round((now - before) * 100 / before)
    return {"text": f"{percent:+d}%", "direction": "up" if percent > 0 else "down" if percent < 0 else "flat"}


def _net(numbers: dict, currency: str) -> int:
    return next((entry["net_cents"] for entry in numbers["revenue"] if entry["currency"] == currency), 0)


def dashboard_context(choice: Choice) -> dict:
    """Everything the page draws: three statements (the two periods by day, the range by link, the click kinds)."""
    filters = choice.filters()
    before_since, _before_until = choice.previous
    by_day = daily_numbers(
        workspace_id=choice.workspace.pk, since=before_since, until=choice.until, group_by="day", **filters
    )["groups"]
    previous, current = by_day[: choice.days], by_day[choice.days :]
    totals = {name: sum(day[name] for day in current) for name in ("clicks", "leads", "sales")}
    before = {name: sum(day[name] for day in previous) for name in ("clicks", "leads", "sales")}
    currencies = sorted({entry["currency"] for day in by_day for entry in day["revenue"]})
    net_now = {cur: sum(_net(day, cur) for day in current) for cur in currencies}
    net_before = {cur: sum(_net(day, cur) for day in previous) for cur in currencies}
    # The chart's currency: the one asked for, else the one that brought the most (never two added together).
    currency = (
        choice.currency if choice.currency in currencies else max(currencies, key=lambda c: net_now[c], default="")
    )
    revenue = [
        {
            "currency": cur,
            "net": amount_text(net_now[cur], cur),
            "change": _change(net_now[cur], net_before[cur]),
            "gross": amount_text(
                sum(e["gross_cents"] for d in current for e in d["revenue"] if e["currency"] == cur), cur
            ),
            "refunded": amount_text(
                sum(e["refunded_cents"] for d in current for e in d["revenue"] if e["currency"] == cur), cur
            ),
            "sales": sum(e["sales"] for d in current for e in d["revenue"] if e["currency"] == cur),
            "url": choice.query(currency=cur),
        }
        for cur in currencies
        if net_now[cur] or net_before[cur]
    ]
    cards = [
        {"name": name.capitalize(), "value": f"{totals[name]:,}", "change": _change(totals[name], before[name])}
        for name in ("clicks", "leads", "sales")
    ]
    if currency:
        cards.append(
            {
                "name": f"Net revenue ({currency})",
                "value": amount_text(net_now[currency], currency),
                "change": _change(net_now[currency], net_before[currency]),
            }
        )
    by_link = daily_numbers(
        workspace_id=choice.workspace.pk, since=choice.since, until=choice.until, group_by="link", **filters
    )["groups"]
    top_links, top_posts = _tops(choice, by_link)
    kinds = click_kinds(workspace_id=choice.workspace.pk, since=choice.since, until=choice.until, **filters)
    return {
        "breakdown": _breakdown(choice),
        "cards": cards,
        "revenue": revenue,
        "chart": {
            "labels": [day["key"].isoformat() for day in current],
            "clicks": [day["clicks"] for day in current],
            "leads": [day["leads"] for day in current],
            "sales": [day["sales"] for day in current],
            "currency": currency,
            # In major units for the axis; the exact amounts are in the table.
            "revenue": [_net(day, currency) / 10 ** MINOR_UNITS.get(currency, 2) for day in current]
            if currency
            else [],
        },
        "top_links": top_links,
        "top_posts": top_posts,
        "kinds": [(KIND_LABELS[kind], _shares(kind, rows)) for kind, rows in kinds.items()],
    }


def _breakdown(choice: Choice) -> dict:
    """The range's numbers by the chosen dimension (a click's country or UTM field, a conversion's by its click; a
    link's tags, a link of two counted under both): the BREAKDOWN_ROWS with most clicks, the rest as one row."""
    groups = daily_numbers(
        workspace_id=choice.workspace.pk,
        since=choice.since,
        until=choice.until,
        group_by=choice.breakdown,
        **choice.filters(),
    )["groups"]
    label, none = BREAKDOWNS[choice.breakdown]
    names = (
        dict(Tag.objects.filter(pk__in=[g["key"] for g in groups if g["key"]]).values_list("pk", "name"))
        if choice.breakdown == "tag"
        else {}
    )
    rows = [
        {
            "value": names.get(g["key"], g["key"]) if g["key"] else none,
            "known": bool(g["key"]),
            "clicks": g["clicks"],
            "leads": g["leads"],
            "sales": g["sales"],
            "revenue": _revenue_lines(g["revenue"]),
        }
        for g in groups[:BREAKDOWN_ROWS]
    ]
    rest = groups[BREAKDOWN_ROWS:]
    if rest:
        money: dict[str, int] = {}
        for g in rest:
            for entry in g["revenue"]:
                money[entry["currency"]] = money.get(entry["currency"], 0) + entry["net_cents"]
        rows.append(
            {
                "value": f"{len(rest)} others",
                "known": False,
                **{name: sum(g[name] for g in rest) for name in ("clicks", "leads", "sales")},
                "revenue": [amount_text(v, c) for c, v in sorted(money.items())] or ["-"],
            }
        )
    return {
        "by": choice.breakdown,
        "label": label,
        "tabs": [(name, text, choice.query(by=name)) for name, (text, _) in BREAKDOWNS.items()],
        "rows": rows,
    }


def _revenue_lines(entries: list[dict]) -> list[str]:
    return [amount_text(entry["net_cents"], entry["currency"]) for entry in entries] or ["-"]


def _tops(choice: Choice, by_link: list[dict]) -> tuple[list[dict], list[dict]]:
    """The range's links and posts with most leads, then sales, then clicks: TOP of each. Only the TOP rows'
    names are read (a workspace may have thousands of links: their post ids come as plain tuples)."""

    def rank(group: dict) -> tuple:
        return (-group["leads"], -group["sales"], -group["clicks"])

    post_of = dict(Link.objects.filter(pk__in=[g["key"] for g in by_link]).values_list("pk", "post_id"))
    posts: dict[int, dict] = {}
    for group in by_link:
        if group["key"] not in post_of:
            continue
        post = posts.setdefault(post_of[group["key"]], {"clicks": 0, "leads": 0, "sales": 0, "money": {}})
        for name in ("clicks", "leads", "sales"):
            post[name] += group[name]
        for entry in group["revenue"]:
            post["money"][entry["currency"]] = post["money"].get(entry["currency"], 0) + entry["net_cents"]
    best_links = sorted((g for g in by_link if g["key"] in post_of), key=rank)[:TOP]
    best_posts = sorted(posts.items(), key=lambda item: rank(item[1]))[:TOP]
    links = Link.objects.in_bulk([g["key"] for g in best_links])
    titles = dict(Post.objects.filter(pk__in=[pk for pk, _ in best_posts]).values_list("pk", "title"))
    top_links = [
        {
            "name": f"/l/{links[g['key']].key}",
            "detail": links[g["key"]].destination,
            "clicks": g["clicks"],
            "leads": g["leads"],
            "sales": g["sales"],
            "revenue": _revenue_lines(g["revenue"]),
            "url": choice.query(link=g["key"]),
            "page": reverse("admin:clicks_link_change", args=[g["key"]]),
        }
        for g in best_links
    ]
    top_posts = [
        {
            "name": titles.get(pk, ""),
            "detail": "",
            "clicks": p["clicks"],
            "leads": p["leads"],
            "sales": p["sales"],
            "revenue": [amount_text(v, c) for c, v in sorted(p["money"].items())] or ["-"],
            "url": choice.query(post=pk),
            "page": reverse("admin:clicks_post_change", args=[pk]),
        }
        for pk, p in best_posts
    ]
    return top_links, top_posts


def _shares(kind: str, rows: list[tuple[str, int]]) -> list[dict]:
    total = sum(count for _, count in rows) or 1
    shown = rows[:8]
    rest = sum(count for _, count in rows[8:])
    entries = [
        {"value": value or NO_VALUE[kind], "clicks": count, "share": round(count * 100 / total)}
        for value, count in shown
    ]
    if rest:
        entries.append({"value": "others", "clicks": rest, "share": round(rest * 100 / total)})
    return entries


def filter_choices(choice: Choice) -> dict:
    """The campaign and post pickers of the workspace (posts: the newest 300, titles cut to 60 characters, and the
    chosen one)."""
    posts = [
        (pk, title[:60])
        for pk, title in Post.objects.filter(workspace=choice.workspace)
        .order_by("-created_at", "-pk")
        .values_list("pk", "title")[:300]
    ]
    if choice.post and all(pk != choice.post.pk for pk, _ in posts):
        posts.insert(0, (choice.post.pk, choice.post.title))
    campaigns = list(
        Campaign.objects.filter(workspace=choice.workspace).order_by("name", "pk").values_list("pk", "name")
    )
    return {"posts": posts, "campaigns": campaigns}


def dashboard_page(site, request: HttpRequest) -> TemplateResponse | None:
    """The home page for one of the user's workspaces; None for someone without one."""
    workspaces = list(visible_workspaces(request))
    if not workspaces:
        return None
    choice, problems = choice_from(request, workspaces)
    context = {
        **site.each_context(request),
        "title": f"{choice.workspace.name}: dashboard" if len(workspaces) > 1 else "Dashboard",
        "choice": choice,
        "workspaces": workspaces,
        "ranges": [(str(days), f"{days} days", choice.query(range=days, since=None, until=None)) for days in RANGES],
        "problems": problems,
        "clear_urls": {name: choice.query(**{name: None}) for name in ("post", "link", "campaign")},
        **filter_choices(choice),
        **dashboard_context(choice),
    }
    return TemplateResponse(request, "admin/dashboard.html", context)
