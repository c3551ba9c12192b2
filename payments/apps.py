"""App config for payments."""

from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"

    def ready(self) -> None:
        from customers.erasure import erasure_parts_register

        # Its part of a person, erased and exported with them, before conversions detach them from their sales
        # (customers/erasure.py).
        erasure_parts_register({"payments": (10, "payments.erasure.person_erase", "payments.erasure.person_export")})
