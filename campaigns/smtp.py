"""SMTP hand-over: a batch of messages over one connection of the email backend, sorted by what the server answered."""

import contextlib
import smtplib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from django.core.mail import EmailMessage, get_connection

T = TypeVar("T")
AMBIGUOUS = (
    "the connection failed during this message, which may or may not have been accepted; not retried (at most once)"
)


@dataclass
class Delivery(Generic[T]):
    """Each item handed over ends in exactly one list; `error` is set when the connection became unusable.
    A failed or bounced item comes with the error to record and its `reason` for a log line (no address)."""

    accepted: list[T] = field(default_factory=list)
    failed: list[tuple[T, str, str]] = field(default_factory=list)  # refused for good, or fate unknown: not retried
    bounced: list[tuple[T, str, str]] = field(default_factory=list)  # the address refused for good (5xx to RCPT TO)
    retry: list[T] = field(default_factory=list)  # refused for now (4xx): certainly not sent
    released: list[T] = field(default_factory=list)  # never handed over: certainly not sent
    error: str = ""


class Mailer:
    """One connection of the configured email backend, opened when first needed and reused until closed."""

    def __init__(self) -> None:
        self._connection = None

    def connection(self):
        if self._connection is None:
            connection = get_connection(fail_silently=False)
            connection.open()  # SMTP: connect, STARTTLS, login; raises when any of them fails
            self._connection = connection
        return self._connection

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # A server gone away cannot take QUIT; nothing is lost by that.
            with contextlib.suppress(Exception):
                connection.close()


def deliver(
    items: list[T],
    message: Callable[[T], EmailMessage],
    mailer: Mailer,
    handing_over: Callable[[T, list[T]], None] | None = None,
) -> Delivery[T]:
    """Send `message(item)` for each item in order; stop at the first connection-level failure.

    `handing_over(item, accepted)` runs just before each message goes to the server, with the items
    accepted since its last call: the caller records both in one step, so a process killed at any
    moment leaves one message at most whose fate it does not know.

    Sorting follows what SMTP tells for certain: a reply code means the server did not take the
    message (4xx: try later, 5xx: never); an error before or instead of a reply (refused connection,
    login, sender) means nothing was handed over; only a connection lost in the middle of a message
    leaves its fate unknown.
    """
    delivery: Delivery[T] = Delivery()
    try:
        connection = mailer.connection()
    except Exception as exc:  # unreachable, refused, TLS or login failed: nothing was handed over
        delivery.released = list(items)
        delivery.error = describe(exc)
        mailer.close()
        return delivery
    unrecorded: list[T] = []
    for index, item in enumerate(items):
        try:
            built = message(item)
        except Exception as exc:  # the message could not be built (an address the email package refuses)
            delivery.failed.append((item, f"not sent: {describe(exc)}", reason(exc)))
            continue
        if handing_over is not None:
            handing_over(item, unrecorded)
            unrecorded = []
        try:
            if connection.send_messages([built]) != 1:
                raise RuntimeError("the email backend did not send it")
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            if codes and all(400 <= code < 500 for code in codes):
                delivery.retry.append(item)
            elif codes and all(code >= 500 for code in codes):
                delivery.bounced.append((item, describe(exc), reason(exc)))
            else:
                delivery.failed.append((item, describe(exc), reason(exc)))
        except (smtplib.SMTPSenderRefused, smtplib.SMTPAuthenticationError, smtplib.SMTPHeloError) as exc:
            # Refused before DATA for a reason of ours (sender, credentials): no message of the batch can go.
            delivery.released.extend(items[index:])
            delivery.error = describe(exc)
            break
        except smtplib.SMTPResponseException as exc:  # the server answered "no" to this message
            if exc.smtp_code == 421:  # "closing the connection": this one and the rest were not taken
                delivery.released.extend(items[index:])
                delivery.error = describe(exc)
                break
            if 400 <= exc.smtp_code < 500:
                delivery.retry.append(item)
            else:
                delivery.failed.append((item, describe(exc), reason(exc)))
        except smtplib.SMTPNotSupportedError as exc:  # e.g. a non-ASCII address to a server without SMTPUTF8
            delivery.failed.append((item, f"not sent: {describe(exc)}", reason(exc)))
        except (smtplib.SMTPException, OSError) as exc:
            # Disconnected or timed out in the middle: whether the server took this one is unknown.
            delivery.failed.append((item, f"{AMBIGUOUS}: {describe(exc)}", reason(exc)))
            delivery.released.extend(items[index + 1 :])
            delivery.error = describe(exc)
            break
        except Exception as exc:  # refused while being built by the backend (an address the email package refuses)
            delivery.failed.append((item, f"not sent: {describe(exc)}", reason(exc)))
        else:
            delivery.accepted.append(item)
            unrecorded.append(item)
    if delivery.error:
        mailer.close()
    return delivery


def describe(exc: BaseException) -> str:
    """The server's answer ("550 5.1.1 No such user"), or the error's type and text; never credentials."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        text = "; ".join(f"{code} {_text(message)}" for code, message in exc.recipients.values())
    elif isinstance(exc, smtplib.SMTPResponseException):
        text = f"{exc.smtp_code} {_text(exc.smtp_error)}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return text[:1000]


def reason(exc: BaseException) -> str:
    """What went wrong, fit for a log line: the server's reply code, or the error's type (never its text,
    which may name the address)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "smtp " + ",".join(sorted({str(code) for code, _ in exc.recipients.values()}))
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"smtp {exc.smtp_code}"
    return type(exc).__name__


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
