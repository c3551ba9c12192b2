"""lftrack: the Django project package (settings, URLs and the API plumbing every app shares)."""
