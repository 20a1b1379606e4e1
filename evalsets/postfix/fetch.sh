#!/usr/bin/env bash
# Fetch the Postfix HTML manual (Debian package postfix-doc 3.7.11-0+deb12u1) into a cache folder
# OUTSIDE the repository and print the path of its HTML folder (the --docs folder of the golden set).
#
#   bash evalsets/postfix/fetch.sh            # -> ~/.cache/citeline/manuals/postfix-doc-3.7.11/usr/share/doc/postfix/html
#   CITELINE_CACHE=/data/cache bash evalsets/postfix/fetch.sh
#
# Idempotent: when the HTML folder is already there (and complete) nothing is downloaded.
# The manual text must never be committed to the repository, nor used as training data
# (see evalsets/RESERVED).
set -euo pipefail

PACKAGE=postfix-doc
VERSION=3.7.11-0+deb12u1
DEB="${PACKAGE}_${VERSION}_all.deb"
SHA256=6b07bcc68991703acf747dc2500355bdd02aef0a048419b939752c39faf47d8d
EXPECTED_HTML_FILES=136

CACHE="${CITELINE_CACHE:-$HOME/.cache/citeline}"
DEST="$CACHE/manuals/postfix-doc-3.7.11"
HTML="$DEST/usr/share/doc/postfix/html"
STAMP="$DEST/.extracted-$VERSION"

if [[ -f "$STAMP" && -d "$HTML" ]]; then
    echo "$HTML"
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

rm -rf "$DEST/usr"
dpkg -x "$DEB" "$DEST"

count=$(find "$HTML" -maxdepth 1 -name '*.html' | wc -l)
if [[ "$count" -ne "$EXPECTED_HTML_FILES" ]]; then
    echo "expected $EXPECTED_HTML_FILES HTML files in $HTML, found $count" >&2
    exit 1
fi
touch "$STAMP"
echo "$HTML"
