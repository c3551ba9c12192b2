"""Email backends for tests that need a worker to die while it hands a message over."""
from django.core.mail.backends.locmem import EmailBackend


class WorkerDied(BaseException):
    """Not an Exception: like SIGKILL or a lost machine, no `except Exception` in the sender sees it."""


class DyingBackend(EmailBackend):
    """The locmem outbox, except that the process "dies" while handing over the first message."""

    def send_messages(self, messages):
        raise WorkerDied("killed while handing the message to the SMTP server")
