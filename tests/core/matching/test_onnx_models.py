"""Local ONNX models (rageval_core.matching.onnx_models): tiny real graphs over real token ids,
built here (tests/onnx_models.py), checked against a numpy re-computation of the same graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rageval_core.errors import UsageError
from rageval_core.matching import onnx_models
from rageval_core.matching.onnx_models import CrossEncoder, OnnxEmbedder, OnnxModel, relevance
from tests import onnx_models as tiny

TEXTS = [
    "Water damage is covered by the policy.",
    "The premium rate is paid each month",
    "refund within 30 days",
    "apple",
    "Take one tablet daily; adults and children over 12",
    "xyzzy words the vocabulary lacks",
    "Press the reset button for ten seconds, then charge the battery for two hours.",
]
PAIRS = [
    ("water damage", "the policy covers water damage and flood"),
    ("refund within thirty days", "apple banana"),
    ("the loan interest rate", "interest on the loan is paid each month"),
    ("revenue grew", "Revenue grew 12 percent in the year."),
    ("dose", "take one tablet daily"),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("onnx")
    return {
        "emb": tiny.write_embedder(root / "emb"),
        "emb6": tiny.write_embedder(root / "emb6", max_length=6),
        "ce": tiny.write_cross_encoder(root / "ce"),
    }


def test_the_tiny_models_are_a_few_kilobytes(models: dict[str, Path]) -> None:
    for folder in models.values():
        sizes = [(folder / f).stat().st_size for f in ("model.onnx", "tokenizer.json")]
        assert all(0 < s < 8_000 for s in sizes), sizes


def test_embedder_mean_pools_and_normalises_as_numpy_does(models: dict[str, Path]) -> None:
    emb = OnnxEmbedder(str(models["emb"]))
    got = emb.embed(TEXTS)
    assert got.shape == (len(TEXTS), tiny.DIM) and emb.dim == tiny.DIM
    np.testing.assert_allclose(got, tiny.embed_numpy(TEXTS), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_embedder_name_carries_the_models_hash(models: dict[str, Path]) -> None:
    emb = OnnxEmbedder(str(models["emb"]))
    assert emb.name == f"onnx:{models['emb']}@{onnx_models.model_hash(models['emb'])}"
    # another model at another path has another identity; the same files the same one
    assert onnx_models.model_hash(models["emb"]) != onnx_models.model_hash(models["ce"])
    assert len(onnx_models.model_hash(models["emb"])) == 12


def test_blank_text_is_a_zero_vector(models: dict[str, Path]) -> None:
    got = OnnxEmbedder(str(models["emb"])).embed(["", "  ", "apple"])
    assert not got[:2].any() and np.linalg.norm(got[2]) == pytest.approx(1.0, abs=1e-6)


def test_truncation_to_the_tokenizers_max_length(models: dict[str, Path]) -> None:
    model = OnnxModel(models["emb6"])
    assert model.max_length == 6
    long = TEXTS[-1]
    got = OnnxEmbedder(str(models["emb6"])).embed([long])
    w = tiny.weights()
    ids = tiny.token_ids(long, max_length=6)
    assert len(ids) == 6 and ids[-1] == tiny.VOCAB["[SEP]"]
    v = np.tanh(w["E"][ids].astype(np.float64) @ w["W"]).mean(axis=0)
    np.testing.assert_allclose(got[0], v / np.linalg.norm(v), atol=1e-6)
    # the untruncated model gives another vector: the cut is real
    assert not np.allclose(OnnxEmbedder(str(models["emb"])).embed([long])[0], got[0], atol=1e-3)


def test_max_length_from_the_models_config(tmp_path: Path) -> None:
    folder = tiny.write_embedder(tmp_path / "m")
    assert OnnxModel(folder).max_length == onnx_models.DEFAULT_MAX_LENGTH
    tiny.write_config(folder, max_position_embeddings=5)
    assert OnnxModel(folder).max_length == 5


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("batch_size", [1, 3, 1000])
def test_batch_sizes_and_workers_give_the_same_numbers(
    models: dict[str, Path], batch_size: int, workers: int
) -> None:
    texts = TEXTS * 5
    model = OnnxModel(models["emb"], workers=workers, batch_size=batch_size)
    rows = model.run(texts)
    pooled = onnx_models.mean_pool(rows, tiny.DIM)
    np.testing.assert_allclose(pooled, tiny.embed_numpy(texts), atol=1e-6)
    # each text's per-token output has exactly its own tokens (padding cut off)
    assert [r.shape[0] for r in rows] == [len(tiny.token_ids(t)) for t in texts]
    ce = OnnxModel(models["ce"], workers=workers, batch_size=batch_size)
    logits = np.stack([r.reshape(-1) for r in ce.run(PAIRS * 3)])
    np.testing.assert_allclose(relevance(logits), tiny.cross_numpy(PAIRS * 3), atol=1e-6)


def test_cross_encoder_scores_pairs_as_numpy_does(models: dict[str, Path]) -> None:
    ce = CrossEncoder(str(models["ce"]))
    got = ce.score(PAIRS)
    np.testing.assert_allclose(got, tiny.cross_numpy(PAIRS), atol=1e-6)
    assert ((got > 0) & (got < 1)).all() and len(set(np.round(got, 6))) == len(PAIRS)
    # an empty side scores 0 without running the model
    assert ce.score([("", "apple"), ("apple", " ")]).tolist() == [0.0, 0.0]


def test_relevance_is_the_sigmoid_of_one_logit_or_the_softmax_of_two() -> None:
    assert relevance(np.array([[0.0], [2.0]])) == pytest.approx([0.5, 1 / (1 + np.exp(-2.0))])
    two = np.array([[1.0, 3.0], [0.5, -0.5]])
    soft = np.exp(two) / np.exp(two).sum(axis=1, keepdims=True)
    assert relevance(two) == pytest.approx(soft[:, 1])
    assert relevance(np.array([1000.0, -1000.0])).tolist() == [1.0, 0.0]


def _one_line(e: pytest.ExceptionInfo[UsageError], path: Path) -> str:
    text = str(e.value)
    assert "\n" not in text and str(path) in text, text
    return text


def test_missing_folder_and_files_are_usage_errors_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as e:
        OnnxModel(tmp_path / "nowhere")
    assert "no such model folder" in _one_line(e, tmp_path / "nowhere")
    folder = tiny.write_embedder(tmp_path / "m")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(UsageError) as e:
        OnnxModel(folder)
    assert "missing" in _one_line(e, folder / "tokenizer.json")
    tiny.write_tokenizer(folder)
    (folder / "model.onnx").unlink()
    with pytest.raises(UsageError) as e:
        OnnxModel(folder)
    assert "missing" in _one_line(e, folder / "model.onnx")


def test_corrupt_model_and_tokenizer_are_usage_errors(tmp_path: Path) -> None:
    folder = tiny.write_embedder(tmp_path / "m")
    (folder / "model.onnx").write_bytes(b"not a model \x00\x01" * 10)
    with pytest.raises(UsageError) as e:
        OnnxModel(folder)
    assert "onnxruntime cannot load it" in _one_line(e, folder / "model.onnx")
    tiny.write_embedder(folder)
    (folder / "tokenizer.json").write_text("{ not json", encoding="utf-8")
    with pytest.raises(UsageError) as e:
        OnnxModel(folder)
    assert "tokenizer.json" in _one_line(e, folder / "tokenizer.json")


def test_a_graph_without_text_inputs_is_refused(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    folder = tmp_path / "m"
    folder.mkdir()
    x = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["b", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3])
    graph = helper.make_graph([helper.make_node("Relu", ["pixels"], ["y"])], "g", [x], [y])
    tiny._save(graph, folder / "model.onnx")
    tiny.write_tokenizer(folder)
    with pytest.raises(UsageError) as e:
        OnnxModel(folder)
    assert "'pixels'" in _one_line(e, folder / "model.onnx")


def test_an_embedder_is_not_a_cross_encoder(models: dict[str, Path]) -> None:
    with pytest.raises(UsageError, match="not a cross-encoder"):
        CrossEncoder(str(models["emb"]))


def test_a_cross_encoder_is_not_an_embedder(models: dict[str, Path]) -> None:
    with pytest.raises(UsageError, match="not a sentence-embedding model") as e:
        OnnxEmbedder(str(models["ce"]))
    assert str(e.value).startswith("--embedder onnx:") and "--cross-encoder" in str(e.value)


def test_the_errors_name_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^--embedder onnx:\S*nowhere: no such model folder"):
        OnnxEmbedder(str(tmp_path / "nowhere"))
    with pytest.raises(UsageError, match=r"^--cross-encoder \S*nowhere: no such model folder"):
        CrossEncoder(str(tmp_path / "nowhere"))


def test_a_models_identity_is_its_absolute_folder_and_content_hash(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = models["ce"]
    identity = onnx_models.model_identity(str(folder))
    assert identity == f"{folder.resolve()}@{onnx_models.model_hash(folder)}"
    monkeypatch.chdir(folder.parent)
    assert onnx_models.model_identity(folder.name) == identity  # relative: the same key
    assert onnx_models.model_path(identity) == str(folder.resolve())
    assert onnx_models.model_path("/models/a@b") == "/models/a@b"  # not a hash: part of the path
    # a model built from the identity is the folder's
    assert CrossEncoder(identity).identity == onnx_models.model_hash(folder)


def test_a_folder_exported_again_is_loaded_again(tmp_path: Path) -> None:
    folder = tiny.write_cross_encoder(tmp_path / "ce")
    first = onnx_models.load_model(str(folder))
    assert onnx_models.load_model(str(folder)) is first  # once per process
    model = folder / "model.onnx"
    model.write_bytes(model.read_bytes().replace(b"tiny", b"TINY"))
    again = onnx_models.load_model(str(folder))
    assert again is not first and again.identity != first.identity
