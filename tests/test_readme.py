"""The README's ```console blocks, run top to bottom on a fresh database: each command works as written
and prints what the README shows (`...` stands for any text: secrets, times)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import database_url

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


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_readme_commands_run_in_order_and_print_what_it_shows():
    steps = console_steps((BASE_DIR / "README.md").read_text())
    assert len(steps) >= 15
    # The checkout's .env (from make run) is left out: the commands get exactly this environment.
    env = {**os.environ, "DATABASE_URL": database_url(), "DEBUG": "1", "ENV_FILE": "", "LOG_FORMAT": "text"}
    for command, expected in steps:
        result = subprocess.run(
            ["sh", "-c", command.replace(".venv/bin/python", sys.executable)],
            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60,
        )
        assert result.returncode == 0, f"$ {command}\n{result.stderr}"
        assert shows(expected, result.stdout), f"$ {command}\nprinted:\n{result.stdout}\nREADME shows:\n{expected}"
