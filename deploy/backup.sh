#!/bin/sh
# Back up CPRT Workbench: the PostgreSQL database (pg_dump, custom format) and the private media
# (images, exports) into one tar archive with a SHA-256 manifest. docs/operations.md, "Backups".
#
#   deploy/backup.sh [ARCHIVE]       default: $BACKUP_DIR/cprt-<UTC time>.tar (BACKUP_DIR default .)
#
# Reads DATABASE_URL (postgres://user[:password]@host:port/db), POSTGRES_PASSWORD_FILE (when the URL has
# no password), PRIVATE_IMAGE_ROOT and CPRT_EXPORT_ROOT. pg_dump must be at least the server's version
# (compose's `backup` service runs the postgres image's own). The database stays online: pg_dump reads
# one consistent snapshot; files written while the media are copied may or may not be in the archive.
set -eu

: "${DATABASE_URL:?set DATABASE_URL}"
: "${PRIVATE_IMAGE_ROOT:?set PRIVATE_IMAGE_ROOT}"
: "${CPRT_EXPORT_ROOT:?set CPRT_EXPORT_ROOT}"
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ] && [ -z "${PGPASSWORD:-}" ]; then
    PGPASSWORD="$(cat "$POSTGRES_PASSWORD_FILE")"
    export PGPASSWORD
fi
archive="${1:-${BACKUP_DIR:-.}/cprt-$(date -u +%Y%m%dT%H%M%SZ).tar}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/media"
pg_dump --format=custom --no-owner --no-privileges --dbname="$DATABASE_URL" --file="$work/database.dump"
for name in images exports; do
    if [ "$name" = images ]; then root="$PRIVATE_IMAGE_ROOT"; else root="$CPRT_EXPORT_ROOT"; fi
    mkdir -p "$work/media/$name"
    if [ -d "$root" ]; then
        # An import's parking folder (.import-vispr-*: cleaned bytes on their way into place) is not data.
        (cd "$root" && tar --exclude='./.import-vispr-*' -cf - .) | (cd "$work/media/$name" && tar -xf -)
    fi
done
(cd "$work" && find database.dump media -type f -print0 | sort -z | xargs -0 -r sha256sum > MANIFEST.sha256)
printf 'cprt-backup 1\ncreated %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$work/VERSION"
tar -cf "$archive.partial" -C "$work" VERSION MANIFEST.sha256 database.dump media
mv "$archive.partial" "$archive"
echo "backup written: $archive ($(wc -l < "$work/MANIFEST.sha256") files)"
