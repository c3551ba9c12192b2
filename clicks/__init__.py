"""Tracked links, the posts they belong to, and the clicks the redirect records."""
