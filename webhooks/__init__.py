"""Outbound webhooks: the event outbox, endpoints, signed delivery on the task engine (docs/webhooks.md)."""
