#!/bin/sh
# Restores a dump of deploy/backup.sh into an empty database: deploy/restore.sh DUMP DATABASE_URL
# (create it first: createdb -T template0 NAME). All or nothing: one transaction, stopped at the first error;
# owners and grants are left out, so the role that restores owns everything.
# Then the planner's statistics, which a restore does not carry. docs/deployment.md, "Back up";
# tests/test_backup_restore.py restores a full database with it and compares what the service answers.
set -eu
dump=${1:?the dump file of deploy/backup.sh}
url=${2:?the DATABASE_URL of an empty database}
pg_restore --exit-on-error --single-transaction --no-owner --no-privileges --dbname="$url" "$dump"
psql --quiet --no-psqlrc --set=ON_ERROR_STOP=1 --command="ANALYZE" "$url"
echo "restored $dump"
