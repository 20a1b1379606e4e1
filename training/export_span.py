"""Ship a span branch (training/span_folds.py ``--final``) beside the packaged cross-encoder.

    .venv-train/bin/python -m training.export_span --branch DIR/branch-f2.pt \
        --out src/citeline/answer/data/cross-encoder --weight 0.5

The packaged ``model.onnx`` keeps its weights; it gains one output, the hidden states after the
layers the branch shares with it, so the reader's logits and the checker's are what they were.
``span.onnx`` (int8) runs the branch's upper layers and the start/end head on those hidden states;
the runtime (``citeline.answer.span``) turns its logits into best span minus the null answer and adds
``weight`` times that to the reader's log-odds. ``config.json`` names the file, the hidden output,
the weight and the span length. The probe compares the runtime's ONNX path with PyTorch on sample
pairs of the golden dev contexts.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

from training.model import PACKAGED, from_packaged
from training.span_model import MAX_SPAN, SpanReader, best_minus_null, collate

HIDDEN = "shared_hidden"


class Branch(nn.Module):
    """The span model above its shared layers: what span.onnx computes."""

    def __init__(self, model: SpanReader) -> None:
        super().__init__()
        self.layers = nn.ModuleList(model.encoder.layers[model.shared :])
        self.span = model.span

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        bias = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * -10000.0
        x = hidden
        for layer in self.layers:
            x = layer(x, bias)
        logits = self.span(x)
        allowed = (types == 1) & (mask == 1)
        first = torch.zeros_like(allowed)
        first[:, 0] = True  # [CLS]: the null answer
        return logits.masked_fill(~(allowed | first)[..., None], -1e4)


def export_branch(model: SpanReader, target: Path) -> None:
    """``model``'s branch as int8 ONNX at ``target``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    branch = Branch(model).eval()
    hidden = torch.zeros((2, 7, 384))
    mask = torch.ones((2, 7), dtype=torch.long)
    types = torch.zeros_like(mask)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "span-fp32.onnx"
        torch.onnx.export(
            branch,
            (hidden, mask, types),
            str(fp32),
            input_names=[HIDDEN, "attention_mask", "token_type_ids"],
            output_names=["span_logits"],
            dynamic_axes={
                n: {0: "batch", 1: "tokens"}
                for n in (HIDDEN, "attention_mask", "token_type_ids", "span_logits")
            },
            opset_version=17,
            dynamo=False,
        )
        # per output channel: per tensor, the trained branch's int8 logits were ~10 log-odds off
        quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)


def with_hidden_output(source: Path, target: Path, shared: int) -> None:
    """``source`` with the output of layer ``shared - 1`` as a second graph output (weights untouched)."""
    model = onnx.load(str(source))
    graph = model.graph
    tensor = f"/layers.{shared - 1}/out_norm/LayerNormalization_output_0"
    if not any(tensor in n.output for n in graph.node):
        raise SystemExit(f"{source}: no tensor {tensor}")
    if not any(o.name == HIDDEN for o in graph.output):
        graph.node.append(onnx.helper.make_node("Identity", [tensor], [HIDDEN], name="shared_hidden_out"))
        graph.output.append(
            onnx.helper.make_tensor_value_info(HIDDEN, onnx.TensorProto.FLOAT, ["batch", "tokens", 384])
        )
    onnx.save(model, str(target))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--branch", type=Path, required=True)
    p.add_argument("--out", type=Path, default=PACKAGED)
    p.add_argument(
        "--weight", type=float, required=True, help="span log-odds added to the reader's, times this"
    )
    p.add_argument("--folds", type=Path, default=Path(".devcarry/folds.json.gz"), help="probe pairs")
    args = p.parse_args()
    saved = torch.load(args.branch, weights_only=True)
    shared = int(saved["shared"])
    model = SpanReader(from_packaged(), shared=shared)
    missing, unexpected = model.load_state_dict(
        {k: v.float() for k, v in saved["state"].items()}, strict=False
    )
    assert not unexpected and all(
        k.startswith(("encoder.word", "encoder.pos", "encoder.token", "encoder.embed", "encoder.head"))
        or int(k.split(".")[2]) < shared
        for k in missing
    ), missing
    model.eval()
    export_branch(model, args.out / "span.onnx")
    with_hidden_output(args.out / "model.onnx", args.out / "model.onnx", shared)
    config = json.loads((args.out / "config.json").read_text())
    config["version"] = "2"
    config["span"] = {
        "file": "span.onnx",
        "hidden": HIDDEN,
        "shared_layers": shared,
        "weight": args.weight,
        "max_span": MAX_SPAN,
        "output": "span_logits[:, :, 0/1]: start/end logits; best span minus [CLS] (null) = log-odds the unit "
        "states the answer, added to the reader's log-odds times weight",
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(probe(model, args.out, args.folds), indent=2))


def probe(model: SpanReader, folder: Path, folds: Path, n: int = 48) -> dict[str, object]:
    """Torch against the shipped ONNX path on ``n`` golden dev pairs (gnuplot's, the first ones)."""
    import onnxruntime as ort

    with gzip.open(folds, "rt", encoding="utf-8") as f:
        rows = json.load(f)["sets"]["gnuplot"]["held"][:n]
    ids, mask, types, _, _ = collate(rows, list(range(len(rows))))
    with torch.no_grad():
        want = best_minus_null(model(ids, mask, types)).numpy()
    base = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    span = ort.InferenceSession(str(folder / "span.onnx"), providers=["CPUExecutionProvider"])
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": types.numpy()}
    _, hidden = base.run(["logits", HIDDEN], feeds)
    logits = span.run(
        None,
        {
            HIDDEN: hidden,
            "attention_mask": feeds["attention_mask"],
            "token_type_ids": feeds["token_type_ids"],
        },
    )[0]
    got = best_minus_null(torch.from_numpy(logits)).numpy()
    return {
        "pairs": len(rows),
        "max_abs_diff": round(float(np.abs(got - want).max()), 3),
        "mean_abs_diff": round(float(np.abs(got - want).mean()), 3),
        "sign_agreement": round(float(np.mean((got > 0) == (want > 0))), 3),
        "size_mb": round((folder / "span.onnx").stat().st_size / 1e6, 2),
    }


if __name__ == "__main__":
    main()
