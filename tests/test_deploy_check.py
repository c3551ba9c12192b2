"""`manage.py check --deploy` with docs/deployment.md's production block prints no warning, and fails without mail."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import database_url

BASE_DIR = Path(__file__).resolve().parents[1]


def production_block() -> dict[str, str]:
    """The `export` lines of docs/deployment.md, "Running in production", as the shell would set them."""
    page = (BASE_DIR / "docs" / "deployment.md").read_text()
    section = re.split(r"\n#{1,6} ", page.split("### Running in production\n", 1)[1], maxsplit=1)[0]
    env = {}
    for line in section.splitlines():
        line = line.strip()
        if not line.startswith("export "):
            continue
        for name, value in re.findall(r'([A-Z_]+)=("[^"]*"|\$\([^)]*\)\)|\S+)', line.split("#", 1)[0]):
            env[name] = secrets.token_urlsafe(50) if value.startswith("$(") else value.strip('"')
    return env


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db
def test_the_documented_production_block_passes_check_deploy_cleanly():
    env = {**os.environ, **production_block(), "DATABASE_URL": database_url(), "DEBUG": "0"}
    assert env["SECURE_HSTS_SECONDS"] == "31536000" and env["EMAIL_URL"].startswith("smtp")
    result = check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr and "no issues" in result.stdout


@pytest.mark.django_db
def test_without_mail_settings_check_deploy_fails_naming_the_variable():
    env = {**os.environ, **production_block(), "DATABASE_URL": database_url(), "DEBUG": "0"}
    del env["EMAIL_URL"]
    result = check_deploy(env)
    assert result.returncode != 0 and "lftrack.E001" in result.stderr and "EMAIL_URL is required" in result.stderr
