"""Every pointer into the docs resolves: a `docs/X.md, "Heading"` or `README, "Heading"` in the code, the tests, the
docs and the README names a file that exists and a heading it has; a test named as `tests/x.py::test_name` exists;
every docs/ page is reachable from the README, and the README stays a front door.

A reference names a heading by its text (backticks dropped), or by the part before its ": " or " (": `"Money sums"`
names `## Money sums: bigint, not numeric`. So a renamed heading fails here until the code that names it follows."""

import re
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[1]

# Where references live: every text file of the project but the data it vendors.
TEXT_SUFFIXES = {".py", ".md", ".html", ".txt", ".js", ".css", ".sh", ".conf", ".toml", ".lua", ".sql", ".cfg"}
TEXT_NAMES = {"Makefile", "run"}
SKIPPED_FILES = {"tests/test_docs.py"}  # its examples of broken references
SKIPPED_DIRS = {".git", ".venv", ".pgdata", "__pycache__", "node_modules", "vendor", "iana", "screenshots"}

DOC = r"(?P<doc>README(?:\.md)?|docs/[\w-]+\.md)"
# `docs/X.md, "Heading"` (the heading may wrap onto the next comment line).
REFERENCE = re.compile(DOC + r'`?,\s+(?:#\s*)?"(?P<heading>[^"]{1,200}?)"')
# A pointer whose heading is not written in quotes: `(README, Configuration)`, `(docs/api.md, rate limits)`.
UNQUOTED = re.compile(DOC + r"`?,\s+(?:#\s*)?(?P<rest>[A-Za-z][\w' -]*[\w'])(?=[);])")
FILE = re.compile(r"\b(?:README\.md|docs/[\w-]+\.md)\b")
TEST = re.compile(r"\b(?P<file>tests/[\w/]+\.py)::(?P<test>test_\w+)")
# A figure cited beside a pointer into the benchmarks: a measured amount of time, work, memory or throughput.
FIGURE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(?:µs|ms|M\b|%|KB|MB|GB|req/s|instructions|emails/s|events/s)")
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#(?P<anchor>[^)\s]+))?\)")


def text_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
            continue
        if path.relative_to(root).as_posix() in SKIPPED_FILES:
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES) and path.name != "openapi.json":
            files.append(path)
    return files


def outline(markdown: str) -> list[tuple[str, list[str]]]:
    """Each heading outside code blocks (its text without #s and backticks) with the lines under it."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            found.append((match[1].replace("`", "").strip(), []))
        elif found:
            found[-1][1].append(line)
    return found


def headings(markdown: str) -> list[str]:
    return [heading for heading, _ in outline(markdown)]


def sections(markdown: str) -> dict[str, str]:
    """The text under each heading (to the next heading of any level), by each name of the heading."""
    return {name: " ".join(" ".join(lines).split()) for heading, lines in outline(markdown) for name in names(heading)}


def cited_figures(text: str, end: int) -> list[str]:
    """The figures of the sentence (or table cell) that a pointer ending at `end` closes."""
    before = text[max(0, end - 400) : end]
    cut = max(before.rfind(". "), before.rfind(".\n"), before.rfind("|"), before.rfind("\n\n"))
    return FIGURE.findall(before[cut + 1 :])


def names(heading: str) -> set[str]:
    """What a reference may call a heading: its text, or the part before its first ": " or " (" (and the part
    before its last " (", for a heading whose name holds a colon: "Money sums: bigint, not numeric (2026-11-25)")."""
    cuts = [heading.find(": "), heading.find(" ("), heading.rfind(" (")]
    return {heading} | {heading[:cut] for cut in cuts if cut > 0}


def doc_path(root: Path, doc: str) -> Path:
    return root / ("README.md" if doc.startswith("README") else doc)


def one_line(text: str) -> str:
    """A heading as written across lines of a comment or a docstring, as one line."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)


def problems(root: Path) -> list[str]:
    """Every reference under `root` that does not resolve, as `file:line: what`."""
    found = []
    known: dict[Path, set[str] | None] = {}

    def heading_names(path: Path) -> set[str] | None:
        if path not in known:
            known[path] = set().union(*map(names, headings(path.read_text()))) if path.exists() else None
        return known[path]

    for path in text_files(root):
        text = path.read_text(errors="replace")
        where = path.relative_to(root)

        def line_of(offset: int, text=text, where=where) -> str:
            return f"{where}:{text.count(chr(10), 0, offset) + 1}"

        for match in FILE.finditer(text):
            if not (root / match[0]).exists():
                found.append(f"{line_of(match.start())}: {match[0]} does not exist")
        for match in REFERENCE.finditer(text):
            heading = one_line(match["heading"])
            available = heading_names(doc_path(root, match["doc"]))
            if available is not None and heading not in available:
                found.append(f'{line_of(match.start())}: {match["doc"]} has no heading "{heading}"')
            elif available is not None and match["doc"].startswith("docs/benchmarks"):
                section = sections(doc_path(root, match["doc"]).read_text())[heading]
                for figure in cited_figures(text, match.start()):
                    if figure not in section:
                        found.append(f'{line_of(match.start())}: {figure} is not in {match["doc"]}, "{heading}"')
        for match in UNQUOTED.finditer(text):
            if not match["rest"].startswith(("docs/", "README")):
                found.append(f'{line_of(match.start())}: quote the heading: {match["doc"]}, "{match["rest"]}"')
        for match in TEST.finditer(text):
            test_file = root / match["file"]
            if not test_file.exists() or not re.search(rf"^\s*def {match['test']}\(", test_file.read_text(), re.M):
                found.append(f"{line_of(match.start())}: no test {match[0]}")
        if path.suffix == ".md":
            for match in LINK.finditer(text):
                target = match["target"]
                if "://" in target or target.startswith("mailto:"):
                    continue
                linked = (path.parent / target).resolve()
                if not linked.exists():
                    found.append(f"{line_of(match.start())}: the link to {target} leads nowhere")
                elif match["anchor"] and linked.suffix == ".md":
                    slugs = {slug(heading) for heading in headings(linked.read_text())}
                    if match["anchor"] not in slugs:
                        found.append(f"{line_of(match.start())}: {target} has no heading #{match['anchor']}")
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_reference_to_a_docs_heading_resolves():
    assert problems(BASE_DIR) == []


