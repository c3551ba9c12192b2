"""What the sender needs in production, as a system check (`check --deploy`) and at the sender's start."""

from django.conf import settings
from django.core import checks


def sending_problems() -> list[tuple[str, str]]:
    """(check id, one line naming the variable) per missing setting; none with DEBUG on (the console backend is the point there).

    Without EMAIL_URL the sender would print messages to stdout and mark them sent; without an https
    PUBLIC_BASE_URL the unsubscribe links would point elsewhere, and RFC 8058 requires https for them.
    """
    if settings.DEBUG:
        return []
    problems = []
    if not settings.EMAIL_URL_SET:
        problems.append(
            (
                "lftrack.E001",
                "EMAIL_URL is required when DEBUG is off (e.g. smtp+tls://user:password@smtp.example.com:587)",
            )
        )
    if not settings.PUBLIC_BASE_URL.startswith("https://"):
        problems.append(
            ("lftrack.E002", "PUBLIC_BASE_URL must be an https URL when DEBUG is off (unsubscribe links use it)")
        )
    return problems


@checks.register(checks.Tags.security, deploy=True)
def check_sending(app_configs, **kwargs) -> list[checks.Error]:
    return [checks.Error(message, id=check_id) for check_id, message in sending_problems()]
