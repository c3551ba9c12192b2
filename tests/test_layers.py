"""Apps import one way (docs/architecture.md, "The layers"): every module's imports, read from its source, obey the layers, and no
module reaches itself through its imports."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What each package may import of the project, besides itself. Siblings (customers, clicks) do not
# import each other; rollups reads the domain apps and only the back office reads rollups. webhooks
# sits right above workspaces, so that every app that emits events can import it.
DOMAIN = {"workspaces", "webhooks", "customers", "clicks", "campaigns", "conversions"}
ALLOWED = {
    "lftrack": set(),
    "workspaces": {"lftrack"},
    "webhooks": {"lftrack", "workspaces"},
    "customers": {"lftrack", "workspaces", "webhooks"},
    "clicks": {"lftrack", "workspaces", "webhooks"},
    "campaigns": {"lftrack", "workspaces", "webhooks", "customers", "clicks"},
    "conversions": {"lftrack", "workspaces", "webhooks", "customers", "clicks", "campaigns"},
    "rollups": {"lftrack"} | DOMAIN,
    # The payment connectors record through the conversion, refund and matching services.
    "payments": {"lftrack"} | DOMAIN,
    "backoffice": {"lftrack", "rollups", "payments"} | DOMAIN,
}
PACKAGES = set(ALLOWED)
# The URL configuration, the settings and the WSGI entry point name the apps: that is their job.
EXEMPT = {"lftrack/urls.py", "lftrack/settings.py", "lftrack/wsgi.py"}


def imported_packages(source: str) -> set[str]:
    """The top-level project packages a module's source imports, at any depth (lazy imports too)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(name.split(".")[0] for name in names)
    return found & PACKAGES


def imported_modules(name: str, source: str, known: set[str]) -> set[str]:
    """The project modules (of `known`, dotted names) that module `name` imports, at any depth; `from pkg import mod`
    names the module, `from pkg import thing` the package."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                package = name.split(".")[: -node.level]
                base = ".".join([*package, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a package: the nearest module that exists
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a loop (strongly connected components of two or more), each
    sorted, by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def violations(package: str, source: str) -> set[str]:
    return imported_packages(source) - ALLOWED[package] - {package}


def modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and path.relative_to(ROOT).as_posix() not in EXEMPT
    )


@pytest.mark.parametrize("path", modules(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_module_imports_only_down_the_layers(path):
    package = path.relative_to(ROOT).parts[0]
    assert violations(package, path.read_text()) == set()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_reaches_itself_through_its_imports():
    """A loop (a imports b, which imports a, even lazily inside a function) makes the import order matter and
    the two one module in all but name; lazy imports are read too, as the layers are."""
    paths = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts]
    sources = {module_name(path): path.read_text() for path in paths}
    graph = {name: imported_modules(name, source, set(sources)) for name, source in sources.items()}
    assert cycles(graph) == []


@pytest.mark.parametrize(
    ("sources", "found"),
    [
        ({"a.x": "from a.y import f", "a.y": "def g():\n    from a.x import h\n"}, [["a.x", "a.y"]]),
        ({"a.x": "from a import y", "a.y": "import a.z", "a.z": "from . import x", "a": ""}, [["a.x", "a.y", "a.z"]]),
        ({"a.x": "from a.y import f", "a.y": "import a.z.w", "a.z": ""}, []),
        ({"a": "", "a.x": "from a import y", "a.y": "from a import CONSTANT"}, []),
    ],
)
def test_an_import_loop_is_caught(sources, found):
    graph = {name: imported_modules(name, source, set(sources)) for name, source in sources.items()}
    assert cycles(graph) == found


# docs/architecture.md, "Layout": a row per folder naming its modules; the names every app shares are in the
# table above it.
LAYOUT = ROOT / "docs" / "architecture.md"
SHARED_NAMES = {
    "__init__.py",
    "apps.py",
    "models.py",
    "services.py",
    "selectors.py",
    "api.py",
    "openapi.py",
    "views.py",
}
SHARED_NAMES |= {"webhook_payloads.py", "tasks.py", "cli.py"}


def layout_rows() -> dict[str, str]:
    section = LAYOUT.read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(\w+)/` \| (.*) \|$", section, re.M))


@pytest.mark.parametrize("folder", [*sorted(PACKAGES), "templates"])
def test_the_layout_names_every_module_of_a_folder_and_nothing_else(folder):
    """Each module or folder right under a project folder is named in its row (`pixel/lf.js` names `pixel/`), or
    is one of the shared names; every name in the row exists."""
    quoted = re.findall(r"`([\w./]+)`", layout_rows()[folder])
    named = [name for name in quoted if ("." in name or name.endswith("/")) and not name.startswith("/")]
    assert [name for name in named if not (ROOT / folder / name).exists()] == []
    tops = {name.split("/")[0] + ("/" if "/" in name else "") for name in named}
    present = {
        path.name + ("/" if path.is_dir() else "")
        for path in (ROOT / folder).iterdir()
        if path.name not in ("migrations", "management", "templates", "static", "__pycache__")
    }
    assert present - tops - SHARED_NAMES == set()


def test_every_package_is_checked():
    assert {path.relative_to(ROOT).parts[0] for path in modules()} == PACKAGES


@pytest.mark.parametrize(
    ("package", "source", "found"),
    [
        ("clicks", "from campaigns.models import Campaign", {"campaigns"}),
        ("customers", "import clicks.models", {"clicks"}),
        ("campaigns", "def f():\n    from conversions import services\n", {"conversions"}),
        ("campaigns", "from rollups.models import CampaignTotals", {"rollups"}),
        ("lftrack", "from workspaces.models import Workspace", {"workspaces"}),
        ("webhooks", "from customers.models import Customer", {"customers"}),
        ("workspaces", "from backoffice.scoping import scope", {"backoffice"}),
        ("conversions", "from campaigns.services import campaign_enroll\nfrom . import models", set()),
        ("backoffice", "from rollups.selectors import x\nfrom conversions.models import y", set()),
    ],
)
def test_an_upward_import_is_caught(package, source, found):
    assert violations(package, source) == found
