"""Pytest plugin loaded before pytest-django reads settings: gives the suite a throwaway SECRET_KEY."""
import os

# pytest-django imports settings before any conftest runs; DEBUG is off in tests, so a key is required.
os.environ.setdefault("SECRET_KEY", "insecure-key-for-the-test-suite-only")
