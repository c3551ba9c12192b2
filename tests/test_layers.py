"""Apps import one way (README, "Layout"): every module's imports, read from its source, obey the layers."""

import ast
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
# The URL configuration and the settings name the apps: that is their job.
EXEMPT = {"lftrack/urls.py", "lftrack/settings.py"}


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
