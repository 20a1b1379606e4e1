"""Claim-check backends: the NLI cross-encoder's real loading code on a tiny model built here,
the LLM judge's protocol, and the offline heuristic's honest limits."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from citeline.answer.verify import Cited, HeuristicVerifier, JudgeVerifier, NliVerifier
from citeline.embedding import make_embedder
from citeline.errors import ConfigError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "pump", "is", "blue", "red", "green"]


def _tiny_nli(folder: Path) -> None:
    """Logits (contradiction, entailment, neutral): entailment = blue(premise) * blue(hypothesis)
    minus red(hypothesis); contradiction = the reverse. A made-up but real ONNX graph."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.save(str(folder / "tokenizer.json"))
    blue = np.array([[1.0 if w == "blue" else 0.0] for w in VOCAB], dtype=np.float32)
    red = np.array([[1.0 if w == "red" else 0.0] for w in VOCAB], dtype=np.float32)
    nodes = [
        helper.make_node("Gather", ["blue", "input_ids"], ["b"]),  # [B, T, 1]
        helper.make_node("Gather", ["red", "input_ids"], ["r"]),
        helper.make_node("Cast", ["token_type_ids"], ["seg"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["seg", "axis2"], ["seg3"]),
        helper.make_node("Sub", ["one", "seg3"], ["first3"]),
        helper.make_node("Mul", ["b", "first3"], ["b_premise"]),
        helper.make_node("Mul", ["b", "seg3"], ["b_hyp"]),
        helper.make_node("Mul", ["r", "seg3"], ["r_hyp"]),
        helper.make_node("ReduceSum", ["b_premise", "axis1"], ["bp"], keepdims=0),  # [B, 1]
        helper.make_node("ReduceSum", ["b_hyp", "axis1"], ["bh"], keepdims=0),
        helper.make_node("ReduceSum", ["r_hyp", "axis1"], ["rh"], keepdims=0),
        helper.make_node("Mul", ["bp", "bh"], ["agree"]),
        helper.make_node("Sub", ["agree", "rh"], ["ent"]),
        helper.make_node("Neg", ["ent"], ["con"]),
        helper.make_node("Sub", ["bh", "bh"], ["neu"]),
        helper.make_node("Mul", ["ent", "four"], ["ent4"]),
        helper.make_node("Mul", ["con", "four"], ["con4"]),
        helper.make_node("Concat", ["con4", "ent4", "neu"], ["logits"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-nli",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "t"])
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 3])],
        initializer=[
            helper.make_tensor("blue", TensorProto.FLOAT, blue.shape, blue.flatten().tolist()),
            helper.make_tensor("red", TensorProto.FLOAT, red.shape, red.flatten().tolist()),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
            helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("four", TensorProto.FLOAT, [], [4.0]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "config.json").write_text(
        json.dumps({"id2label": {"0": "CONTRADICTION", "1": "ENTAILMENT", "2": "NEUTRAL"}})
    )


def test_nli_verifier_loads_a_local_model_and_checks_entailment(tmp_path: Path) -> None:
    _tiny_nli(tmp_path)
    nli = NliVerifier(tmp_path)
    doc = "The pump is red. The pump is blue."
    cited = [Cited(1, doc, 100)]
    yes = nli.check("the pump is blue", cited)
    assert yes.supported and yes.score > 0.9
    assert yes.quotes[1] == (100 + doc.index("The pump is blue."), 100 + len(doc))  # the entailing unit
    no = nli.check("the pump is red", [Cited(1, "the pump is blue", 0)])
    assert not no.supported and no.score < 0.1
    assert not nli.check("the pump is blue", []).supported


def test_nli_verifier_needs_an_entailment_label(tmp_path: Path) -> None:
    _tiny_nli(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"id2label": {"0": "A", "1": "B"}}))
    with pytest.raises(ConfigError, match="entailment"):
        NliVerifier(tmp_path)


def test_llm_judge_parses_the_verdict_and_keeps_heuristic_quotes() -> None:
    heuristic = HeuristicVerifier(make_embedder("minilm-int8"))
    prompts: list[str] = []

    class Judge:  # the LLM is an external model: a scripted stand-in
        name = "judge"

        def complete(self, messages: Sequence[Mapping[str, str]], max_tokens: int = 256) -> str:
            prompts.append(messages[0]["content"])
            return "YES." if "450" in messages[0]["content"] else "No"

    verifier = JudgeVerifier(Judge(), heuristic)
    text = "Setup takes two minutes. The alpha queue holds 450 jobs."
    ok = verifier.check("The queue holds 450 jobs.", [Cited(1, text, 10)])
    assert ok.supported and ok.quotes[1] == (10 + text.index("The alpha"), 10 + len(text))
    assert "<passage>" in prompts[0] and "The queue holds 450 jobs." in prompts[0]
    assert not verifier.check("The queue holds 9 jobs.", [Cited(1, "Nothing relevant here.", 0)]).supported


def test_heuristic_catches_invented_numbers_and_wrong_passages() -> None:
    v = HeuristicVerifier(make_embedder("minilm-int8"))
    passage = "Local passwords must be at least 14 characters long."
    assert v.check("Passwords must be at least 14 characters long.", [Cited(1, passage, 0)]).supported
    wrong_number = v.check("Passwords must be at least 12 characters long.", [Cited(1, passage, 0)])
    assert not wrong_number.supported and "12" in wrong_number.reason
    assert not v.check("The audit log is kept for 400 days.", [Cited(1, passage, 0)]).supported
