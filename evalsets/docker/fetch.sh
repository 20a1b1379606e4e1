#!/usr/bin/env bash
# Fetch the Docker 20.10 Markdown documentation (Debian package docker-doc 20.10.24+dfsg1-1+deb12u1)
# into a cache folder OUTSIDE the repository and print the path of the folder to index (the --docs
# folder of the golden set).
#
#   bash evalsets/docker/fetch.sh            # -> ~/.cache/citeline/manuals/docker-doc-20.10.24/docs
#   CITELINE_CACHE=/data/cache bash evalsets/docker/fetch.sh
#
# The package ships most pages gzipped (`run.md.gz`), so the included pages are copied into docs/,
# keeping their relative paths, and decompressed there. Included (152 files):
#   deprecated.md
#   reference/builder.md, reference/run.md, reference/glossary.md
#   reference/commandline/*.md        except index.md (a table of links to the other pages)
#   extend/*.md                       (plugins)
# Left out: reference/index.md (four links), the Engine API pages under api/ (old API versions,
# mostly YAML), contributing/ (docs for contributors to the docs), README.md, rootless.md (a stub).
#
# Idempotent: when the docs folder is already there (and complete) nothing is downloaded.
# The manual text must never be committed to the repository.
set -euo pipefail

PACKAGE=docker-doc
VERSION=20.10.24+dfsg1-1+deb12u1
DEB="${PACKAGE}_${VERSION}_all.deb"
SHA256=b665c4be8746a496c8f561d42ff8026fbed2ee6581e53fa63df40656a9d80eeb
EXPECTED_FILES=152

CACHE="${CITELINE_CACHE:-$HOME/.cache/citeline}"
DEST="$CACHE/manuals/docker-doc-20.10.24"
SHIPPED="$DEST/usr/share/doc/docker-doc"
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

# Copy one shipped page (plain or gzipped) to docs/ under its .md name.
copy_page() {
    local rel=$1
    mkdir -p "$DOCS/$(dirname "$rel")"
    if [[ -f "$SHIPPED/$rel" ]]; then
        cp "$SHIPPED/$rel" "$DOCS/$rel"
    elif [[ -f "$SHIPPED/$rel.gz" ]]; then
        gzip -dc "$SHIPPED/$rel.gz" >"$DOCS/$rel"
    else
        echo "missing from the package: $rel" >&2
        exit 1
    fi
}

pages() {
    echo deprecated.md
    printf 'reference/%s.md\n' builder run glossary
    (cd "$SHIPPED" && find reference/commandline extend -maxdepth 1 \( -name '*.md' -o -name '*.md.gz' \)) \
        | sed 's/\.gz$//' | grep -v '^reference/commandline/index\.md$' | sort
}

while read -r rel; do
    copy_page "$rel"
done < <(pages)

count=$(find "$DOCS" -type f -name '*.md' | wc -l)
if [[ "$count" -ne "$EXPECTED_FILES" ]]; then
    echo "expected $EXPECTED_FILES Markdown files in $DOCS, found $count" >&2
    exit 1
fi
touch "$STAMP"
echo "$DOCS"
