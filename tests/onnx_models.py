"""Tiny ONNX text models built by the tests: a real graph over real token ids, a few kilobytes.

- a WordLevel tokenizer.json (tokenizers) over VOCAB, lower-cased, split on white space and
  punctuation, with BERT's templates ([CLS] a [SEP], [CLS] a [SEP] b [SEP]);
- an embedder: last_hidden_state = tanh(E[input_ids] @ W) (batch x tokens x dim), pooled by rageval;
- a cross-encoder: h = E[input_ids] + T[token_type_ids], masked mean over attention_mask,
  logit = tanh(mean) @ w + b (batch x 1).

embed_numpy / cross_numpy compute the same numbers in numpy, from the same weights.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORDS = (  # noqa: SIM905 (a list of 61 words reads better as text)
    "the a of to in is are for with on by and or not no claim claims policy covers covered "
    "water damage flood fire theft premium rate interest loan bank paid pay month year days "
    "refund within thirty 30 dose daily tablet patient mg take adults children apple banana "
    "battery charge hours device screen reset press button seconds revenue grew percent"
).split()
VOCAB = {w: i for i, w in enumerate(SPECIALS + WORDS)}
DIM = 8
SEED = 1234


def weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    n = len(VOCAB)
    return {
        "E": rng.normal(0, 1, (n, DIM)).astype(np.float32),
        "W": rng.normal(0, 0.5, (DIM, DIM)).astype(np.float32),
        "T": rng.normal(0, 0.5, (2, DIM)).astype(np.float32),
        "w": rng.normal(0, 1, (DIM, 1)).astype(np.float32),
        "b": np.array([0.25], dtype=np.float32),
    }


def write_tokenizer(folder: Path, max_length: int | None = None) -> None:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel(VOCAB, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    if max_length:
        tok.enable_truncation(max_length)
    tok.save(str(folder / "tokenizer.json"))


def token_ids(text: str, max_length: int = 512) -> list[int]:
    """The tokenizer's ids of text in plain Python (checks the tokenizer as well)."""
    words = re.findall(r"\w+|[^\w\s]+", text.lower())
    ids = [VOCAB.get(w, VOCAB["[UNK]"]) for w in words][: max_length - 2]
    return [VOCAB["[CLS]"], *ids, VOCAB["[SEP]"]]


def _save(graph: object, path: Path) -> None:
    import onnx
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def write_embedder(folder: Path, max_length: int | None = None) -> Path:
    """A sentence-embedding model folder: model.onnx (per-token output) + tokenizer.json."""
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    w = weights()
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])
    out = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", DIM]
    )
    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["h0"]),
        helper.make_node("MatMul", ["h0", "W"], ["h1"]),
        helper.make_node("Tanh", ["h1"], ["last_hidden_state"]),
    ]
    inits = [numpy_helper.from_array(w["E"], "E"), numpy_helper.from_array(w["W"], "W")]
    graph = helper.make_graph(nodes, "tiny_embedder", [ids, mask], [out], inits)
    _save(graph, folder / "model.onnx")
    write_tokenizer(folder, max_length)
    return folder


def write_cross_encoder(folder: Path) -> Path:
    """A cross-encoder model folder: model.onnx (one logit per pair) + tokenizer.json."""
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    w = weights()
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    axes = numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2")
    axis1 = numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1")
    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["tok"]),
        helper.make_node("Gather", ["T", "token_type_ids"], ["typ"]),
        helper.make_node("Add", ["tok", "typ"], ["h"]),
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["m", "axis2"], ["m3"]),
        helper.make_node("Mul", ["h", "m3"], ["hm"]),
        helper.make_node("ReduceSum", ["hm", "axis1"], ["s"], keepdims=0),
        helper.make_node("ReduceSum", ["m3", "axis1"], ["n"], keepdims=0),
        helper.make_node("Div", ["s", "n"], ["mean"]),
        helper.make_node("Tanh", ["mean"], ["t"]),
        helper.make_node("MatMul", ["t", "w"], ["z"]),
        helper.make_node("Add", ["z", "b"], ["logits"]),
    ]
    inits = [numpy_helper.from_array(w[k], k) for k in ("E", "T", "w", "b")] + [axes, axis1]
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs, [out], inits)
    _save(graph, folder / "model.onnx")
    write_tokenizer(folder)
    return folder


def embed_numpy(texts: list[str]) -> np.ndarray:
    """The embedder's vectors in numpy: mean over the tokens of tanh(E[ids] @ W), unit length."""
    w = weights()
    rows = []
    for t in texts:
        h = np.tanh(w["E"][token_ids(t)].astype(np.float64) @ w["W"])
        v = h.mean(axis=0)
        rows.append(v / np.linalg.norm(v))
    return np.array(rows)


def cross_numpy(pairs: list[tuple[str, str]]) -> np.ndarray:
    """The cross-encoder's relevance in numpy: sigmoid(tanh(mean(E[ids] + T[types])) @ w + b)."""
    w = weights()
    out = []
    for a, b in pairs:
        ids_a, ids_b = token_ids(a), token_ids(b)[1:]
        ids = ids_a + ids_b
        types = [0] * len(ids_a) + [1] * len(ids_b)
        h = w["E"][ids].astype(np.float64) + w["T"][types]
        z = float((np.tanh(h.mean(axis=0)) @ w["w"])[0] + w["b"][0])
        out.append(1.0 / (1.0 + np.exp(-z)))
    return np.array(out)


def write_config(folder: Path, **values: object) -> None:
    (folder / "config.json").write_text(json.dumps(values), encoding="utf-8")
