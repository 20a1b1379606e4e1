#!/usr/bin/env bash
# Fetch the gnuplot 5.4 manual (gnuplot.pdf, Debian package gnuplot-doc 5.4.4+dfsg1-2) into a cache
# folder OUTSIDE the repository and print the folder to index (the --docs folder of the golden set).
#
#   bash evalsets/gnuplot/fetch.sh            # -> ~/.cache/citeline/manuals/gnuplot-doc-5.4.4/docs
#   CITELINE_CACHE=/data/cache bash evalsets/gnuplot/fetch.sh
#
# The package's doc folder also holds NEWS, README and ~500 demo scripts and data files; only the
# PDF manual is indexed, so it is copied alone into docs/ (the folder printed). Idempotent: when
# docs/gnuplot.pdf is already there (and complete) nothing is downloaded. The manual text must
# never be committed to the repository, nor used as training data.
set -euo pipefail

PACKAGE=gnuplot-doc
VERSION=5.4.4+dfsg1-2
DEB="${PACKAGE}_${VERSION}_all.deb"
SHA256=73fe1816a296594cf6a1d38528f8d740fd650f57a2cb62e029f7920fcd5b31f0
PDF_IN_PACKAGE=usr/share/doc/gnuplot/gnuplot.pdf
PDF_SHA256=df68dd0613f043141512fc4436d17aaf96727d5a758d85233915ac5056a97206

CACHE="${CITELINE_CACHE:-$HOME/.cache/citeline}"
DEST="$CACHE/manuals/gnuplot-doc-5.4.4"
DOCS="$DEST/docs"
STAMP="$DEST/.extracted-$VERSION"

if [[ -f "$STAMP" && -f "$DOCS/gnuplot.pdf" ]]; then
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

if ! echo "$PDF_SHA256  $DEST/$PDF_IN_PACKAGE" | sha256sum --check --status; then
    echo "$DEST/$PDF_IN_PACKAGE is missing or not the expected file (sha256 $PDF_SHA256)" >&2
    exit 1
fi
mkdir -p "$DOCS"
cp -p "$DEST/$PDF_IN_PACKAGE" "$DOCS/gnuplot.pdf"  # -p: the package mtime, so a re-extraction looks unchanged
touch "$STAMP"
echo "$DOCS"
