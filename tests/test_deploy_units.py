"""deploy/'s process definitions: the systemd units pass `systemd-analyze verify` and its offline security
rating, and their commands (and the Procfile's) start, serve, reload gracefully and stop on their signal."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import database_url
from tests.faults.conftest import free_port, wait_until_up
from tests.test_backup_restore import client_path

BASE_DIR = Path(__file__).resolve().parents[1]
UNITS = BASE_DIR / "deploy" / "systemd"
PROCFILE = BASE_DIR / "deploy" / "Procfile"
# Where the units expect the checkout and its virtual environment (docs/deployment.md, "Processes").
INSTALL_DIR = "/srv/lftrack"


# make sysdeps and .ci/run install it (Debian's systemd package), so CI never skips these.
needs_systemd_analyze = pytest.mark.skipif(
    not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed (make sysdeps installs systemd)"
)


def unit_files() -> list[Path]:
    return sorted([*UNITS.glob("*.service"), *UNITS.glob("*.timer")])


def long_running() -> list[Path]:
    """The units of the processes that serve (the backup runs and ends)."""
    return [path for path in unit_files() if settings_of(path).get("Restart")]


def here(text: str) -> str:
    """A unit's text with the install paths of a server replaced by this checkout's and this environment's."""
    return text.replace(f"{INSTALL_DIR}/.venv", sys.prefix).replace(INSTALL_DIR, str(BASE_DIR))


def verify_problems(directory: Path) -> str:
    """What `systemd-analyze verify` says of every unit in `directory`: empty when they are all sound. It exits 0
    on an unknown key or a bad value (it ignores them, as systemd would), so any line it prints is a problem."""
    result = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(path) for path in directory.glob("*.*"))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return (result.stdout + result.stderr + ("" if result.returncode == 0 else f"exit {result.returncode}")).strip()


def settings_of(path: Path) -> dict[str, list[str]]:
    """Each key of a unit file with its values, in order."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def command_of(value: str, env: dict[str, str] | None = None) -> list[str]:
    """A unit's command line as systemd runs it: words split as a shell would, ${NAME} replaced from `env`."""
    return [re.sub(r"\$\{(\w+)\}", lambda name: (env or {})[name[1]], word) for word in shlex.split(here(value))]


def unit_environment(settings: dict[str, list[str]], **extra: str) -> dict[str, str]:
    """The unit's Environment= assignments over the suite's environment (standing in for EnvironmentFile)."""
    env = {**os.environ, "DATABASE_URL": database_url(), "LOG_LEVEL": "WARNING", "GUNICORN_LOG_LEVEL": "warning"}
    for assignments in settings.get("Environment", []):
        env.update(assignment.split("=", 1) for assignment in shlex.split(assignments))
    return {**env, **extra}


def children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def stop(process: subprocess.Popen, settings: dict[str, list[str]]) -> int:
    """Stops a process as systemd would: its KillSignal to the main process, then TimeoutStopSec to exit."""
    process.send_signal(getattr(signal, settings.get("KillSignal", ["SIGTERM"])[0]))
    try:
        return process.wait(timeout=int(settings["TimeoutStopSec"][0]))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@needs_systemd_analyze
def test_systemd_analyze_verify_passes_on_every_unit(tmp_path):
    assert {path.name for path in unit_files()} == {
        "lftrack-web@.service",
        "lftrack-sender@.service",
        "lftrack-worker.service",
        "lftrack-backup.service",
        "lftrack-backup.timer",
    }
    assert [path.name for path in long_running()] == [
        "lftrack-sender@.service",
        "lftrack-web@.service",
        "lftrack-worker.service",
    ]
    for path in unit_files():
        (tmp_path / path.name).write_text(here(path.read_text()))
    assert verify_problems(tmp_path) == ""


