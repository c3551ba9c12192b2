"""Every example of the README and docs/ runs. The ```console sessions (docs/cli.md), top to bottom on a fresh
database: each command works as written and prints what the page shows (`...` stands for any text: secrets,
times). The curl examples (the README's tour, then docs/), in order against a server with `make run`'s demo
data: each answers the status and JSON shape it shows. A page with an example in neither list fails."""

import io
import itertools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.conftest import database_url
from tests.faults.conftest import running_gunicorn

BASE_DIR = Path(__file__).resolve().parents[1]


def console_steps(markdown: str) -> list[tuple[str, str]]:
    """(command, expected output) of every `$ ` line of the console blocks, in order."""
    steps = []
    for block in re.findall(r"^```console\n(.*?)^```", markdown, re.M | re.S):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            steps.append((command, output))
    return steps


def shows(expected: str, actual: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.strip().split("..."))
    return re.fullmatch(pattern, actual.strip(), re.S) is not None


def test_console_steps_and_wildcards():
    markdown = "x\n```console\n$ echo a  # note\na\n$ true\n```\n```\n$ not run\n```\n"
    assert console_steps(markdown) == [("echo a  # note", "a\n"), ("true", "")]
    assert shows('{"token": "lf_..."}', '{"token": "lf_abc"}\n')
    assert not shows('{"id": 1}', '{"id": 12}')


