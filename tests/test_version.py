"""The release: pyproject.toml's version is the newest in CHANGELOG.md, `manage.py version` prints it, and every
release in the changelog says what an operator does when upgrading to it."""

import io
import json
import re
import tomllib
from pathlib import Path

from django.core.management import call_command

BASE_DIR = Path(__file__).resolve().parents[1]


def project_version() -> str:
    return tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["project"]["version"]


def releases() -> list[tuple[str, str]]:
    """(version, text) of each `## X.Y.Z (date): ...` section of CHANGELOG.md, in the file's order."""
    changelog = (BASE_DIR / "CHANGELOG.md").read_text()
    return re.findall(r"^## (\d+\.\d+\.\d+) \(\d{4}-\d\d-\d\d\)[^\n]*\n(.*?)(?=^## |\Z)", changelog, re.M | re.S)


def test_manage_py_version_prints_the_installed_release():
    out = io.StringIO()
    call_command("version", stdout=out)
    assert json.loads(out.getvalue()) == {"version": project_version()}


def test_the_changelog_starts_at_the_current_version_newest_first_each_with_upgrade_notes():
    found = releases()
    assert found[0][0] == project_version()
    versions = [tuple(map(int, version.split("."))) for version, _ in found]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions) > 1
    for version, text in found:
        notes = text.split("Upgrade notes:\n", 1)
        assert len(notes) == 2 and notes[1].strip().startswith("- "), version
