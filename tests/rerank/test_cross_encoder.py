"""The cross-encoder's real loading and scoring code, on a tiny ONNX model built here.

The model scores a (query, passage) pair by summing a per-token weight over the passage segment
only (token_type_id 1), so the test also proves pairs are encoded with segment ids. Its one
"knowledge": the word "relevant" weighs 1, "noise" weighs -1, everything else 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.build_context import StaticContext
from citeline.errors import ConfigError
from citeline.registry import registry
from citeline.rerank.cross_encoder import CrossEncoderReranker, OnnxPairScorer

from ._hits import make_hit

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "relevant",
    "noise",
    "what",
    "is",
    "the",
    "answer",
    "a",
    "passage",
]
WEIGHT = {"relevant": 1.0, "noise": -1.0}


def write_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.save(str(path))


def write_model(path: Path, two_class: bool = False) -> None:
    table = np.array([[WEIGHT.get(w, 0.0)] for w in VOCAB], dtype=np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["emb"]),  # [B, T, 1]
        helper.make_node("Cast", ["token_type_ids"], ["seg"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["seg", "mask"], ["keep"]),
        helper.make_node("Unsqueeze", ["keep", "axis2"], ["keep3"]),  # [B, T, 1]
        helper.make_node("Mul", ["emb", "keep3"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "axis1"], ["score"], keepdims=0),  # [B, 1]
    ]
    if two_class:
        nodes += [
            helper.make_node("Neg", ["score"], ["neg"]),
            helper.make_node("Concat", ["neg", "score"], ["logits"], axis=1),  # [B, 2]
        ]
    else:
        nodes.append(helper.make_node("Identity", ["score"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "tiny-cross-encoder",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2 if two_class else 1])],
        initializer=[
            helper.make_tensor("table", TensorProto.FLOAT, table.shape, table.flatten().tolist()),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


@pytest.fixture(params=[False, True], ids=["one-logit", "two-logits"])
def model_dir(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    write_tokenizer(tmp_path / "tokenizer.json")
    write_model(tmp_path / "model.onnx", two_class=request.param)
    return tmp_path


def factor(model_dir: Path) -> float:
    """Two logits (-s, s) give the log-odds 2s; one logit gives s."""
    return 2.0 if b"Concat" in model_dir.joinpath("model.onnx").read_bytes() else 1.0


def test_scores_pairs_on_the_passage_segment(model_dir: Path) -> None:
    scorer = OnnxPairScorer(model_dir, batch_size=2)
    # "relevant" in the *query* must not count: only segment-1 tokens are weighed.
    scores = scorer.score(
        "relevant relevant what is the answer",
        ["a passage", "relevant passage", "relevant relevant relevant", "noise passage", "relevant noise"],
    )
    f = factor(model_dir)
    assert scores.tolist() == pytest.approx([0.0, 1.0 * f, 3.0 * f, -1.0 * f, 0.0])


def test_reranks_hits_through_the_registry(model_dir: Path) -> None:
    assert "cross-encoder" in registry.names("reranker")
    reranker = registry.create("reranker", f"cross-encoder:{model_dir}", StaticContext())
    assert isinstance(reranker, CrossEncoderReranker)
    hits = [
        make_hit(1, "noise noise passage"),
        make_hit(2, "a passage"),
        make_hit(3, "relevant passage relevant"),
        make_hit(4, "the relevant answer"),
        make_hit(5, "a passage"),
    ]
    out = reranker.rerank("what is the answer", hits)
    assert [h.chunk.id for h in out] == ["c3", "c4", "c2", "c5", "c1"]  # ties keep the fused order
    assert [h.stages["rerank"].rank for h in out] == [1, 2, 3, 4, 5]
    assert out[0].stages["fused"].rank == 3  # earlier stages are kept
    assert reranker.rerank("q", []) == []


def test_long_passages_are_truncated_not_rejected(model_dir: Path) -> None:
    scorer = OnnxPairScorer(model_dir, max_tokens=16)
    scores = scorer.score("what is the answer", ["relevant " * 200])
    # 16 tokens: [CLS] what is the answer [SEP] (6), then 9 passage tokens and [SEP]; the query is kept.
    assert scores[0] == pytest.approx(9.0 * factor(model_dir))


def test_missing_model_files_are_explained(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.onnx"):
        registry.create("reranker", f"cross-encoder:{tmp_path}")
    with pytest.raises(ConfigError, match="does not exist"):
        registry.create("reranker", f"cross-encoder:{tmp_path / 'nope'}")
    with pytest.raises(ConfigError, match="needs an argument"):
        registry.create("reranker", "cross-encoder")
