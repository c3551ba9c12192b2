"""The benchmarks under bench/ run only by hand, so nothing else notices when a rename leaves one importing a name
that is gone (bench/redirect.sh seeded its links with a function renamed a release before). Every name they import
from the project must still be there."""

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {path.parent.name for path in ROOT.glob("*/__init__.py")}
# Python inside the shell scripts (`manage.py shell -c "..."`), one import a line.
SHELL_IMPORT = re.compile(r"^\s*from ([\w.]+) import ([\w, ]+?)\s*(?:#.*)?$", re.MULTILINE)


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of each `from <project module> import <name>` in the file."""
    text = path.read_text()
    if path.suffix == ".py":
        pairs = [
            (node.module, alias.name)
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for alias in node.names
        ]
    else:
        pairs = [(module, name.strip()) for module, names in SHELL_IMPORT.findall(text) for name in names.split(",")]
    return [(module, name) for module, name in pairs if module.split(".")[0] in PACKAGES]


BENCH_FILES = sorted(path for path in (ROOT / "bench").iterdir() if path.suffix in (".py", ".sh"))


def test_the_benchmarks_import_something_of_the_project():
    # The check below must have something to check: the regular expression and the walk still find imports.
    assert sum(len(_imports(path)) for path in BENCH_FILES) > 20
    assert ("clicks.links", "link_add") in _imports(ROOT / "bench" / "redirect.sh")


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda path: path.name)
def test_every_name_a_benchmark_imports_from_the_project_exists(path):
    missing = [
        f"{module}.{name}"
        for module, name in _imports(path)
        if not hasattr(importlib.import_module(module), name) and not importlib.util.find_spec(f"{module}.{name}")
    ]
    assert not missing, f"{path.name} imports what the project no longer has: {missing}"
