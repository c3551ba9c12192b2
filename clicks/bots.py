"""Which visits of a link are not a person: crawlers, link-preview fetchers, monitors and prefetches."""

import functools

from crawlerdetect import CrawlerDetect

# The maintained list of crawler user agents (crawlerdetect, a port of JayBizzle/Crawler-Detect): search
# engines, the preview fetchers of social networks and chat apps, uptime monitors, HTTP libraries.
# One detector per process: building it compiles the list (0.13 ms); a check costs microseconds.
_detector = CrawlerDetect()
_PREFETCH = {"prefetch", "prerender"}


def is_bot(*, user_agent: str, meta: dict) -> bool:
    """A visit that no person made: no user agent, a known crawler's, or a browser's prefetch
    (`Purpose: prefetch`, `Sec-Purpose: prefetch`) of a page the person may never open."""
    for header in ("HTTP_PURPOSE", "HTTP_SEC_PURPOSE", "HTTP_X_PURPOSE", "HTTP_X_MOZ"):
        purpose = meta.get(header, "")
        if purpose and any(word in _PREFETCH for word in purpose.replace(";", ",").replace(" ", ",").split(",")):
            return True
    return not user_agent.strip() or _is_crawler(user_agent)


@functools.lru_cache(maxsize=10_000)
def _is_crawler(user_agent: str) -> bool:
    """Kept for the 10,000 latest user agents of the process: the list is one large regular expression, and
    a click's visitors share a few user agents (35,000 instructions a redirect saved: docs/benchmarks.md,
    "Per-process caches on the redirect")."""
    return _detector.isCrawler(user_agent)
