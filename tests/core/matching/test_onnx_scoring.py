"""Local ONNX models through the store and the CLI: CrossEncoderSimilarity, the cross-encoder
scorer and --embedder onnx:PATH, each kept per model (tiny models: tests/onnx_models.py)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.matching import onnx_models
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from tests import onnx_models as tiny

REPO = Path(__file__).resolve().parents[3]

ANSWERS = [
    ("q1", "Water damage is covered.", "The policy covers water damage."),
    ("q2", "Refund within 30 days", "refund within thirty days"),
    ("q3", "Take one tablet daily", None),
    ("q4", "The loan rate is paid monthly", "Interest on the loan is paid each month"),
]


def _run(name: str = "ce") -> ParsedRun:
    chunks = (
        Chunk("d1", "The policy covers water damage and flood. Fire is not covered.", 0.9),
        Chunk("d2", "Apple and banana. The battery will charge in two hours.", 0.5),
    )
    return ParsedRun(
        info=RunInfo(name=name),
        format="native",
        sources=("test",),
        queries=[
            Query(query_id=q, query="what is covered", retrieved=chunks, answer=a,
                  reference_answer=r, evidence=("water damage is covered by the policy",))
            for q, a, r in ANSWERS
        ],
    )  # fmt: skip


@pytest.fixture(scope="module")
def ce(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.write_cross_encoder(tmp_path_factory.mktemp("onnx") / "ce")


@pytest.fixture(scope="module")
def emb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.write_embedder(tmp_path_factory.mktemp("onnx") / "emb")


def _store() -> Store:
    store = Store(":memory:")
    store.import_run(_run(), ProblemLog())
    return store


def test_cross_encoder_similarity_is_the_models_sigmoid_of_answer_and_reference(ce: Path) -> None:
    store = _store()
    report = evaluate(
        load_run_data(store, "ce"),
        ["CrossEncoderSimilarity"],
        store=store,
        settings=Settings(cross_encoder=str(ce)),
    )
    got = report.per_query["CrossEncoderSimilarity"]
    want = tiny.cross_numpy([(a, r) for _, a, r in ANSWERS if r is not None])
    np.testing.assert_allclose(got[[0, 1, 3]], want, atol=1e-6)
    assert math.isnan(got[2])  # no reference answer: not scored
    assert report.metrics["CrossEncoderSimilarity"] == pytest.approx(float(want.mean()))


def test_cross_encoder_similarity_is_kept_per_model(
    ce: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store()
    settings = Settings(cross_encoder=str(ce))
    first = evaluate(load_run_data(store, "ce"), ["CrossEncoderSimilarity"], store=store,
                     settings=settings).per_query["CrossEncoderSimilarity"]  # fmt: skip

    def never(*_: object) -> None:
        raise AssertionError("the model ran again")

    monkeypatch.setattr(onnx_models.CrossEncoder, "score", never)
    again = evaluate(load_run_data(store, "ce"), ["CrossEncoderSimilarity"], store=store,
                     settings=settings).per_query["CrossEncoderSimilarity"]  # fmt: skip
    np.testing.assert_array_equal(first, again)
    # another model (other weights, so another content hash) is scored, not read from the first
    other = tiny.write_cross_encoder(tmp_path / "other")
    (other / "model.onnx").write_bytes((ce / "model.onnx").read_bytes().replace(b"tiny", b"TINY"))
    assert onnx_models.model_hash(other) != onnx_models.model_hash(ce)
    with pytest.raises(AssertionError, match="ran again"):
        evaluate(load_run_data(store, "ce"), ["CrossEncoderSimilarity"], store=store,
                 settings=Settings(cross_encoder=str(other)))  # fmt: skip


def test_cross_encoder_similarity_needs_a_model_and_joins_the_defaults_with_one(ce: Path) -> None:
    store = _store()
    data = load_run_data(store, "ce")
    with pytest.raises(UsageError, match="needs a cross-encoder: --cross-encoder PATH"):
        evaluate(data, ["CrossEncoderSimilarity"], store=store)
    assert "CrossEncoderSimilarity" not in evaluate(data, store=store).metrics
    with_model = evaluate(data, store=store, settings=Settings(cross_encoder=str(ce)))
    assert "CrossEncoderSimilarity" in with_model.metrics


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *args],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "s.duckdb"
    out = _cli("import", "--db", str(path), str(REPO / "sample_runs" / "bm25.jsonl"))
    assert out.returncode == 0, out.stderr
    return path


@pytest.mark.parametrize(
    ("flag", "broken", "said"),
    [
        ("--cross-encoder", "missing_folder", "no such model folder"),
        ("--cross-encoder", "missing_file", "tokenizer.json: missing"),
        ("--cross-encoder", "corrupt", "onnxruntime cannot load it"),
        ("--embedder", "missing_folder", "no such model folder"),
        ("--embedder", "corrupt", "onnxruntime cannot load it"),
    ],
)
def test_cli_model_errors_are_one_line_exit_2(
    db: Path, tmp_path: Path, flag: str, broken: str, said: str
) -> None:
    folder = tmp_path / "model"
    if broken != "missing_folder":
        tiny.write_cross_encoder(folder)
    if broken == "missing_file":
        (folder / "tokenizer.json").unlink()
    if broken == "corrupt":
        (folder / "model.onnx").write_bytes(b"\x08\x07garbage" * 50)
    if flag == "--embedder":
        args = ["--relevance", "evidence", "--scorer", "semantic", "--embedder", f"onnx:{folder}"]
    else:
        args = ["--metrics", "CrossEncoderSimilarity", "--cross-encoder", str(folder)]
    out = _cli("evaluate", "--db", str(db), "bm25", *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert said in lines[0] and str(folder) in lines[0] and flag in lines[0]


def test_onnx_embedder_vectors_are_kept_and_a_second_scoring_embeds_nothing(
    emb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rageval_core.store.embeddings import kept_vector_count
    from rageval_core.store.scores import ensure_scored, load_pair_rows

    store = _store()
    name = f"onnx:{emb}@{onnx_models.model_hash(emb)}"  # vectors keyed by the model's content
    first = ensure_scored(store, "ce", f"semantic:onnx:{emb}")
    assert not first.cached and kept_vector_count(store, name) > 0
    n_vectors = kept_vector_count(store, name)
    runs: list[int] = []
    original = onnx_models.OnnxModel.run

    def counted(self: onnx_models.OnnxModel, texts: list[str]) -> list[np.ndarray]:
        runs.append(len(texts))
        return original(self, texts)

    monkeypatch.setattr(onnx_models.OnnxModel, "run", counted)
    hybrid = ensure_scored(store, "ce", f"hybrid:onnx:{emb}")  # scored again, embeds nothing
    assert not hybrid.cached and runs == [] and kept_vector_count(store, name) == n_vectors
    rows = load_pair_rows(store, "ce", f"semantic:onnx:{emb}")
    # the span's cosine with each chunk's best window, from numpy's vectors of the same graph
    span = "water damage is covered by the policy"
    chunks = [c.text for c in _run().queries[0].retrieved or ()]
    from rageval_core.matching.semantic import sentence_spans, windows

    best = []
    for text in chunks:
        spans = sentence_spans(text)
        texts = [text[spans[i][0] : spans[j - 1][1]] for i, j in windows(spans)]
        best.append(
            float(np.clip(tiny.embed_numpy(texts) @ tiny.embed_numpy([span])[0], 0, 1).max())
        )
    np.testing.assert_allclose(rows.score[:2], best, atol=1e-5)


def test_cross_encoder_scorer_scores_pairs_and_keeps_them_under_the_models_key(
    ce: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rageval_core.matching.keys import ScorerKey
    from rageval_core.store.scores import ensure_scored, load_pair_rows

    store = _store()
    settings = Settings.from_values(
        {"scorer": "cross-encoder", "cross_encoder": str(ce), "relevance": "evidence"}
    )
    key = settings.scorer_key
    assert key.stored == f"cross-encoder:{ce.resolve()}@{onnx_models.model_hash(ce)}"
    assert ScorerKey.parse(key.stored) == key  # a stored key reads back without the disk
    assert settings.threshold == 0.5  # the scorer's own default
    first = ensure_scored(store, "ce", key)
    assert not first.cached
    rows = load_pair_rows(store, "ce", key)
    span = "water damage is covered by the policy"
    chunks = [c.text for c in _run().queries[0].retrieved or ()]
    np.testing.assert_allclose(rows.score[:2], tiny.cross_numpy([(span, c) for c in chunks]),
                               atol=1e-6)  # fmt: skip
    assert (rows.start[:2] == -1).all()  # no window: the whole chunk was read

    def never(*_: object) -> None:
        raise AssertionError("the model ran again")

    monkeypatch.setattr(onnx_models.CrossEncoder, "score", never)
    assert ensure_scored(store, "ce", Settings(scorer="cross-encoder",
                                               cross_encoder=str(ce)).scorer_key).cached  # fmt: skip
    report = evaluate(load_run_data(store, "ce"), ["EvidenceRecall@2"], store=store,
                      settings=settings)  # fmt: skip
    assert report.settings["cross_encoder"] == str(ce)


def test_cross_encoder_scorer_keeps_the_substring_rule(ce: Path) -> None:
    from rageval_core.matching.scorers import score_pairs

    key = Settings(scorer="cross-encoder", cross_encoder=str(ce)).scorer_key
    got = score_pairs(["Water damage", "flood risk"], ["The policy covers water damage."],
                      [0, 1], [0, 0], scorer=key, workers=1)  # fmt: skip
    assert got.score[0] == 1.0 and (got.start[0], got.end[0]) == (18, 30)
    assert got.score[1] == pytest.approx(
        tiny.cross_numpy([("flood risk", "The policy covers water damage.")])[0], abs=1e-6
    )


def test_cross_encoder_scorer_without_a_model_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs a model: --cross-encoder PATH"):
        Settings(scorer="cross-encoder").check()


def test_cli_scores_evidence_with_the_cross_encoder(db: Path, ce: Path) -> None:
    import json

    args = ["evaluate", "--db", str(db), "bm25", "--relevance", "evidence", "--scorer",
            "cross-encoder", "--cross-encoder", str(ce), "--metrics", "EvidenceRecall@5", "--json"]  # fmt: skip
    out = _cli(*args)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["settings"]["scorer"] == "cross-encoder"
    assert report["settings"]["threshold"] == 0.5
    assert 0.0 < report["metrics"]["EvidenceRecall@5"] <= 1.0
    # another threshold: the kept scores, no model run (a missing model would fail loading it)
    again = _cli(*args, "--threshold", "0.9")
    assert again.returncode == 0, again.stderr
    assert (
        json.loads(again.stdout)["metrics"]["EvidenceRecall@5"]
        <= report["metrics"]["EvidenceRecall@5"]
    )
