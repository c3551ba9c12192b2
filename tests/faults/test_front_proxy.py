"""The shipped front (deploy/nginx.conf) in front of gunicorn, on loopback, bounded: the slow-client attack
with and without it; both shapes of docs/deployment.md (a TLS load balancer in front of nginx, TLS at
nginx) with the production https settings; the health probes; request ids; the body sizes it lets through."""

import http.client
import shutil
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.conftest import database_url, self_signed_certificate
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory
from tests.faults.conftest import BASE_DIR, free_port, running_gunicorn, wait_until_up

pytestmark = pytest.mark.fault

SLOW_CLIENTS = 16  # each holds a connection open, sending a header line every 2 s and never finishing
PROBES = 8
HOST = "track.example.test"
# The settings of docs/deployment.md, "Running in production", that touch the front: https only, behind proxies.
PRODUCTION = {
    "ALLOWED_HOSTS": HOST,
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_PROXY_SSL_HEADER": "1",
    "TRUSTED_PROXY_COUNT": "2",
}


def replaced(text: str, *pairs: tuple[str, str]) -> str:
    """`text` with each (old, new) replaced, every `old` required: the shipped file must still hold it."""
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


def front_site(
    *, listen: int, upstream: int, tls: tuple[int, Path, Path] | None = None, balancer: str | None = None
) -> str:
    """deploy/nginx.conf as shipped, on test ports; `tls`: its TLS lines uncommented on (port, cert, key);
    `balancer`: the one address it takes for a load balancer, instead of the private networks."""
    site = replaced(
        (BASE_DIR / "deploy" / "nginx.conf").read_text(),
        ("listen 80;", f"listen 127.0.0.1:{listen};"),
        # Both pools (the redirect's and the API's) are the one gunicorn under test.
        ("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};"),
        ("server 127.0.0.1:8001;", f"server 127.0.0.1:{upstream};"),
    )
    if tls is not None:
        port, cert, key = tls
        site = replaced(
            site,
            ("# listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
            ("# ssl_certificate /etc/ssl/lftrack/fullchain.pem;", f"ssl_certificate {cert};"),
            ("# ssl_certificate_key /etc/ssl/lftrack/privkey.pem;", f"ssl_certificate_key {key};"),
        )
    if balancer is not None:
        site = replaced(site, ("    127.0.0.0/8 1;\n", f"    {balancer} 1;\n"), ("    ::1 1;\n", ""))
    return site


def balancer_site(*, listen: int, front: int, cert: Path, key: Path) -> str:
    """A TLS load balancer in front of nginx, as docs/deployment.md draws it: it ends TLS, appends the client
    to X-Forwarded-For, says https, and gives each request its own id."""
    return f"""
    server {{
        listen 127.0.0.1:{listen} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://127.0.0.1:{front};
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto https;
            proxy_set_header X-Request-ID lb-$request_id;
        }}
    }}
    """


@contextmanager
def running_nginx(temp: Path, *sites: str, wait_for: str):
    """nginx with these server blocks (in its `http { }`), temp files in `temp`, up once `wait_for` answers."""
    if not shutil.which("nginx"):
        pytest.skip("needs Debian's nginx (make test and .ci/run install it)")
    temp.chmod(0o777)  # nginx's workers run as an unprivileged user when started as root
    for number, site in enumerate(sites):
        (temp / f"site{number}.conf").write_text(site)
    paths = " ".join(
        f"{kind}_temp_path {temp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    includes = " ".join(f"include {temp / f'site{number}.conf'};" for number in range(len(sites)))
    config = temp / "nginx.conf"
    config.write_text(
        f"daemon off; worker_processes 1; pid {temp / 'nginx.pid'}; error_log {temp / 'error.log'} warn;\n"
        "events { worker_connections 512; }\n"
        f"http {{ access_log off; {paths} {includes} }}\n"
    )
    process = subprocess.Popen(["nginx", "-c", str(config), "-p", str(temp)], stderr=subprocess.PIPE, text=True)
    try:
        wait_until_up(wait_for, process)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


@pytest.fixture
def front(gunicorn, tmp_path):
    """The base URL of the shipped nginx in front of a gunicorn (plain http, development settings)."""
    port = free_port()
    with running_nginx(
        tmp_path, front_site(listen=port, upstream=port_of(gunicorn)), wait_for=f"http://127.0.0.1:{port}/healthz"
    ):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def production(transactional_db):
    """The base URL of a gunicorn with the production https settings of docs/deployment.md."""
    with running_gunicorn(database=database_url(), **PRODUCTION) as (base, _):
        yield base


@pytest.fixture
def certificate(tmp_path) -> tuple[Path, Path]:
    (tmp_path / "tls").mkdir()
    return self_signed_certificate(tmp_path / "tls", HOST, "127.0.0.1")


@pytest.fixture
def behind_balancer(production, certificate, tmp_path):
    """(balancer's https URL, nginx's http URL): the TLS load balancer -> the shipped nginx -> gunicorn."""
    front, balancer = free_port(), free_port()
    sites = (
        front_site(listen=front, upstream=port_of(production)),
        balancer_site(listen=balancer, front=front, cert=certificate[0], key=certificate[1]),
    )
    with running_nginx(tmp_path, *sites, wait_for=f"http://127.0.0.1:{front}/healthz"):
        yield f"https://127.0.0.1:{balancer}", f"http://127.0.0.1:{front}"


def get(url: str, certificate: tuple[Path, Path] | None = None, **headers) -> requests.Response:
    return requests.get(
        url,
        headers={"Host": HOST, **headers},
        verify=str(certificate[0]) if certificate else True,
        allow_redirects=False,
        timeout=10,
    )


def test_behind_a_tls_balancer_pages_are_served_not_redirected_to_themselves(behind_balancer, certificate):
    balancer, _ = behind_balancer
    for path in ("/admin/login/", "/", "/readyz", "/healthz"):
        resp = get(balancer + path, certificate)
        assert resp.status_code == 200, (path, resp.status_code, resp.headers.get("Location"))
    assert "Strict-Transport-Security" not in get(balancer + "/", certificate).headers  # HSTS off unless set


def test_the_balancers_request_id_is_kept(behind_balancer, certificate):
    balancer, _ = behind_balancer
    assert get(balancer + "/readyz", certificate).headers["X-Request-ID"].startswith("lb-")
    assert get(balancer + "/admin/login/", certificate).headers["X-Request-ID"].startswith("lb-")


def test_x_forwarded_proto_https_through_the_front_answers_readyz(behind_balancer):
    """The acceptance line: `curl -H 'X-Forwarded-Proto: https' http://nginx/readyz` answers 200."""
    _, front = behind_balancer
    result = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Forwarded-Proto: https", f"{front}/readyz"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.stdout == "200", result
    assert get(f"{front}/admin/login/", **{"X-Forwarded-Proto": "https"}).status_code == 200


def test_probes_by_address_over_http_answer_through_the_front_and_straight(behind_balancer, production):
    """A balancer probes each node by its address over plain http: neither ALLOWED_HOSTS (400) nor the https
    redirect (301) stands in its way; a page asked for the same way still gets both."""
    _, front = behind_balancer
    for base in (front, production):
        for path in ("/readyz", "/healthz"):
            resp = requests.get(base + path, timeout=10, allow_redirects=False)  # Host: 127.0.0.1:port
            assert (resp.status_code, resp.json()["status"]) == (200, "ok"), (base, path, resp.status_code)
        assert requests.get(base + "/admin/login/", timeout=10, allow_redirects=False).status_code == 400
        assert get(base + "/admin/login/").headers["Location"] == f"https://{HOST}/admin/login/"


def test_a_client_beside_the_balancer_cannot_claim_https_or_name_its_request(production, tmp_path):
    """Only the balancer's address may say https: a request from any other is what nginx saw (http), so it is
    redirected, and its X-Request-ID is replaced."""
    front = free_port()
    with running_nginx(
        tmp_path,
        front_site(listen=front, upstream=port_of(production), balancer="127.0.0.1"),
        wait_for=f"http://127.0.0.1:{front}/healthz",
    ):
        connection = http.client.HTTPConnection("127.0.0.1", front, timeout=10, source_address=("127.0.0.2", 0))
        connection.request(
            "GET", "/admin/login/", headers={"Host": HOST, "X-Forwarded-Proto": "https", "X-Request-ID": "mine"}
        )
        resp = connection.getresponse()
        assert resp.status == 301 and resp.headers["Location"] == f"https://{HOST}/admin/login/"
        assert resp.headers["X-Request-ID"] != "mine"
        connection.close()
        trusted = get(
            f"http://127.0.0.1:{front}/admin/login/", **{"X-Forwarded-Proto": "https", "X-Request-ID": "lb-1"}
        )
        assert (trusted.status_code, trusted.headers["X-Request-ID"]) == (200, "lb-1")


def test_with_tls_at_nginx_https_is_served_and_http_redirected(production, certificate, tmp_path):
    plain, tls = free_port(), free_port()
    site = front_site(listen=plain, upstream=port_of(production), tls=(tls, *certificate))
    with running_nginx(tmp_path, site, wait_for=f"http://127.0.0.1:{plain}/healthz"):
        assert get(f"https://127.0.0.1:{tls}/admin/login/", certificate).status_code == 200
        redirected = get(f"http://127.0.0.1:{plain}/admin/login/")
        assert (redirected.status_code, redirected.headers["Location"]) == (301, f"https://{HOST}/admin/login/")
        assert requests.get(f"http://127.0.0.1:{plain}/readyz", timeout=10).status_code == 200


def import_file(size: int) -> bytes:
    """A contact import of `size` bytes or a little more: a header and rows of about 240 bytes (long names,
    so that the preview matches few rows)."""
    rows = ["email,name,external_id"]
    while sum(len(row) + 1 for row in rows) < size:
        n = len(rows)
        rows.append(f"person{n:04d}@example.com,{f'Person number {n:04d} ' * 10},ext_{n:04d}")
    return "\n".join(rows).encode() + b"\n"


def test_the_contact_import_takes_its_promised_size_through_the_front_and_only_it(front):
    user = UserFactory(username="importer", is_staff=True)
    user.set_password("a long and unusual passphrase")
    user.save()
    workspace = WorkspaceFactory(slug="acme")
    MembershipFactory(user=user, workspace=workspace)
    session = requests.Session()
    page = session.get(f"{front}/admin/login/", timeout=10)
    session.post(
        f"{front}/admin/login/",
        timeout=10,
        data={
            "username": "importer",
            "password": "a long and unusual passphrase",
            "next": "/admin/",
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
    )
    assert page.status_code == 200 and "sessionid" in session.cookies
    body = import_file(69_000)
    assert 64 * 1024 < len(body) < 70_000 and len(body.splitlines()) <= 1001  # over the old limit, as reported
    url = f"{front}/admin/customers/customer/import/"
    form = session.get(url, timeout=10)
    assert form.status_code == 200
    resp = session.post(
        url,
        timeout=30,
        data={"csrfmiddlewaretoken": session.cookies["csrftoken"], "format": "0", "workspace": workspace.pk},
        files={"import_file": ("contacts.csv", body, "text/csv")},
    )
    assert resp.status_code == 200 and resp.headers.get("X-Request-ID"), resp.status_code  # gunicorn answered
    assert "person0001@example.com" in resp.text  # the preview of the file's rows
    big = session.post(
        url,
        timeout=30,
        data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
        files={"import_file": ("contacts.csv", import_file(2_200_000), "text/csv")},
    )
    assert big.status_code == 413
    elsewhere = session.post(f"{front}/admin/customers/customer/add/", timeout=30, data={"x": "y" * 69_000})
    assert elsewhere.status_code == 413


@contextmanager
def slow_clients(base: str, count: int):
    """`count` connections to `base`, each sending its headers a line every 2 s, never finishing."""
    host, port = base.removeprefix("http://").split(":")
    stop = threading.Event()

    def trickle() -> None:
        try:
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                while not stop.wait(2):
                    sock.sendall(b"X-Slow: 1\r\n")
        except OSError:
            pass  # the server gave up on us: that is the defence working

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    time.sleep(1)  # let them all connect and start their headers
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)


def probe(base: str) -> list[float | None]:
    """Seconds each /healthz took, None for one that did not answer within 2 s."""
    times = []
    for _ in range(PROBES):
        started = time.monotonic()
        try:
            ok = requests.get(base + "/healthz", timeout=2).status_code == 200
            times.append(time.monotonic() - started if ok else None)
        except requests.RequestException:
            times.append(None)
    return times


def under_attack(base: str) -> list[float | None]:
    with slow_clients(base, SLOW_CLIENTS):
        return probe(base)


def test_slow_clients_do_not_block_healthz_through_the_front(front):
    times = under_attack(front)
    print("healthz through the front, under attack:", times)
    assert None not in times, times
    assert max(times) < 0.5, times


def test_without_the_front_slow_clients_block_gunicorn(gthread_gunicorn):
    """Why the proxy is required: the API pool's threads wait on the slow clients' headers (the redirect
    pool's greenlets are many, but bounded too: GUNICORN_WORKER_CONNECTIONS)."""
    times = under_attack(gthread_gunicorn)
    print("healthz straight to gunicorn, under attack:", times)
    assert times.count(None) >= PROBES // 2, times
