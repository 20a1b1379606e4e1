"""Download and unpack the Debian documentation packages of training/manuals.toml into the cache.

    python training/fetch_manuals.py            # all manuals; idempotent
    python training/fetch_manuals.py --check    # only report what is there

Each package is fetched with ``apt-get download NAME=VERSION`` (the pinned version; apt checks the
archive signatures and the file's hash), its sha256 is compared with the one in manuals.toml when
given, and it is unpacked with ``dpkg -x`` into ``$CITELINE_CACHE/train/manuals/<package>/``
(default ``~/.cache/citeline/train``). Man pages (``render = "man"``) are rendered to plain text
under ``_rendered/``. A stamp file marks a complete extraction, so a second run does nothing.
Reserved packages (PostgreSQL, R, Postfix, evalsets/RESERVED) are refused before any download.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.common import (
    Manual,
    cache_root,
    check_not_reserved,
    load_manuals,
    manual_files,
    rendered_path,
)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _deb_path(manual: Manual, debs: Path) -> Path | None:
    name = manual.package
    version = manual.version.replace(":", "%3a")
    found = sorted(debs.glob(f"{name}_{version}_*.deb"))
    return found[0] if found else None


def download(manual: Manual, debs: Path) -> Path:
    check_not_reserved(manual.package)
    debs.mkdir(parents=True, exist_ok=True)
    deb = _deb_path(manual, debs)
    if deb is not None and (not manual.sha256 or sha256(deb) == manual.sha256):
        return deb
    if deb is not None:
        deb.unlink()
    cmd = ["apt-get", "download", f"{manual.package}={manual.version}"]
    result = subprocess.run(cmd, cwd=debs, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({result.stderr.strip()[-300:]}); run apt-get update, or pin the "
            f"version apt-cache policy {manual.package} offers in training/manuals.toml"
        )
    deb = _deb_path(manual, debs)
    if deb is None:
        raise SystemExit(f"apt-get download {manual.package} left no .deb in {debs}")
    if manual.sha256 and sha256(deb) != manual.sha256:
        raise SystemExit(f"{deb.name}: sha256 {sha256(deb)} is not the pinned {manual.sha256}")
    return deb


def render_man(manual: Manual) -> int:
    """Render the man pages to plain text: one line per paragraph (MANWIDTH large, no hyphenation)."""
    count = 0
    for man in manual_files(manual):
        target = rendered_path(manual, man)
        target.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "MANWIDTH": "4000", "MAN_KEEP_FORMATTING": "", "LANG": "C.UTF-8"}
        data = gzip.decompress(man.read_bytes()) if man.suffix == ".gz" else man.read_bytes()
        tmp = target.with_suffix(".src")
        tmp.write_bytes(data)
        result = subprocess.run(
            ["man", "--no-hyphenation", "--no-justification", "-l", str(tmp)],
            capture_output=True,
            env=env,
        )
        tmp.unlink()
        if result.returncode != 0:
            raise SystemExit(f"man -l {man} failed: {result.stderr.decode(errors='replace')[-300:]}")
        col = subprocess.run(["col", "-bx"], input=result.stdout, capture_output=True)
        text = (col.stdout if col.returncode == 0 else result.stdout).decode("utf-8", errors="replace")
        target.write_text("\n".join(line.rstrip() for line in text.splitlines()) + "\n", encoding="utf-8")
        count += 1
    return count


def fetch(manual: Manual, debs: Path) -> str:
    check_not_reserved(manual.package)
    if manual.stamp.is_file():
        return "present"
    deb = download(manual, debs)
    if manual.root.exists():
        shutil.rmtree(manual.root)
    manual.root.mkdir(parents=True)
    subprocess.run(["dpkg", "-x", str(deb), str(manual.root)], check=True)
    copyright_file = manual.root / manual.copyright
    if not copyright_file.is_file():
        raise SystemExit(f"{manual.package}: no copyright file at {manual.copyright}")
    if manual.render == "man":
        render_man(manual)
    files = manual_files(manual)
    if not files:
        raise SystemExit(f"{manual.package}: no file matches {manual.include}")
    manual.stamp.write_text(f"{deb.name} {sha256(deb)} files={len(files)}\n", encoding="utf-8")
    return f"fetched {deb.name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only report which manuals are present")
    parser.add_argument("--only", nargs="*", default=None, help="only these packages")
    args = parser.parse_args(argv)
    debs = cache_root() / "debs"
    missing = 0
    for manual in load_manuals():
        if args.only is not None and manual.package not in args.only:
            continue
        if args.check:
            state = "present" if manual.stamp.is_file() else "missing"
            missing += state == "missing"
        else:
            state = fetch(manual, debs)
        n = len(manual_files(manual)) if manual.stamp.is_file() else 0
        print(f"{manual.package:16} {manual.version:24} {state}: {n} files ({manual.licence})", flush=True)
    print(f"cache: {cache_root() / 'manuals'}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
