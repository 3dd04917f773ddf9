"""Scenario: the semantic scorer (issue 17): quality on the labelled sets, and its speed.

Quality: bench/data/semantic_pairs.jsonl (a gold span with a chunk that paraphrases it, a
same-topic distractor and an unrelated chunk, in finance, insurance, product docs and
medicine) scored by every scorer at its default threshold, and the semantic scorer's rates
across thresholds; bench/data/answer_pairs.jsonl (a reference answer, a correct paraphrased
answer and a wrong one) for AnswerSimilarity against TokenF1.
Speed: 100,000 distinct chunk texts of about 500 characters embedded by wordllama in a child
process held to one core; `rageval evaluate --relevance evidence` on the 10,000-query large run
(bench/large_run.py, unscored copies) with the default scorer and with --scorer semantic, each
in a fresh process that scores the run's pairs first (what a first view costs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_seconds
from bench.large_run import build_large_store
from bench.pair_scoring import copy_unscored
from rageval_core.matching.keys import SCORER_KINDS
from rageval_core.matching.scorers import score_pairs
from rageval_core.metrics.generation import generation_scores
from rageval_core.settings.schema import SCORER_NAMES, default_for

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "bench" / "data" / "semantic_pairs.jsonl"
ANSWERS = ROOT / "bench" / "data" / "answer_pairs.jsonl"
KINDS = ("paraphrase", "distractor", "unrelated")
SWEEP = (0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.70)
#: one core for the embedding timing: BLAS, tokenizers (rayon) and OpenMP
ONE_CORE = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


#: every scorer but those that need a model folder (the cross-encoder): the bench ships none
BENCHED = tuple(name for name in SCORER_NAMES if not SCORER_KINDS[name].takes_model)


def labelled_rates() -> tuple[dict[str, dict[str, float]], dict[float, dict[str, float]]]:
    """Per scorer at its default threshold, and the semantic scorer per threshold: the share
    of each kind of pair that scores at least the threshold."""
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]
    kinds = np.array([r["kind"] for r in rows])
    idx = np.arange(len(rows))
    spans, chunks = [r["span"] for r in rows], [r["chunk"] for r in rows]
    by_scorer: dict[str, dict[str, float]] = {}
    sweep: dict[float, dict[str, float]] = {}
    for scorer in BENCHED:
        scores = score_pairs(spans, chunks, idx, idx, scorer=scorer, workers=1).score
        t = default_for("threshold", scorer)
        by_scorer[scorer] = {k: float((scores[kinds == k] >= t).mean()) for k in KINDS}
        by_scorer[scorer]["threshold"] = t
        if scorer == "semantic":
            for s in SWEEP:
                sweep[s] = {k: float((scores[kinds == k] >= s).mean()) for k in KINDS}
    return by_scorer, sweep


def answer_separation() -> dict[str, float]:
    """AUC (correct answer scored above a wrong one, over every pair) of AnswerSimilarity and
    of TokenF1, and the mean AnswerSimilarity of each kind of answer."""
    rows = [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines()]
    refs, none = [r["reference"] for r in rows], [None] * len(rows)
    right = generation_scores([r["correct"] for r in rows], refs, none, none)
    wrong = generation_scores([r["wrong"] for r in rows], refs, none, none)
    out = {"n": float(len(rows))}
    for name in ("AnswerSimilarity", "TokenF1"):
        out[f"{name}_auc"] = float((right[name][:, None] > wrong[name][None, :]).mean())
        out[f"{name}_correct"] = float(np.mean(right[name]))
        out[f"{name}_wrong"] = float(np.mean(wrong[name]))
    return out


_EMBED_CHILD = """
import json, sys, time
import numpy as np
from rageval_core.matching.keys import get_embedder
n = int(sys.argv[1])
rng = np.random.default_rng(0)
words = np.array(sys.stdin.read().split())
texts = [" ".join(rng.choice(words, 80)) + f" {i}." for i in range(n)]
chars = sum(map(len, texts))
embedder = get_embedder("wordllama")
embedder.embed(texts[:100])  # loads nothing more: the table and tokenizer are loaded already
started = time.perf_counter()
embedder.embed(texts)
print(json.dumps({"seconds": time.perf_counter() - started, "chars": chars}))
"""


def embed_speed(n_texts: int) -> dict[str, float]:
    """Seconds to embed n_texts distinct texts of ~500 characters on one core (child process).

    The texts draw their words from the labelled pairs, the sample runs' chunks and the docs
    (about 23,000 distinct words, punctuation attached as in real text)."""
    sources = [
        PAIRS,
        *sorted((ROOT / "sample_runs").glob("*.jsonl")),
        *(ROOT / "docs").glob("*.md"),
    ]
    words = " ".join(p.read_text(encoding="utf-8") for p in sources)
    out = subprocess.run(
        [sys.executable, "-c", _EMBED_CHILD, str(n_texts)],
        input=words,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ONE_CORE},
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def evaluate_seconds(db: Path, run_name: str, scorer: str) -> float:
    """Wall seconds of `rageval evaluate --relevance evidence --scorer scorer` in a new process."""
    cmd = [sys.executable, "-m", "rageval_core.cli", "evaluate", "--db", str(db), run_name]
    cmd += ["--relevance", "evidence", "--scorer", scorer, "--json"]
    started = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def run(workdir: Path, n_queries: int = 10_000, n_embed: int = 100_000) -> ScenarioResult:
    by_scorer, sweep = labelled_rates()
    answers = answer_separation()
    embed = embed_speed(n_embed)
    embed["texts_per_s"] = n_embed / embed["seconds"]
    db, run_name = build_large_store(workdir / "large", n_queries, 0, score=False)
    seconds: dict[str, float] = {}
    for scorer in ("partial", "semantic"):
        work = workdir / f"semantic_{scorer}.duckdb"
        copy_unscored(db, work, run_name)
        seconds[scorer] = evaluate_seconds(work, run_name, scorer)
        seconds[f"{scorer}_cached"] = evaluate_seconds(work, run_name, scorer)
        work.unlink(missing_ok=True)
        work.with_name(work.name + ".wal").unlink(missing_ok=True)
    ratio = seconds["semantic"] / seconds["partial"]

    quality = Table(
        ("scorer", "threshold", "paraphrases found", "distractors passed", "unrelated passed"),
        tuple(
            (
                name,
                f"{r['threshold']:.2f}",
                *(f"{100 * r[k]:.0f}%" for k in KINDS),
            )
            for name, r in by_scorer.items()
        ),
    )
    sweep_table = Table(
        ("semantic threshold", "paraphrases found", "distractors passed", "unrelated passed"),
        tuple((f"{t:.2f}", *(f"{100 * r[k]:.0f}%" for k in KINDS)) for t, r in sweep.items()),
    )
    answer_table = Table(
        ("metric", "AUC correct > wrong", "mean, correct answers", "mean, wrong answers"),
        tuple(
            (
                name,
                f"{answers[f'{name}_auc']:.2f}",
                f"{answers[f'{name}_correct']:.2f}",
                f"{answers[f'{name}_wrong']:.2f}",
            )
            for name in ("AnswerSimilarity", "TokenF1")
        ),
    )
    speed = Table(
        ("step", "time", "note"),
        (
            (
                f"embed {n_embed:,} chunk texts (wordllama, one core)",
                fmt_seconds(embed["seconds"]),
                f"{n_embed / embed['seconds']:,.0f} texts/s, "
                f"{embed['chars'] / n_embed:.0f} characters each",
            ),
            (
                f"evaluate, {n_queries:,} queries, --scorer partial (scores first)",
                fmt_seconds(seconds["partial"]),
                "the default scorer",
            ),
            (
                f"evaluate, {n_queries:,} queries, --scorer semantic (scores first)",
                fmt_seconds(seconds["semantic"]),
                f"{fmt_ratio(ratio)} the default's",
            ),
            (
                "evaluate again, partial / semantic (kept scores)",
                f"{fmt_seconds(seconds['partial_cached'])} / "
                f"{fmt_seconds(seconds['semantic_cached'])}",
                "",
            ),
        ),
        text_columns=(0, 2),
    )
    data: dict[str, Any] = {
        "by_scorer": by_scorer,
        "sweep": {str(k): v for k, v in sweep.items()},
        "answers": answers,
        "embed": embed,
        "evaluate_seconds": seconds,
        "semantic_over_default": ratio,
    }
    return ScenarioResult(
        key="semantic",
        title="Semantic scorer: labelled pairs and speed",
        setup=(
            f"{PAIRS.relative_to(ROOT)} ({sum(1 for _ in PAIRS.open())} pairs) at each scorer's "
            f"default threshold; {ANSWERS.relative_to(ROOT)} ({answers['n']:.0f} questions); "
            f"the {n_queries:,}-query large run (20 chunks, 3 spans a query)."
        ),
        tables=(
            ("Labelled pairs, each scorer at its default threshold", quality),
            ("The semantic scorer across thresholds", sweep_table),
            ("Correct paraphrased answers vs wrong answers", answer_table),
            ("Speed", speed),
        ),
        notes=(
            "A distractor is a chunk on the same topic that does not state the span's fact; a "
            "static embedder (wordllama) sees shared topic words, so some pass at the default.",
        ),
        data=data,
    )
