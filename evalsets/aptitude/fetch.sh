#!/usr/bin/env bash
# Fetch the aptitude user's manual (Debian package aptitude-doc-en 0.8.13-5, DocBook XSL chunked
# HTML) into a cache folder OUTSIDE the repository, convert it to six Word documents with pandoc,
# and print the folder of .docx files (the --docs folder of the golden set).
#
#   bash evalsets/aptitude/fetch.sh            # -> ~/.cache/citeline/manuals/aptitude-doc-en-0.8.13/docx
#   CITELINE_CACHE=/data/cache bash evalsets/aptitude/fetch.sh
#
# The converter is pinned: pandoc 2.17.1.1 (Debian 12 package pandoc 2.17.1.1-2~deb12u1, install it
# with `apt-get install -y pandoc=2.17.1.1-2~deb12u1`), with the Lua filter docbook-html.lua beside
# this script. SOURCE_DATE_EPOCH makes its output byte-identical, so each .docx is checked against
# a sha256 as well: the evidence quotes of the golden set are copied from these documents.
#
# Idempotent: when the .docx folder is already there (and complete) nothing is downloaded or converted.
# The manual text must never be committed to the repository.
set -euo pipefail

PACKAGE=aptitude-doc-en
VERSION=0.8.13-5
DEB="${PACKAGE}_${VERSION}_all.deb"
SHA256=ba4864ca26464bbe06acd94dc4a79402eea5d7b2d3da943d6ecce3c752bc9e84
PANDOC_VERSION=2.17.1.1
# The date of the package's last Debian changelog entry (2022-08-06): the timestamp written into each .docx.
export SOURCE_DATE_EPOCH=1659757553

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FILTER="$HERE/docbook-html.lua"
CACHE="${CITELINE_CACHE:-$HOME/.cache/citeline}"
DEST="$CACHE/manuals/aptitude-doc-en-0.8.13"
HTML="$DEST/usr/share/doc/aptitude/html/en"
OUT="$DEST/docx"
STAMP="$DEST/.converted-$VERSION"

# document name, title, HTML chunks (globs in $HTML); sha256 of the .docx pandoc writes from them
DOCUMENTS=(
    "introduction|aptitude user's manual: Introduction|pr01*.html"
    "getting-started|aptitude user's manual: Getting started|ch01*.html"
    "reference-guide|aptitude user's manual: Reference guide|ch02*.html"
    "faq|aptitude user's manual: Frequently asked questions|ch03*.html"
    "credits|aptitude user's manual: Credits|ch04*.html"
    "command-line-reference|aptitude user's manual: Command-line reference|rn01*.html"
)
declare -A DOCX_SHA256=(
    [introduction]=9dd8166222f7b24bcea6e408b28b93a52961577cfb4479cc0dccfee275d1826a
    [getting-started]=12edfc10ac760085dbd1a0b161d526f087222924b27275651db343097d024277
    [reference-guide]=f8d7413af8661bb6af7801d65956732a38e59d9d7554205d2105bbaf90fe83d5
    [faq]=e4f141837a567e457881616ba45b7a3db1c9c3cdf481aaf9145fcac440951613
    [credits]=58069e196c8f140e6a4b56f8ffbc4333b229d77ff991c6073e9940b876d6172d
    [command-line-reference]=403e11f9e03105b8cb2856762484a4ae545c4d4240b31744d6f8a5ff2ab5308c
)

if [[ -f "$STAMP" && -d "$OUT" ]]; then
    echo "$OUT"
    exit 0
fi

if ! command -v pandoc >/dev/null; then
    echo "pandoc is not installed; run: apt-get install -y pandoc=2.17.1.1-2~deb12u1" >&2
    exit 1
fi
have=$(pandoc --version | head -1)
if [[ "$have" != "pandoc $PANDOC_VERSION" ]]; then
    echo "need pandoc $PANDOC_VERSION (the evidence quotes are taken from its output), found: $have" >&2
    exit 1
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

rm -rf "$DEST/usr" "$OUT" "$DEST/html-joined"
dpkg -x "$DEB" "$DEST"
mkdir -p "$OUT" "$DEST/html-joined"

# The <body> of one chunk, without <img> tags: pandoc's DOCX writer fetches images before any
# filter runs and would print their alt text ("[Note]") in place of the missing icons. A reference
# entry (rn01reNN) gets its command name as a heading, its sections one level below it.
chunk_body() {
    perl -0777 -ne '
        next unless /<body[^>]*>(.*)<\/body>/s;
        my $body = $1;
        $body =~ s/<img\b[^>]*>//g;
        if ($ARGV =~ /rn\d+re\d+\.html$/ && /<title>([^<]*)<\/title>/) {
            my $name = $1;
            $body =~ s{<(/?)h2\b}{<$1h3}g;
            $body = "<h2>$name</h2>" . $body;
        }
        print $body;
    ' "$1"
}

for entry in "${DOCUMENTS[@]}"; do
    IFS='|' read -r name title pattern <<<"$entry"
    joined="$DEST/html-joined/$name.html"
    mapfile -t chunks < <(cd "$HTML" && ls $pattern | LC_ALL=C sort)
    {
        echo "<html><head><title>$title</title></head><body>"
        for chunk in "${chunks[@]}"; do
            chunk_body "$HTML/$chunk"
        done
        echo "</body></html>"
    } >"$joined"
    pandoc --from html --to docx --lua-filter "$FILTER" --metadata title="$title" \
        --output "$OUT/$name.docx" "$joined" 2>"$DEST/html-joined/$name.pandoc.log"
    if ! echo "${DOCX_SHA256[$name]}  $OUT/$name.docx" | sha256sum --check --status; then
        echo "sha256 mismatch for $OUT/$name.docx (expected ${DOCX_SHA256[$name]}): the conversion" \
            "differs from the one the golden set was written against" >&2
        exit 1
    fi
done

touch "$STAMP"
echo "$OUT"