@needs_systemd_analyze
def test_a_broken_unit_fails_the_verification(tmp_path):
    web = here((UNITS / "lftrack-web@.service").read_text())
    (tmp_path / "lftrack-web@.service").write_text(web.replace("ProtectSystem=strict", "ProtectSystem=stricter"))
    assert "Failed to parse protect system value" in verify_problems(tmp_path)
    (tmp_path / "lftrack-web@.service").write_text(web.replace("RestartSec=", "RestartSecs="))
    assert "Unknown key" in verify_problems(tmp_path)
    (tmp_path / "lftrack-web@.service").write_text(web.replace(sys.prefix, "/nowhere"))
    assert "is not executable" in verify_problems(tmp_path)


@needs_systemd_analyze
def test_every_unit_restarts_reads_its_environment_file_and_is_hardened(tmp_path):
    for path in unit_files():
        if path.suffix != ".service":
            continue
        settings = settings_of(path)
        assert settings["User"] == ["lftrack"] and settings["EnvironmentFile"] == ["/etc/lftrack/lftrack.env"]
        assert settings["WorkingDirectory"] == [INSTALL_DIR]
        assert settings.get("Restart") == (["always"] if path in long_running() else None), path.name
        for option in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes"):
            key, value = option.split("=")
            assert settings[key] == [value], (path.name, option)
        # systemd's own rating of the sandbox, 0 (locked down) to 10: at most 2.0 ("OK").
        (tmp_path / path.name).write_text(here(path.read_text()))
        rating = subprocess.run(
            ["systemd-analyze", "security", "--offline=yes", "--threshold=20", str(tmp_path / path.name)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert rating.returncode == 0, rating.stdout.splitlines()[-1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pool", ["gevent", "gthread"])  # the instances docs/deployment.md, "Processes", starts
def test_the_web_unit_serves_reloads_gracefully_on_its_exec_reload_and_stops(tmp_path, pool):
    settings = settings_of(UNITS / "lftrack-web@.service")
    port = free_port()
    env = unit_environment(
        settings,
        GUNICORN_WORKER_CLASS=pool,  # %i
        XDG_RUNTIME_DIR=str(tmp_path),  # RuntimeDirectory=
        GUNICORN_BIND=f"127.0.0.1:{port}",
        ALLOWED_HOSTS="127.0.0.1",
        WEB_CONCURRENCY="2",
    )
    process = subprocess.Popen(
        command_of(settings["ExecStart"][0]),
        cwd=here(settings["WorkingDirectory"][0]),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/healthz", process)
        deadline = time.monotonic() + 60
        while len(before := children(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        reload = settings["ExecReload"][0].replace("$MAINPID", str(process.pid))
        subprocess.run(command_of(reload), check=True, timeout=10)
        # Every old worker is replaced by a new one, and the node answers all along: the master keeps the
        # socket, so a request that comes while the new workers boot waits for them (seconds on a busy machine).
        answers = []
        while (before & children(process.pid) or len(children(process.pid)) < 2) and time.monotonic() < deadline:
            answers.append(requests.get(base + "/healthz", timeout=30).status_code)
            time.sleep(0.05)
        assert not before & children(process.pid) and len(children(process.pid)) == 2
        assert answers and set(answers) == {200}
        assert requests.get(base + "/healthz", timeout=5).json()["status"] == "ok"
    finally:
        code = stop(process, settings)
    assert code == 0, process.stderr.read()


# The line each logs once it runs: the sender before its first pass, the worker once it waits for jobs.
RUNNING = {"lftrack-sender@.service": "sender started", "lftrack-worker.service": "Starting worker"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("unit", sorted(RUNNING))
def test_the_sender_and_the_worker_run_their_command_and_stop_cleanly_on_sigterm(unit):
    settings = settings_of(UNITS / unit)
    # DEBUG on: the sender mails to the console rather than refusing to start without EMAIL_URL.
    env = unit_environment(settings, DEBUG="1", LOG_LEVEL="INFO")
    process = subprocess.Popen(
        command_of(settings["ExecStart"][0]),
        cwd=here(settings["WorkingDirectory"][0]),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[dict] = []
    reader = threading.Thread(target=lambda: lines.extend(json.loads(line) for line in process.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60  # a loaded machine takes a while to import Django
        while not any(RUNNING[unit] in line["message"] for line in lines) and time.monotonic() < deadline:
            assert process.poll() is None, lines
            time.sleep(0.1)
        time.sleep(1)  # a pass, or a wait for jobs
    finally:
        code = stop(process, settings)
    reader.join(10)
    out = process.stdout.read()
    assert any(RUNNING[unit] in line["message"] for line in lines), lines
    assert code == 0 and not [line for line in lines if line["level"] == "ERROR"], lines
    if unit.startswith("lftrack-sender"):
        assert json.loads(out) == {"sent": 0, "deferred": 0, "skipped": 0}


def procfile() -> dict[str, str]:
    return dict(re.findall(r"^([\w-]+):\s*(.+)$", PROCFILE.read_text(), re.M))


def test_the_procfile_runs_the_units_commands():
    entries = procfile()
    assert set(entries) == {"release", "web", "sender", "worker"}
    for name, unit in (
        ("web", "lftrack-web@.service"),
        ("sender", "lftrack-sender@.service"),
        ("worker", "lftrack-worker.service"),
    ):
        executable, *arguments = shlex.split(settings_of(UNITS / unit)["ExecStart"][0])
        program, *words = shlex.split(entries[name])
        # The platform's port instead of gunicorn.conf.py's GUNICORN_BIND: the one difference.
        assert program == Path(executable).name and [w for w in words if "PORT" not in w and w != "--bind"] == arguments


@pytest.mark.django_db(transaction=True)
def test_the_procfile_release_migrates_and_its_web_serves_on_port():
    entries = procfile()
    port = free_port()
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "DATABASE_URL": database_url(), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    release = subprocess.run(
        ["sh", "-c", entries["release"]], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert release.returncode == 0, release.stderr
    web = subprocess.Popen(
        ["sh", "-c", "exec " + entries["web"]],
        cwd=BASE_DIR,
        env={**env, "PORT": str(port), "ALLOWED_HOSTS": "127.0.0.1", "WEB_CONCURRENCY": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until_up(f"http://127.0.0.1:{port}/healthz", web)
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["status"] == "ok"
    finally:
        web.terminate()
        web.wait(timeout=40)


@pytest.mark.django_db(transaction=True)
def test_the_backup_unit_writes_a_dump_and_removes_those_past_their_days(tmp_path):
    settings = settings_of(UNITS / "lftrack-backup.service")
    assert settings["Type"] == ["oneshot"] and settings["StateDirectory"] == ["lftrack/backups"]
    old, recent = tmp_path / "lftrack-20200101T000000Z.dump", tmp_path / "lftrack-20200102T000000Z.dump"
    for dump, days in ((old, 10), (recent, 3)):
        dump.write_bytes(b"")
        moment = time.time() - days * 86400
        os.utime(dump, (moment, moment))
    # StateDirectory=; pg_dump of the server's version (the embedded server's own, when the suite runs on it).
    env = unit_environment(settings, STATE_DIRECTORY=str(tmp_path), BACKUP_KEEP_DAYS="7", PATH=client_path())
    result = subprocess.run(
        command_of(settings["ExecStart"][0], env),
        cwd=here(settings["WorkingDirectory"][0]),
        env=env,
        capture_output=True,
        text=True,
        timeout=int(settings["TimeoutStartSec"][0].rstrip("h")) * 3600,
    )
    assert result.returncode == 0, result.stderr
    made = Path(result.stdout.strip())
    assert made.parent == tmp_path and not old.exists() and recent.exists()
    listing = subprocess.run(["pg_restore", "--list", str(made)], env=env, capture_output=True, text=True, timeout=60)
    assert "TABLE DATA public clicks_click" in listing.stdout
