"""A real HTTP receiver on loopback that verifies Standard Webhooks signatures, and a worker run in-process."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from procrastinate.contrib.django import app
from standardwebhooks import Webhook, WebhookVerificationError

from webhooks.models import Delivery, Event


class Receiver:
    """Answers each POST with the next scripted status (200 once the script runs out); records what came.

    `received`: (webhook-id, verified body or None, headers, path) per request, in arrival order.
    `hold`: seconds to wait before answering (a slow receiver); `most_at_once`: the most requests it held at once."""

    def __init__(self):
        self.secret: str | None = None
        self.script: list[int] = []
        self.hold = 0.0
        self.received: list[tuple[str, dict | None, dict, str]] = []
        self.lock = threading.Lock()
        self.at_once = self.most_at_once = 0
        self.decide = None  # a function of the verified body answering a status for it, or None for the script's
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    payload = Webhook(receiver.secret).verify(body, headers) if receiver.secret else None
                except WebhookVerificationError:
                    payload = None
                with receiver.lock:
                    receiver.received.append((headers.get("webhook-id"), payload, headers, self.path))
                    status = receiver.script.pop(0) if receiver.script else 200
                    status = receiver.decide(payload) or status if receiver.decide else status
                    receiver.at_once += 1
                    receiver.most_at_once = max(receiver.most_at_once, receiver.at_once)
                if receiver.hold:
                    time.sleep(receiver.hold)
                with receiver.lock:
                    receiver.at_once -= 1
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                answer = json.dumps({"ok": status < 300}).encode()
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def types(self) -> list[str]:
        return [payload["type"] for _, payload, _, _ in self.received if payload]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def local_hooks(settings):
    """Receivers on loopback over http: allowed for the tests only. Retries come fast."""
    settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    settings.DEBUG = True
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.05
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    return settings


def work(until=None, *, timeout: float = 30.0) -> None:
    """Run the engine's worker in this process until every event is dispatched and no delivery is pending
    (or `until()` holds)."""
    done = until or (
        lambda: (
            not Event.objects.filter(dispatched_at__isnull=True).exists()
            and not Delivery.objects.filter(state=Delivery.State.PENDING, endpoint__enabled=True).exists()
        )
    )
    deadline = time.monotonic() + timeout
    with app.replace_connector(app.connector.get_worker_connector()) as worker_app:
        while not done():
            assert time.monotonic() < deadline, "the worker did not finish in time"
            worker_app.run_worker(
                queues=["webhooks"], wait=False, install_signal_handlers=False, listen_notify=False, concurrency=4
            )
            time.sleep(0.05)
