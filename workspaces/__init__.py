"""Workspaces (tenants), their members and their API tokens."""
