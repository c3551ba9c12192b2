"""Email backends for tests that need a worker to die while it hands a message over, or a server to refuse."""

import smtplib

from django.core.mail.backends.locmem import EmailBackend


class WorkerDied(BaseException):
    """Not an Exception: like SIGKILL or a lost machine, no `except Exception` in the sender sees it."""


class DyingBackend(EmailBackend):
    """The locmem outbox, except that the process "dies" while handing over the first message."""

    def send_messages(self, messages):
        raise WorkerDied("killed while handing the message to the SMTP server")


class TemporaryRefusalBackend(EmailBackend):
    """The locmem outbox, except that the server refuses every recipient for now (451): sends are released."""

    def send_messages(self, messages):
        raise smtplib.SMTPRecipientsRefused({message.to[0]: (451, b"try again later") for message in messages})


class PickyBackend(EmailBackend):
    """The locmem outbox, except that the server refuses addresses starting `gone` for good (550: failed, the
    address bounced) and addresses starting `later` for now (451: released, tried again later)."""

    def send_messages(self, messages):
        to = messages[0].to[0]
        if to.startswith("gone"):
            raise smtplib.SMTPRecipientsRefused({to: (550, b"5.1.1 no such user")})
        if to.startswith("later"):
            raise smtplib.SMTPRecipientsRefused({to: (451, b"4.7.1 try again later")})
        return super().send_messages(messages)


class PoisonBackend(EmailBackend):
    """The locmem outbox, except that a message to an address starting `poison` makes the backend raise: a row
    that breaks whoever processes it."""

    def send_messages(self, messages):
        if messages[0].to[0].startswith("poison"):
            raise ValueError(f"cannot encode {messages[0].to[0]}")
        return super().send_messages(messages)