# The console sessions: their commands, in this order, on one fresh database.
CONSOLE_FILES = ["docs/cli.md"]


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_console_sessions_run_in_order_and_print_what_they_show():
    steps = [step for name in CONSOLE_FILES for step in console_steps((BASE_DIR / name).read_text())]
    assert len(steps) >= 15
    # The checkout's .env (from make run) is left out: the commands get exactly this environment.
    env = {**os.environ, "DATABASE_URL": database_url(), "DEBUG": "1", "ENV_FILE": "", "LOG_FORMAT": "text"}
    for command, expected in steps:
        result = subprocess.run(
            ["sh", "-c", command.replace(".venv/bin/python", sys.executable)],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, f"$ {command}\n{result.stderr}"
        assert shows(expected, result.stdout), f"$ {command}\nprinted:\n{result.stdout}\nREADME shows:\n{expected}"


# The API examples: the curl blocks of these files, run in this order against one server and database
# (a file's examples may rely on what an earlier one made: docs/api.md goes on from the README's tour).
EXAMPLE_FILES = ["README.md", "docs/api.md", "docs/pixel.md", "docs/email.md"]
# The settings `make run` serves with (the Makefile's DEV): what the examples are written against.
MAKE_RUN_ENV = dict(
    setting.split("=", 1)
    for setting in re.search(r"^DEV := (.*)$", (BASE_DIR / "Makefile").read_text(), re.M)[1].split()
)
README_BASE = "http://127.0.0.1:8000/"
# <token>, <tracking_key> and <key> are what `make run` prints; <click_id> is the lf_cid of the
# redirect's answer; <sale_id> the id of the latest sale an example recorded.
PLACEHOLDER = re.compile(r"<(token|tracking_key|key|click_id|sale_id)>")
STATUS = "\n@@status "
ETC = "\u2026more"  # stands for `...` as the last item of a list: more items of the same shape


@dataclass
class Example:
    source: str  # file:line
    command: str
    shown: str  # the answer the example shows in its `# ...` lines, or ""


def code_blocks(markdown: str) -> list[tuple[int, list[str]]]:
    """(line number, lines) of every fenced block and every block indented by four spaces after a blank line."""
    lines, blocks, i = markdown.splitlines(), [], 0
    while i < len(lines):
        start = i
        if lines[i].startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            blocks.append((start + 2, lines[i + 1 : end]))
            i = end + 1
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            while i < len(lines) and (
                lines[i].startswith("    ")
                or (not lines[i].strip() and lines[i + 1 : i + 2] and lines[i + 1].startswith("    "))
            ):
                i += 1
            blocks.append((start + 1, [line[4:] for line in lines[start:i]]))
        else:
            i += 1
    return blocks


def curl_examples(markdown: str, name: str) -> list[Example]:
    """Every code block that starts with `curl `: its command, then the `# ...` lines it shows."""
    examples = []
    for number, block in code_blocks(markdown):
        if block and block[0].startswith("curl "):
            shown_from = next((i for i, line in enumerate(block) if line.startswith("#")), len(block))
            shown = itertools.takewhile(lambda line: line.startswith("#"), block[shown_from:])
            examples.append(
                Example(
                    source=f"{name}:{number}",
                    command="\n".join(block[:shown_from]).strip(),
                    shown=" ".join(line.lstrip("#").strip() for line in shown),
                )
            )
    return examples


def fits(shown, actual) -> bool:
    """Whether an answer is what an example shows: the same keys, the shown strings (`...` for any text, any
    moment for a time shown), numbers for numbers, and lists item by item; `[x, ...]`: the first item as
    x, the others with x's keys and types."""
    if isinstance(shown, dict):
        return (
            isinstance(actual, dict) and shown.keys() == actual.keys() and all(fits(shown[k], actual[k]) for k in shown)
        )
    if isinstance(shown, list):
        if not isinstance(actual, list):
            return False
        if shown and shown[-1] == ETC:
            return not actual or (fits(shown[0], actual[0]) and all(alike(shown[0], item) for item in actual[1:]))
        return len(shown) == len(actual) and all(map(fits, shown, actual))
    if isinstance(shown, str):
        if not isinstance(actual, str):
            return False
        if re.fullmatch(r"\d{4}-\d\d-\d\d(T[\d:.]+Z)?", shown):
            return re.fullmatch(r"\d{4}-\d\d-\d\d" + (r"T[\d:.]+Z" if "T" in shown else ""), actual) is not None
        return shows(shown, actual)
    if isinstance(shown, bool) or shown is None:
        return shown is actual
    return type(shown) is type(actual)


def alike(shown, actual) -> bool:
    """The same keys and types, whatever the values (null stands for any)."""
    if isinstance(shown, dict):
        return (
            isinstance(actual, dict)
            and shown.keys() == actual.keys()
            and all(alike(shown[k], actual[k]) for k in shown)
        )
    return shown is None or actual is None or type(shown) is type(actual)


def shown_answer(shown: str) -> tuple[int, object]:
    """`201 {...}` as (status, JSON), with `, ...]` read as a list of more such items."""
    status, _, body = shown.partition(" ")
    return int(status), json.loads(re.sub(r",\s*\.\.\.\s*\]", f', "{ETC}"]', body))


def test_curl_examples_and_shapes():
    markdown = (
        'Text\n\n    curl -s http://x/a \\\n      -d \'{"a":\n           1}\'\n    # 201 {"id": 1,\n    #      "at": "..."}\n\n'
        "    .venv/bin/python manage.py x\n\n```\ncurl -si http://x/b | grep -i location\n# location: http://x/<click_id>\n```\n"
    )
    assert curl_examples(markdown, "m.md") == [
        Example("m.md:3", "curl -s http://x/a \\\n  -d '{\"a\":\n       1}'", '201 {"id": 1, "at": "..."}'),
        Example("m.md:12", "curl -si http://x/b | grep -i location", "location: http://x/<click_id>"),
    ]
    status, body = shown_answer('200 {"data": [{"day": "2026-11-01", "revenue": []}, ...], "next": null}')
    assert status == 200
    assert not fits(body, {"data": [{"day": "2026-11-25", "revenue": [{"x": 1}]}], "next": None})  # [] is no item
    assert fits(
        body,
        {"data": [{"day": "2026-11-25", "revenue": []}, {"day": "2026-11-24", "revenue": [{"x": 1}]}], "next": None},
    )
    assert not fits(body, {"data": [{"day": "2026-11-25", "revenue": [], "extra": 1}], "next": None})
    assert not fits({"totals": {"revenue_cents": 1}}, {"totals": {"revenue": []}})
    assert fits({"at": "2026-11-21T22:53:54.057780Z", "n": 7}, {"at": "2026-11-25T16:00:00Z", "n": 1})
    assert not fits({"n": 7}, {"n": "7"}) and not fits({"s": "whsec_..."}, {"s": "sk_1"})


def answer_of(example: Example, stdout: str, values: dict) -> None:
    """Check what an example printed against what it shows, learning <click_id> and <sale_id> on the way."""
    body, _, status = stdout.rpartition(STATUS) if STATUS in stdout else (stdout, "", "")
    if example.shown and not example.shown[:1].isdigit():  # a line of text (a header), not an answer
        pattern = PLACEHOLDER.sub(
            lambda m: f"(?P<{m[1]}>[^&#\\s]+)", re.escape(example.shown).replace(r"\<", "<").replace(r"\>", ">")
        )
        match = re.search(pattern, body, re.I)
        assert match, f"{example.source}: printed\n{body}\nshows\n{example.shown}"
        values.update(match.groupdict())
        return
    answer = json.loads(body) if body.strip().startswith("{") else body
    if example.shown:
        shown_status, shown_body = shown_answer(example.shown)
        assert (int(status), fits(shown_body, answer)) == (shown_status, True), (
            f"{example.source}: answered {status} {body}\nshows {example.shown}"
        )
    else:
        assert 200 <= int(status or 0) < 300, f"{example.source}: answered {status} {body}"
    if isinstance(answer, dict) and answer.get("event") == "sale":
        values["sale_id"] = str(answer["id"])


@pytest.mark.django_db(transaction=True)
def test_the_api_examples_answer_what_they_show(tmp_path):
    examples = [e for name in EXAMPLE_FILES for e in curl_examples((BASE_DIR / name).read_text(), name)]
    assert len(examples) >= 15
    out = io.StringIO()
    call_command("demo", stdout=out)  # what `make run` prints, on a fresh database
    demo = json.loads(out.getvalue())
    values = {"token": demo["token"], "tracking_key": demo["tracking_key"], "key": demo["link"]["key"]}
    # curl reads $CURL_HOME/.curlrc: each answer ends with its status, except where a pipe reads the answer.
    (tmp_path / "status").mkdir()
    (tmp_path / "status" / ".curlrc").write_text(
        f'write-out = "{STATUS.encode("unicode_escape").decode()}%{{http_code}}"\n'
    )
    with running_gunicorn(database=database_url(), **MAKE_RUN_ENV) as (base, _):
        for example in examples:
            missing = {m[1] for m in PLACEHOLDER.finditer(example.command)} - values.keys()
            assert not missing, f"{example.source}: nothing before it gives {missing}"
            command = PLACEHOLDER.sub(lambda m: values[m[1]], example.command).replace(README_BASE, base + "/")
            piped = "|" in command
            result = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                env={**os.environ, "CURL_HOME": str(tmp_path / ("" if piped else "status"))},
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert result.returncode == 0 and result.stdout.strip(), f"{example.source}: {command}\n{result.stderr}"
            if piped and not example.shown:
                continue
            answer_of(example, result.stdout, values)


# Console sessions that need a setting of their own run in their app's tests: page -> the test that runs it.
RUN_ELSEWHERE = {"docs/payments.md": "tests/payments/test_docs.py"}


def test_every_page_with_examples_has_them_run():
    """A curl example or a console session on a page that neither list names would never run."""
    pages = ["README.md", *sorted(p.relative_to(BASE_DIR).as_posix() for p in (BASE_DIR / "docs").glob("*.md"))]
    with_curl = [page for page in pages if curl_examples((BASE_DIR / page).read_text(), page)]
    with_console = [page for page in pages if console_steps((BASE_DIR / page).read_text())]
    assert (with_curl, [page for page in with_console if page not in RUN_ELSEWHERE]) == (
        sorted(EXAMPLE_FILES),
        sorted(CONSOLE_FILES),
    )
    for page, test in RUN_ELSEWHERE.items():
        assert page in with_console and page in (BASE_DIR / test).read_text(), (page, test)


def test_the_worker_runs_every_periodic_job_and_the_deployment_doc_asks_for_no_cron():
    """docs/deployment.md's table of the worker's jobs names every periodic task, and the page asks for no cron
    line for what the worker runs (it once asked for `idempotency purge` from cron)."""
    from procrastinate.contrib.django import app

    app.perform_import_paths()
    periodic = {task.task.name for task in app.periodic_registry.periodic_tasks.values()}
    deployment = (BASE_DIR / "docs" / "deployment.md").read_text()
    table = deployment[deployment.index("| job (on the task engine, procrastinate) |") :].split("\n\n", 1)[0]
    assert periodic and periodic <= set(re.findall(r"`([\w.]+)`", table))
    # Outside the table (its last column names the cron lines the worker replaces), cron only as "no cron".
    cron = [line for line in deployment.splitlines() if not line.startswith("|") and re.search(r"\bcron\b", line, re.I)]
    assert cron and all(re.search(r"\b(no|nothing needs) cron\b", line, re.I) for line in cron), cron
