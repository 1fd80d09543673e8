#!/bin/sh
# Restore a deploy/backup.sh archive into an EMPTY stack: a database with no tables (before `migrate`
# ever ran) and empty image and export folders. It refuses anything else, so that it never mixes two
# states. docs/operations.md, "Restore".
#
#   deploy/restore.sh ARCHIVE
#
# Same environment as backup.sh. Checks every file against the archive's SHA-256 manifest first.
# Afterwards run the migrations of the version you deploy (compose: `docker compose up -d`).
set -eu

archive="${1:?usage: restore.sh ARCHIVE}"
: "${DATABASE_URL:?set DATABASE_URL}"
: "${PRIVATE_IMAGE_ROOT:?set PRIVATE_IMAGE_ROOT}"
: "${CPRT_EXPORT_ROOT:?set CPRT_EXPORT_ROOT}"
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ] && [ -z "${PGPASSWORD:-}" ]; then
    PGPASSWORD="$(cat "$POSTGRES_PASSWORD_FILE")"
    export PGPASSWORD
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xf "$archive" -C "$work"
head -n 1 "$work/VERSION" | grep -qx 'cprt-backup 1' || { echo "restore: $archive is not a cprt backup" >&2; exit 2; }
(cd "$work" && sha256sum --check --quiet MANIFEST.sha256) || { echo "restore: $archive is damaged (checksums differ)" >&2; exit 2; }

tables="$(psql --dbname="$DATABASE_URL" --tuples-only --no-align --command="SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")"
if [ "$tables" != "0" ]; then
    echo "restore: the database already has $tables tables; restore only into an empty database" >&2
    exit 3
fi
for root in "$PRIVATE_IMAGE_ROOT" "$CPRT_EXPORT_ROOT"; do
    if [ -d "$root" ] && [ -n "$(ls -A "$root")" ]; then
        echo "restore: $root is not empty; restore only into empty folders" >&2
        exit 3
    fi
done

pg_restore --no-owner --no-privileges --exit-on-error --single-transaction --dbname="$DATABASE_URL" "$work/database.dump"
for name in images exports; do
    if [ "$name" = images ]; then root="$PRIVATE_IMAGE_ROOT"; else root="$CPRT_EXPORT_ROOT"; fi
    mkdir -p "$root"
    (cd "$work/media/$name" && tar -cf - .) | (cd "$root" && tar -xf -)
done
echo "restored: $archive"
