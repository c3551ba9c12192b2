"""Customers (shown as Contacts), their activity, and the one matching service."""
