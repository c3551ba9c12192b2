"""The running release: the installed distribution's version, which pyproject.toml sets and CHANGELOG.md describes."""

from importlib import metadata

# Read once per process: a deploy that installs a new release restarts or reloads the processes anyway.
VERSION = metadata.version("lftrack")
