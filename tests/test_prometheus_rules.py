"""deploy/prometheus-rules.yml: promtool accepts it, its unit tests pass (tests/prometheus_rules_test.yml), and every
series it names is one /metrics serves."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.scrape import TOKEN

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus-rules.yml"
SUFFIXES = {"counter": ("_total",), "histogram": ("_count", "_sum", "_bucket")}


def promtool(*args: str) -> subprocess.CompletedProcess:
    # Debian's `prometheus` package (make sysdeps, .ci/run): never skipped, so CI always checks the rules.
    assert shutil.which("promtool"), "promtool not found: apt-get install prometheus (make sysdeps does)"
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_promtool_accepts_the_rules():
    checked = promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 10 rules found" in checked.stdout


def test_the_alerts_fire_on_their_series_and_not_before():
    tested = promtool("test", "rules", "tests/prometheus_rules_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.django_db
def test_every_series_the_rules_name_is_served(client, settings):
    settings.METRICS_TOKEN = TOKEN
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    served = {  # a family's samples, even one not counted yet (no children: only its HELP and TYPE lines)
        family.name + suffix
        for family in text_string_to_metric_families(text)
        for suffix in SUFFIXES.get(family.type, ("",))
    }
    named = set(re.findall(r"\blftrack_[a-z_]+\b", RULES.read_text()))
    assert named and named - served == set()


def test_the_scrape_job_docs_metrics_shows_is_a_valid_prometheus_configuration(tmp_path):
    """docs/metrics.md's prometheus.yml, with its token file and rules file where this checkout has them."""
    page = (ROOT / "docs" / "metrics.md").read_text()
    config = re.search(r"```yaml\n(scrape_configs:.*?)```", page, re.S)[1]
    token = tmp_path / "token"
    token.write_text("t" * 40)
    config = config.replace("/etc/prometheus/lftrack-metrics-token", str(token))
    config = config.replace("/etc/prometheus/lftrack-rules.yml", str(RULES))
    (tmp_path / "prometheus.yml").write_text(config)
    checked = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 10 rules found" in checked.stdout
