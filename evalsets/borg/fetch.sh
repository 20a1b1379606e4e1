#!/usr/bin/env bash
# Fetch the BorgBackup 1.2.4 HTML manual (Debian package borgbackup-doc 1.2.4-1, Sphinx) into a cache
# folder OUTSIDE the repository and print the folder of documents to index (the --docs folder of the
# golden set).
#
#   bash evalsets/borg/fetch.sh            # -> ~/.cache/citeline/manuals/borgbackup-doc-1.2.4/docs
#   CITELINE_CACHE=/data/cache bash evalsets/borg/fetch.sh
#
# The package's html/ folder also holds pages that are not manual text, or that repeat another page;
# only the pages of INCLUDE are copied into docs/ (same relative paths), see evalsets/borg/README.md.
# Idempotent: when docs/ is already there (and complete) nothing is downloaded.
# The manual text must never be committed to the repository.
set -euo pipefail

PACKAGE=borgbackup-doc
VERSION=1.2.4-1
DEB="${PACKAGE}_${VERSION}_all.deb"
SHA256=f7c621fde76d460f071e8c0803d62198101f1c86ef3430db158f2e789570dbda

# Left out: book.html, usage.html, deployment.html (tables of contents), index.html (repeats
# introduction.html plus a table of contents), man_intro.html (the man page's copy of
# usage/general.html), paperkey.html (an interactive print form), search.html, _static/, _sources/.
INCLUDE=(
    authors.html changes.html development.html faq.html installation.html internals.html
    introduction.html quickstart.html support.html
    deployment/automated-local.html deployment/central-backup-server.html
    deployment/hosting-repositories.html deployment/image-backup.html deployment/pull-backup.html
    internals/data-structures.html internals/frontends.html internals/security.html
    usage/benchmark.html usage/borgfs.html usage/check.html usage/compact.html usage/config.html
    usage/create.html usage/debug.html usage/delete.html usage/diff.html usage/extract.html
    usage/general.html usage/help.html usage/info.html usage/init.html usage/key.html usage/list.html
    usage/lock.html usage/mount.html usage/notes.html usage/prune.html usage/recreate.html
    usage/rename.html usage/serve.html usage/tar.html usage/upgrade.html
)

CACHE="${CITELINE_CACHE:-$HOME/.cache/citeline}"
DEST="$CACHE/manuals/borgbackup-doc-1.2.4"
HTML="$DEST/usr/share/doc/borgbackup/html"
DOCS="$DEST/docs"
STAMP="$DEST/.extracted-$VERSION"

if [[ -f "$STAMP" && -d "$DOCS" ]]; then
    echo "$DOCS"
    exit 0
fi

mkdir -p "$DEST"
cd "$DEST"

if [[ ! -f "$DEB" ]] || ! echo "$SHA256  $DEB" | sha256sum --check --status; then
    rm -f "$DEB"
    if ! apt-get download "$PACKAGE=$VERSION" >&2; then
        echo "apt-get download failed; refreshing the package lists and retrying" >&2
        apt-get update >&2
        apt-get download "$PACKAGE=$VERSION" >&2
    fi
fi

if ! echo "$SHA256  $DEB" | sha256sum --check --status; then
    echo "sha256 mismatch for $DEST/$DEB (expected $SHA256); refusing to use it" >&2
    exit 1
fi

rm -rf "$DEST/usr" "$DOCS"
dpkg -x "$DEB" "$DEST"

for page in "${INCLUDE[@]}"; do
    if [[ ! -f "$HTML/$page" ]]; then
        echo "$HTML/$page is missing from $DEB" >&2
        exit 1
    fi
    mkdir -p "$DOCS/$(dirname "$page")"
    # keep the package's mtime so that a re-extraction does not look like a changed file to `citeline add`
    cp -p "$HTML/$page" "$DOCS/$page"
done

touch "$STAMP"
echo "$DOCS"
