"""The span head (issue 34, item 5) in plain PyTorch: the packaged encoder with a start/end head over
the unit's tokens and the null answer at [CLS], as in SQuAD 2.0. Only torch is needed here, so the
same code trains on a 2-core CPU or on an accelerator (``training/span_folds.py``).

The lower ``shared`` layers stay the packaged model's own, so the product can run the span head as a
branch on their output: the reader and checker logits do not change, and reading a unit costs the
upper layers once more, not a second encoder.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from training.model import CrossEncoder

MAX_SPAN = 30  # tokens


class SpanReader(nn.Module):
    def __init__(self, encoder: CrossEncoder, shared: int = 0) -> None:
        super().__init__()
        self.encoder = encoder
        self.shared = shared
        self.span = nn.Linear(encoder.head.in_features, 2)
        if shared:
            for part in (encoder.word, encoder.position, encoder.token_type, encoder.embed_norm):
                part.requires_grad_(False)
            for layer in encoder.layers[:shared]:
                layer.requires_grad_(False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        e = self.encoder
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = e.embed_norm(e.word(ids) + e.position(positions) + e.token_type(types))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in e.layers:
            x = layer(x, bias)
        logits = self.span(x)  # (batch, tokens, 2)
        allowed = (types == 1) & (mask == 1)
        allowed[:, 0] = True  # [CLS]: the null answer
        return logits.masked_fill(~allowed[..., None], -1e4)

    def branch_state(self) -> dict[str, torch.Tensor]:
        """What the product needs beside the packaged model: the upper layers and the span head."""
        keep = tuple(f"encoder.layers.{i}." for i in range(self.shared, len(self.encoder.layers)))
        return {k: v for k, v in self.state_dict().items() if k.startswith(keep) or k.startswith("span.")}


def collate(enc: list[dict[str, Any]], idx: list[int], device: str = "cpu") -> tuple[torch.Tensor, ...]:
    n = max(len(enc[i]["ids"]) for i in idx)
    ids = torch.zeros((len(idx), n), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for row, i in enumerate(idx):
        k = len(enc[i]["ids"])
        ids[row, :k] = torch.tensor(enc[i]["ids"])
        types[row, :k] = torch.tensor(enc[i]["types"])
        mask[row, :k] = 1
    starts = torch.tensor([enc[i]["start"] for i in idx])
    ends = torch.tensor([enc[i]["end"] for i in idx])
    return tuple(t.to(device) for t in (ids, mask, types, starts, ends))


def best_minus_null(logits: torch.Tensor) -> torch.Tensor:
    """Per row: the best span's start + end logit (start <= end < start + MAX_SPAN, [CLS] excluded)
    minus the null answer's: the log-odds that the unit states an answer."""
    s, e = logits[..., 0], logits[..., 1]
    pair = s[:, :, None] + e[:, None, :]
    n = pair.shape[1]
    band = torch.ones(n, n, device=logits.device).triu().tril(MAX_SPAN - 1).bool()
    band[0, :] = False
    band[:, 0] = False
    best = pair.masked_fill(~band, -1e4).flatten(1).max(1).values
    return best - (s[:, 0] + e[:, 0])


@torch.no_grad()
def span_logits(model: SpanReader, enc: list[dict[str, Any]], device: str = "cpu") -> list[float]:
    model.eval()
    out = [0.0] * len(enc)
    order = sorted(range(len(enc)), key=lambda i: len(enc[i]["ids"]))
    for lo in range(0, len(order), 64):
        idx = order[lo : lo + 64]
        ids, mask, types, _, _ = collate(enc, idx, device)
        for i, v in zip(idx, best_minus_null(model(ids, mask, types)).tolist(), strict=True):
            out[i] = v
    return out


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))
