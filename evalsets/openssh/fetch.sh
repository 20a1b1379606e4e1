#!/usr/bin/env bash
# Fetch the OpenSSH manual pages (Debian 12 packages openssh-client, openssh-server and
# openssh-sftp-server, version 1:9.2p1-2+deb12u10, amd64) into a cache folder OUTSIDE the repository,
# render each page to plain text, and print the folder of rendered pages (the --docs folder).
#
#   bash evalsets/openssh/fetch.sh            # -> ~/.cache/citeline/manuals/openssh-9.2p1/rendered
#   CITELINE_CACHE=/data/cache bash evalsets/openssh/fetch.sh
#
# citeline does not read roff sources (no parser for .1/.5/.8 or .gz), so the pages are rendered the
# way training/fetch_manuals.py renders its `render = "man"` manuals: `man -l` with MANWIDTH=4000,
# --no-hyphenation, --no-justification (one line per paragraph), then `col -bx`, trailing blanks
# stripped, saved as <page>.<section>.txt (sshd_config.5.txt). citeline reads them as plain text.
#
# Idempotent: when the rendered folder is already there (and complete) nothing is downloaded.
# The manual text must never be committed to the repository.
set -euo pipefail

VERSION=1:9.2p1-2+deb12u10
ARCH=amd64
# package -> sha256 of its amd64 .deb (the man pages are the same on every architecture, the .deb is not)
declare -A SHA256=(
    [openssh-client]=42c250b8b9110382488c53c066a960bc564ddac2cb9e449f47b6cdbb5fc1cb60
    [openssh-server]=933cd92a2329f9bf26d22660a834ae18ebdbe8df9c6127e4d9fcb098dac9cf72
    [openssh-sftp-server]=18d7ef7873861272b43b764295cbd8c04f439108fc3a4cecb3fe6e095f8ee2a8
)
# Every page the three packages ship, except the two symlinks (slogin.1 -> ssh.1,
# authorized_keys.5 -> sshd.8), which would index the same text twice.
PAGES=(
    man1/scp.1 man1/sftp.1 man1/ssh.1 man1/ssh-add.1 man1/ssh-agent.1 man1/ssh-argv0.1
    man1/ssh-copy-id.1 man1/ssh-keygen.1 man1/ssh-keyscan.1
    man5/moduli.5 man5/ssh_config.5 man5/sshd_config.5
    man8/sftp-server.8 man8/ssh-keysign.8 man8/ssh-pkcs11-helper.8 man8/ssh-sk-helper.8 man8/sshd.8
)
# sha256 of the 17 rendered pages concatenated in PAGES order, with Debian 12's man-db 2.11.2 and
# groff 1.22.4; another renderer may lay out lines differently, and evidence quotes may then not resolve.
RENDERED_SHA256=051fa16612d9c65a85dc01694bbc09f245b2f493b40e217ac9afe83c9f1ddf3d

CACHE="${CITELINE_CACHE:-$HOME/.cache/citeline}"
DEST="$CACHE/manuals/openssh-9.2p1"
OUT="$DEST/rendered"
STAMP="$DEST/.rendered-$VERSION"

if [[ -f "$STAMP" && -d "$OUT" ]]; then
    echo "$OUT"
    exit 0
fi

mkdir -p "$DEST"
cd "$DEST"

deb_of() { echo "${1}_${VERSION/:/%3a}_${ARCH}.deb"; }

for pkg in "${!SHA256[@]}"; do
    deb=$(deb_of "$pkg")
    if [[ -f "$deb" ]] && echo "${SHA256[$pkg]}  $deb" | sha256sum --check --status; then
        continue
    fi
    rm -f "$deb"
    if ! apt-get download "$pkg:$ARCH=$VERSION" >&2; then
        if [[ $(id -u) -ne 0 ]]; then
            echo "apt-get download $pkg:$ARCH=$VERSION failed (run apt-get update as root and retry)" >&2
            exit 1
        fi
        echo "apt-get download failed; refreshing the package lists and retrying" >&2
        apt-get update >&2
        apt-get download "$pkg:$ARCH=$VERSION" >&2
    fi
    if ! echo "${SHA256[$pkg]}  $deb" | sha256sum --check --status; then
        echo "sha256 mismatch for $DEST/$deb (expected ${SHA256[$pkg]}); refusing to use it" >&2
        exit 1
    fi
done

# a fresh extraction: everything but the downloaded .debs goes
find "$DEST" -mindepth 1 -maxdepth 1 ! -name '*.deb' -exec rm -rf {} +
for pkg in "${!SHA256[@]}"; do
    dpkg -x "$(deb_of "$pkg")" "$DEST"
done

if [[ ! -f "$DEST/usr/share/doc/openssh-client/copyright" ]]; then
    echo "no copyright file in the extracted openssh-client package" >&2
    exit 1
fi

mkdir -p "$OUT"
for page in "${PAGES[@]}"; do
    src="$DEST/usr/share/man/$page.gz"
    if [[ ! -f "$src" ]]; then
        echo "missing man page $src in the extracted packages" >&2
        exit 1
    fi
    target="$OUT/$(basename "$page").txt"
    MANWIDTH=4000 MAN_KEEP_FORMATTING="" LANG=C.UTF-8 \
        man --no-hyphenation --no-justification -l "$src" | col -bx | sed 's/[[:space:]]*$//' >"$target"
    if [[ ! -s "$target" ]]; then
        echo "man -l $src rendered nothing" >&2
        exit 1
    fi
done

got=$(for page in "${PAGES[@]}"; do cat "$OUT/$(basename "$page").txt"; done | sha256sum | cut -d' ' -f1)
if [[ "$got" != "$RENDERED_SHA256" ]]; then
    echo "warning: the rendered pages differ from Debian 12's rendering (sha256 $got);" \
        "some evidence quotes may not resolve" >&2
fi
touch "$STAMP"
echo "$OUT"
