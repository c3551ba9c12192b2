"""HTML email bodies: Markdown rendered and sanitized on save, their plain-text part, links and placeholders at send."""

import html
import re
from collections.abc import Callable
from html.parser import HTMLParser

import nh3
from markdown_it import MarkdownIt

from campaigns.mail import PLACEHOLDER_RE, placeholder_values

MAX_MARKDOWN = 100_000  # characters: a long newsletter is 20,000

# CommonMark plus tables and strikethrough. Inline HTML is let through to the sanitizer, which keeps what an
# email may hold: raw HTML is how authors reach for <u> or a centred image, and nh3 decides what stays.
_markdown = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])

# The allow-list (docs/security.md, "HTML emails"): text structure, links and images. No <style>, <link>,
# <script>, <iframe> or <form>; no `style` or `on*` attribute (remote CSS rides in `style` as url(...));
# URLs http, https and mailto only (no javascript:, data: or file:).
_TAGS = {
    *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code"),
    *("strong", "b", "em", "i", "u", "s", "del", "sub", "sup", "small", "span", "div"),
    *("ul", "ol", "li", "a", "img", "table", "thead", "tbody", "tr", "th", "td"),
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "width", "height", "title"},
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
}
_SCHEMES = {"http", "https", "mailto"}


class HtmlBody:
    """A step's HTML part (sanitized) and the plain-text part generated from it."""

    def __init__(self, html: str, text: str):
        self.html, self.text = html, text


def markdown_render(markdown: str) -> HtmlBody:
    """Markdown as the sanitized HTML fragment stored on the step, and its plain-text part."""
    fragment = html_sanitize(_markdown.render(markdown))
    return HtmlBody(html=fragment, text=html_to_text(fragment))


def html_sanitize(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    ).strip()


# Sanitized HTML is html5ever's serialization: every attribute value double-quoted, `"` and `&` escaped
# inside, so a regex finds each href exactly (it would not on HTML as a person writes it).
_HREF_RE = re.compile(r'(<a\b[^>]*?\bhref=")([^"]*)(")')
_TEXT_URL_RE = re.compile(r"https?://[^\s<>\"']+")
_TRAILING = ".,;:!?)]"


def html_links(fragment: str) -> list[str]:
    """The http(s) destinations of the fragment's links, in order, each once."""
    found = (html.unescape(match.group(2)) for match in _HREF_RE.finditer(fragment))
    return list(dict.fromkeys(url for url in found if _is_web(url)))


def text_links(text: str) -> list[str]:
    return list(dict.fromkeys(_text_url(match.group(0)) for match in _TEXT_URL_RE.finditer(text)))


def html_links_replace(fragment: str, replace: Callable[[str], str | None]) -> str:
    """Each http(s) href through `replace(destination)`; None keeps it."""

    def swap(match: re.Match) -> str:
        url = html.unescape(match.group(2))
        new = replace(url) if _is_web(url) else None
        return match.group(0) if new is None else f"{match.group(1)}{html.escape(new)}{match.group(3)}"

    return _HREF_RE.sub(swap, fragment)


def text_links_replace(text: str, replace: Callable[[str], str | None]) -> str:
    def swap(match: re.Match) -> str:
        url = _text_url(match.group(0))
        new = replace(url)
        return match.group(0) if new is None else new + match.group(0)[len(url) :]

    return _TEXT_URL_RE.sub(swap, text)


def html_placeholders_fill(fragment: str, *, name: str, email: str) -> str:
    """`{{ name }}` and `{{ email }}` in sanitized HTML, the values escaped: a contact's name is text, never markup."""
    values = {key: html.escape(value) for key, value in placeholder_values(name=name, email=email).items()}
    return PLACEHOLDER_RE.sub(lambda match: values[match.group(1)], fragment)


def _is_web(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def _text_url(url: str) -> str:
    # "see https://x.example/a." or "(https://x.example/a)": the sentence's punctuation is not the link's.
    return url.rstrip(_TRAILING)


class _TextWriter(HTMLParser):
    """Sanitized HTML as plain text: blocks apart, list items as "- ", links as "label (url)", images as their alt."""

    _BLOCKS = {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "ul", "ol", "table", "hr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.href: list[str | None] = []
        self.link_text: list[str] = []
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag in self._BLOCKS:
            self.out.append("\n\n")
        if tag == "pre":
            self.pre += 1
        elif tag == "br":
            self.out.append("\n")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag == "tr":
            self.out.append("\n")
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag == "hr":
            self.out.append("----")
        elif tag == "img" and attributes.get("alt"):
            self.out.append(attributes["alt"] or "")
        elif tag == "a":
            self.href.append(attributes.get("href"))
            self.link_text.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self.href:
            href, label = self.href.pop(), self.link_text.pop().strip()
            if href and href != label and not href.startswith("mailto:"):
                self.out.append(f" ({href})")
        elif tag == "pre":
            self.pre -= 1
        if tag in self._BLOCKS:
            self.out.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.pre:
            data = re.sub(r"\s+", " ", data)
        if self.link_text:
            self.link_text[-1] += data
        self.out.append(data)


def html_to_text(fragment: str) -> str:
    writer = _TextWriter()
    writer.feed(fragment)
    writer.close()
    lines = [line.strip() if not line.startswith("    ") else line.rstrip() for line in "".join(writer.out).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
