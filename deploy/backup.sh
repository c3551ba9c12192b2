#!/bin/sh
# A logical backup of lftrack's one database: deploy/backup.sh [DATABASE_URL] [DIRECTORY]
# writes DIRECTORY/lftrack-<UTC time>.dump in pg_dump's custom format (compressed; pg_restore picks tables
# from it), checks it reads back, and prints its path. PostgreSQL is all the state there is: why, how often,
# and point-in-time recovery: docs/deployment.md, "Back up". tests/test_backup_restore.py runs it, and
# deploy/systemd/lftrack-backup.service daily.
set -eu
url=${1:-${DATABASE_URL:?DATABASE_URL or an argument names the database}}
directory=${2:-.}
final="$directory/lftrack-$(date -u +%Y%m%dT%H%M%SZ).dump"
partial="$final.partial"
trap 'rm -f "$partial"' EXIT
# One snapshot of the whole database: pg_dump reads in one repeatable-read transaction, beside live writes.
pg_dump --format=custom --file="$partial" "$url"
# A dump that pg_restore cannot list is no backup: fail here, not on the day it is needed.
pg_restore --list "$partial" >/dev/null
mv "$partial" "$final"
# BACKUP_KEEP_DAYS=N removes this directory's dumps older than N days, the new one never; unset keeps them all.
if [ -n "${BACKUP_KEEP_DAYS:-}" ]; then
  find "$directory" -maxdepth 1 -name 'lftrack-*.dump' -mtime +"$BACKUP_KEEP_DAYS" ! -path "$final" -delete
fi
echo "$final"
