"""What marketers filter clicks by: device type, browser and OS from the user agent, the referrer's domain.

The user agent is parsed by ua-parser (the maintained uap-core rules; its Rust matcher, ua-parser-rs,
parses a new user agent in about 20 µs: docs/benchmarks.md, "Per-process caches on the redirect") and kept
per process for the 10,000 most recent user-agent strings, so a burst of one post's clicks costs a
dictionary lookup each.
"""

from functools import lru_cache
from urllib.parse import urlsplit

import ua_parser

# The device types clicks are filed under; "bot" for what clicks/bots.py flags.
DEVICE_TYPES = ("desktop", "mobile", "tablet", "bot", "other")
_DESKTOP_OS = {"Windows", "Mac OS X", "Linux", "Ubuntu", "Chrome OS", "ChromeOS", "Fedora", "FreeBSD", "Debian"}


@lru_cache(maxsize=10_000)
def user_agent_describe(user_agent: str, is_bot: bool) -> tuple[str, str, str]:
    """(device type, browser family, OS family) of a user agent; "" where it says nothing."""
    if not user_agent:
        return ("bot" if is_bot else "other"), "", ""
    parsed = ua_parser.parse(user_agent)
    browser = parsed.user_agent.family if parsed.user_agent else ""
    os = parsed.os.family if parsed.os else ""
    device = parsed.device.family if parsed.device else ""
    if is_bot or device == "Spider":
        kind = "bot"
    elif "iPad" in device or "Tablet" in device or "Kindle" in device:
        kind = "tablet"
    elif os == "iOS" or (os == "Android" and "Mobile" in user_agent) or "Phone" in device:
        kind = "mobile"
    elif os == "Android":  # Android without "Mobile": a tablet, by Google's own rule for its user agents
        kind = "tablet"
    elif os in _DESKTOP_OS:
        kind = "desktop"
    else:
        kind = "other"
    return kind, ("" if browser == "Other" else browser)[:50], ("" if os == "Other" else os)[:50]


def referrer_domain(referrer: str) -> str:
    """The referrer's host, lower-case, without `www.`; "" for none or one that does not parse."""
    try:
        host = (urlsplit(referrer).hostname or "") if referrer else ""
    except ValueError:
        return ""
    return host.removeprefix("www.")[:255]