def test_a_renamed_heading_a_missing_test_or_a_figure_not_in_its_section_fails(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "docs" / "concurrency.md").write_text("# Concurrency\n\n## Fair shares\n\n```\n# not a heading\n```\n")
    (tmp_path / "tests" / "test_x.py").write_text("def test_shares():\n    pass\n")
    (tmp_path / "docs" / "benchmarks.md").write_text(
        "# B\n\n## Group commit\n\n187 µs alone, 44 µs in 16.\n## Next\n\n9 µs\n"
    )
    (tmp_path / "batch.py").write_text('# 44 µs a click in batches of 16 (docs/benchmarks.md, "Group commit").\n')
    (tmp_path / "README.md").write_text(
        'See [the locks](docs/concurrency.md#fair-shares) and docs/concurrency.md, "Fair shares".\n'
    )
    (tmp_path / "queue.py").write_text(
        '# A share per workspace (docs/concurrency.md, "Fair\n# shares"; tests/test_x.py::test_shares).\n'
    )
    assert problems(tmp_path) == []

    (tmp_path / "docs" / "concurrency.md").write_text("# Concurrency\n\n## Fair share\n")
    (tmp_path / "batch.py").write_text('# 9 µs a click in batches of 16 (docs/benchmarks.md, "Group commit").\n')
    (tmp_path / "queue.py").write_text(
        '# (docs/concurrency.md, "Fair shares"; docs/api.md, "Errors"; README, Configuration;\n'
        "# tests/test_x.py::test_x)\n"
        '# docs/matching.md, "not a heading"\n'
    )
    assert sorted(problems(tmp_path)) == sorted(
        [
            "README.md:1: docs/concurrency.md has no heading #fair-shares",
            'README.md:1: docs/concurrency.md has no heading "Fair shares"',
            'queue.py:1: docs/concurrency.md has no heading "Fair shares"',
            "queue.py:1: docs/api.md does not exist",
            'queue.py:1: quote the heading: README, "Configuration"',
            "queue.py:2: no test tests/test_x.py::test_x",
            "queue.py:3: docs/matching.md does not exist",
            'batch.py:1: 9 is not in docs/benchmarks.md, "Group commit"',
        ]
    )


def test_names_of_a_heading():
    assert names("Money sums: bigint, not numeric (2026-11-25)") == {
        "Money sums: bigint, not numeric (2026-11-25)",
        "Money sums",
        "Money sums: bigint, not numeric",
    }
    assert "GET /l/<key>" in names("GET /l/<key> (the redirect)")
    assert "Dashboard" not in names("Dashboard and back-office pages")
    assert headings("## `POST /api/v1/conversions`\n```\n# shell\n```\n### Refunds: `POST /x`") == [
        "POST /api/v1/conversions",
        "Refunds: POST /x",
    ]


def test_every_docs_page_is_reachable_from_the_readme():
    readme = (BASE_DIR / "README.md").read_text()
    pages = sorted(path.relative_to(BASE_DIR).as_posix() for path in (BASE_DIR / "docs").glob("*.md"))
    assert pages and [page for page in pages if f"({page}" not in readme] == []


def test_the_readme_is_a_front_door():
    """Under 200 lines, the dashboard's picture, and the two commands before anything else to run."""
    readme = (BASE_DIR / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "docs/screenshots/dashboard-1366.png" in readme
    first_block = re.search(r"^```\w*\n(.*?)^```", readme, re.M | re.S)[1]
    assert [line.split()[:2] for line in first_block.splitlines()] == [["make", "run"], ["make", "test"]]


def test_the_log_entries_the_current_figures_name_exist():
    """docs/benchmarks.md closes each section with the docs/benchmarks-log.md entries behind its figures."""
    current = (BASE_DIR / "docs" / "benchmarks.md").read_text()
    log = set().union(*map(names, headings((BASE_DIR / "docs" / "benchmarks-log.md").read_text())))
    named = [
        one_line(name)
        for entries in re.findall(
            r"Entr(?:y|ies):\s+(?:docs/benchmarks-log.md,\s+)?((?:\"[^\"]+\"(?:,\s+)?)+)", current
        )
        for name in re.findall(r"\"([^\"]+)\"", entries)
    ]
    assert len(named) >= 20
    assert [name for name in named if name not in log] == []
