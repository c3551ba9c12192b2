"""App config for customers."""

from django.apps import AppConfig


class CustomersConfig(AppConfig):
    name = "customers"
    verbose_name = "Contacts"

    def ready(self) -> None:
        from webhooks.payloads import payload_builders_register

        # The body of `customer.erased`: the id only (webhooks/payloads.py).
        payload_builders_register({"erased_customer": "customers.erasure.erased_customer_object"})
