"""Answer metrics by meaning: AnswerSimilarity, ContextRelevance, BestContextRelevance."""

from __future__ import annotations

import json
import math
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.metrics import semantic_answers as sa
from rageval_core.metrics.generation import generation_scores
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[3]


def wordllama_similarity(a: str, b: str) -> float:
    """wordllama's own cosine (its inference object built from the packaged files)."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    pkg = files("wordllama")
    table = load_file(str(pkg / "weights" / "l2_supercat_256.safetensors"))["embedding.weight"]
    tok = Tokenizer.from_file(str(pkg / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    return float(WordLlamaInference(table, tok).similarity(a, b))


def test_values_equal_wordllamas_own_similarity() -> None:
    answer, ref = "You pay the premium monthly.", "The premium is due every month."
    query = "when is the premium due"
    chunks = ["Premiums are paid monthly.", None, "Our office is in Berlin."]
    out = sa.semantic_answer_scores([answer], [[ref, "nothing alike"]], [query], [chunks])
    expected = max(wordllama_similarity(answer, ref), wordllama_similarity(answer, "nothing alike"))
    assert out["AnswerSimilarity"][0] == pytest.approx(max(expected, 0.0), abs=1e-5)
    cos = [max(wordllama_similarity(query, c), 0.0) for c in (chunks[0], chunks[2])]
    assert out["ContextRelevance"][0] == pytest.approx(np.mean(cos), abs=1e-5)
    assert out["BestContextRelevance"][0] == pytest.approx(max(cos), abs=1e-5)


def test_not_scored_cases() -> None:
    out = sa.semantic_answer_scores(
        [None, "an answer", "same text", "x"],
        ["ref", None, "same text", []],
        ["q", None, "q", "q"],
        [["c"], ["c"], None, [None]],
    )
    assert np.isnan([out[n][0] for n in sa.NAMES]).all()  # no answer
    assert math.isnan(out["AnswerSimilarity"][1]) and math.isnan(out["ContextRelevance"][1])
    assert out["AnswerSimilarity"][2] == pytest.approx(1.0, abs=1e-5)
    assert math.isnan(out["ContextRelevance"][2])  # no chunk list
    assert math.isnan(out["AnswerSimilarity"][3]) and math.isnan(out["BestContextRelevance"][3])
    assert all(v.size == 0 for v in sa.semantic_answer_scores([], [], [], []).values())


def test_answer_similarity_separates_correct_paraphrases_from_wrong_answers() -> None:
    rows = [json.loads(line) for line in (REPO / "bench/data/answer_pairs.jsonl").open()]
    assert len(rows) >= 20

    def scores(key: str) -> dict[str, np.ndarray]:
        refs = [r["reference"] for r in rows]
        return generation_scores(
            [r[key] for r in rows], refs, [None] * len(rows), [None] * len(rows)
        )

    right, wrong = scores("correct"), scores("wrong")
    sim_r, sim_w = right["AnswerSimilarity"], wrong["AnswerSimilarity"]
    # ranking quality over every (correct, wrong) pair: the Mann-Whitney AUC
    auc = float((sim_r[:, None] > sim_w[None, :]).mean())
    assert auc >= 0.8
    assert (sim_r > sim_w).mean() >= 0.75 and sim_r.mean() - sim_w.mean() >= 0.15
    # the lexical TokenF1 sees paraphrases as near misses: the meaning metric separates better
    f1_auc = float((right["TokenF1"][:, None] > wrong["TokenF1"][None, :]).mean())
    assert auc > f1_auc


def test_kept_with_the_answer_metrics_and_evaluated_per_query() -> None:
    chunks = (Chunk("d1", "Premiums are paid monthly by direct debit.", 0.9),)
    run = ParsedRun(
        info=RunInfo(name="ans"),
        format="native",
        sources=("test",),
        queries=[
            Query(query_id="q1", query="When is the premium due?", retrieved=chunks,
                  answer="You pay it every month.", reference_answer="The premium is monthly."),
            Query(query_id="q2", query="Deductible?", retrieved=chunks,
                  answer="It is 500 dollars.", reference_answer=None),
        ],
    )  # fmt: skip
    store = Store(":memory:")
    store.import_run(run, ProblemLog())
    data = load_run_data(store, "ans")
    names = ["AnswerSimilarity", "ContextRelevance", "BestContextRelevance"]
    report = evaluate(data, names, store=store)
    sim = report.per_query["AnswerSimilarity"]
    assert 0.0 < sim[0] <= 1.0 and math.isnan(sim[1])
    rel = report.per_query["ContextRelevance"]
    assert rel[0] == pytest.approx(report.per_query["BestContextRelevance"][0])  # one chunk
    assert report.metrics["AnswerSimilarity"] == pytest.approx(sim[0])
    assert set(names) <= set(report.to_json(per_query=True)["per_query"]["q1"])
