"""Conversion events (leads and sales) and the endpoints that record them."""
