"""Texts cut into batches for an ONNX model, shortest first, so that padding costs least.

A batch is padded to its longest text and the model's work grows with the padded tokens; each call
costs a little more (~3 ms of CPU for MiniLM-L6 int8 on the 2-core machine, where a padded token
costs ~0.35 ms). Batches of a fixed count padded a context's units by ~40% (a few table rows of
100+ tokens among sentences of 15): the cuts here minimise padded tokens plus a call's cost.
"""

from __future__ import annotations

from collections.abc import Sequence

#: what one more call costs, in padded tokens (measured ~9; kept higher so that batches do not
#: shrink to a text or two, where intra-op threads have little to share)
CALL_TOKENS = 32


def length_batches(
    lengths: Sequence[int], max_size: int, max_tokens: int, call_tokens: int = CALL_TOKENS
) -> list[list[int]]:
    """Indices of ``lengths`` sorted by length (ascending, ties in input order), cut into batches
    of at most ``max_size`` texts and ``max_tokens`` padded tokens (a longer text alone) so that
    padded tokens + ``call_tokens`` per batch is smallest (dynamic programming over the cuts)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    ordered = [lengths[i] for i in order]
    n = len(ordered)
    best = [0] + [0] * n  # best[j]: the cost of the first j texts
    cut = [0] * (n + 1)  # cut[j]: where the last batch of the first j texts starts
    for j in range(1, n + 1):
        longest = ordered[j - 1]
        best[j] = -1
        for i in range(j - 1, max(-1, j - 1 - max_size), -1):  # the last batch is ordered[i:j]
            size = j - i
            if size > 1 and size * longest > max_tokens:
                break
            cost = best[i] + size * longest + call_tokens
            if best[j] < 0 or cost < best[j]:
                best[j], cut[j] = cost, i
    batches: list[list[int]] = []
    j = n
    while j > 0:
        batches.append(order[cut[j] : j])
        j = cut[j]
    return batches[::-1]
