"""Scenario 2: what moving k or the threshold costs once the evidence scores are kept.

A synthetic (queries x 20 chunks x 3 spans) evidence tensor stands for a scored run: it is put
where evaluate() finds a run's kept pair scores, so the timed call is the dashboard's own path
(evaluate on a RunData) and not a re-implementation of it.
"""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_runs, fmt_seconds, measure
from rageval_core.evaluation.evaluate import coverage, evaluate, evidence_labels
from rageval_core.evaluation.report import Settings
from rageval_core.metrics import compute
from rageval_core.metrics.evidence import prepare_coverage, threshold_sweep
from rageval_core.rundata import RunData
from rageval_core.store import RunRecord, Store

#: a new (k, threshold) must be answered within this (the dashboard's slider budget)
TARGET_SECONDS = 0.050
EVIDENCE_METRICS = (
    "EvidenceRecall@{k}",
    "PerQueryCoverage@{k}",
    "FullCoverageRate@{k}",
    "ContextCoverage@{k}",
    "BestRank@{k}",
)
RANKING_METRICS = ("P@{k}", "R@{k}", "RR", "AP", "nDCG@{k}", "Hit@{k}", "Rprec")
THRESHOLDS = np.linspace(0.0, 1.0, 101)


def make_tensor(
    n_queries: int, depth: int = 20, spans: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(scores, n_spans, n_ret, retriever scores) of a synthetic scored run.

    Most pairs score like unrelated text (beta(2, 5)); 80% of the queries have their gold chunk
    somewhere in the list, where each span scores 1.0 (verbatim) or 0.6-1.0 (paraphrased).
    5% of the queries have no gold span; lists hold 10-20 chunks.
    """
    rng = np.random.default_rng(seed)
    scores = rng.beta(2, 5, (n_queries, depth, spans)).astype(np.float32)
    n_ret = rng.integers(depth // 2, depth + 1, n_queries)
    n_spans = rng.integers(1, spans + 1, n_queries)
    n_spans[rng.random(n_queries) < 0.05] = 0
    has_gold = rng.random(n_queries) < 0.8
    gold_rank = (rng.random(n_queries) * n_ret).astype(np.int64)
    gold = np.where(
        rng.random((n_queries, spans)) < 0.5, 1.0, rng.uniform(0.6, 1.0, (n_queries, spans))
    )
    rows = np.flatnonzero(has_gold)
    scores[rows, gold_rank[rows], :] = gold[rows].astype(np.float32)
    ranks = np.arange(depth)
    scores[ranks[None, :] >= n_ret[:, None]] = np.nan
    scores[
        np.broadcast_to((np.arange(spans)[None, :] >= n_spans[:, None])[:, None, :], scores.shape)
    ] = np.nan
    retriever = np.sort(rng.random((n_queries, depth)), axis=1)[:, ::-1].copy()
    retriever[ranks[None, :] >= n_ret[:, None]] = np.nan
    return scores, n_spans.astype(np.int64), n_ret.astype(np.int64), retriever


def make_run_data(
    scores: np.ndarray, n_spans: np.ndarray, n_ret: np.ndarray, retriever: np.ndarray
) -> RunData:
    """A RunData whose kept 'partial' scores are the given tensor (nothing else is stored)."""
    n, depth, _ = scores.shape
    record = RunRecord(
        run_id=1,
        name="synthetic",
        content_hash="",
        format="native",
        sources=(),
        created_at=None,
        description=None,
        imported_at="",
        settings={},
        price_prompt_per_1k=None,
        price_completion_per_1k=None,
        n_queries=n,
        n_chunks=int(n_ret.sum()),
        max_depth=depth,
        has_evidence=True,
    )
    empty_i = np.zeros(0, dtype=np.int64)
    data = RunData(
        run=record,
        query_ids=np.asarray([f"q{i}" for i in range(n)], dtype=object),
        in_run=np.ones(n, dtype=bool),
        has_qrels=np.zeros(n, dtype=bool),
        n_ret=n_ret,
        labels=np.zeros((n, depth), dtype=np.int32),
        chunk_score=retriever,
        judged_q=empty_i,
        judged_label=np.zeros(0, dtype=np.int32),
        n_spans=n_spans,
        tags={},
        latency_q=empty_i,
        latency_stage=np.zeros(0, dtype=object),
        latency_ms=np.zeros(0),
        tokens_q=empty_i,
        tokens_kind=np.zeros(0, dtype=object),
        tokens_n=empty_i,
    )
    # Where rundata.evidence_tensor keeps a run's scores once read from the store: evaluate()
    # then takes them from here instead of scoring texts the synthetic run does not have.
    data._cache[("evidence", Settings().scorer_key)] = scores
    return data


def growth(
    sizes: Sequence[int], depth: int = 20, spans: int = 3, seed: int = 0, repeats: int = 5
) -> list[dict[str, Any]]:
    """Per size: first evaluate(), a new (k, threshold), a full sweep, and the memory they take.

    Memory is the tensor plus tracemalloc's peak during the first evaluate() (numpy reports its
    buffers to tracemalloc), i.e. what the run's arrays and the metrics need, without the
    interpreter. Each size builds its own tensor; the previous one is freed first.
    """
    with Store(":memory:") as store:  # one-time costs (imports, first calls) out of the first size
        evaluate(
            make_run_data(*make_tensor(100, depth, spans, seed)), store=store, relevance="evidence"
        )
    return [_growth_point(n, depth, spans, seed, repeats) for n in sizes]


def _growth_point(n: int, depth: int, spans: int, seed: int, repeats: int) -> dict[str, Any]:
    """One size of growth(): its arrays live only for this call."""
    scores, n_spans, n_ret, retriever = make_tensor(n, depth, spans, seed)
    data = make_run_data(scores, n_spans, n_ret, retriever)
    rng = np.random.default_rng(seed + 2)
    pairs = itertools.cycle(
        zip(
            rng.integers(1, depth + 1, 100).tolist(),
            np.round(rng.uniform(0.5, 0.95, 100), 4).tolist(),
            strict=True,
        )
    )
    with Store(":memory:") as store:
        tracemalloc.start()
        first = measure(lambda: evaluate(data, store=store, relevance="evidence"), 1, warmup=False)[
            0
        ]
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        def new_setting() -> Any:
            k, t = next(pairs)
            return evaluate(data, store=store, relevance="evidence", k=k, threshold=t)

        new, _ = measure(new_setting, repeats)
        cov = coverage(store, data, Settings())
    sweep, _ = measure(
        lambda: {
            k: threshold_sweep(cov.with_threshold(0.7), THRESHOLDS, k) for k in range(1, depth + 1)
        },
        1,
        warmup=False,
    )
    return {
        "n_queries": n,
        "seconds": first.median,
        "first_s": first.median,
        "new_setting_s": new.median,
        "sweep_s": sweep.median,
        "peak_mb": (scores.nbytes + peak) / 1e6,
    }


def run(
    n_queries: int = 100_000,
    depth: int = 20,
    spans: int = 3,
    seed: int = 0,
    repeats: int = 15,
    slow_repeats: int = 3,
    growth_sizes: Sequence[int] = (),
) -> ScenarioResult:
    """Time prepare_coverage, a new (k, threshold) through evaluate(), and a full sweep."""
    scores, n_spans, n_ret, retriever = make_tensor(n_queries, depth, spans, seed)
    data = make_run_data(scores, n_spans, n_ret, retriever)
    rng = np.random.default_rng(seed + 1)
    # every timed call gets a (k, threshold) it has not seen: nothing is answered from a cache
    settings = itertools.cycle(
        [
            (int(k), round(float(t), 4))
            for k, t in zip(
                rng.integers(1, depth + 1, 1000), rng.uniform(0.5, 0.95, 1000), strict=True
            )
        ]
    )

    prepare, _ = measure(lambda: prepare_coverage(scores, n_spans, n_ret), slow_repeats)
    with Store(":memory:") as store:
        cold = measure(lambda: evaluate(data, store=store, relevance="evidence"), 1, warmup=False)[
            0
        ]

        def new_setting() -> Any:
            k, t = next(settings)
            return evaluate(data, store=store, relevance="evidence", k=k, threshold=t)

        full, report = measure(new_setting, repeats)

        def new_k() -> Any:
            # the slider moves k only: the threshold's labels and their sums are kept
            k, _ = next(settings)
            return evaluate(data, store=store, relevance="evidence", k=k, threshold=0.7)

        k_only, _ = measure(new_k, repeats)

        def evidence_only() -> Any:
            k, t = next(settings)
            cov = coverage(store, data, Settings(k=k, threshold=t))
            return compute([m.format(k=k) for m in EVIDENCE_METRICS], cov)

        def labels_only() -> Any:
            k, t = next(settings)
            return evidence_labels(store, data, Settings(k=k, threshold=t))

        def labels_and_ranking() -> Any:
            k, t = next(settings)
            arrays, _ = evidence_labels(store, data, Settings(k=k, threshold=t))
            return compute([m.format(k=k) for m in RANKING_METRICS], arrays)

        evidence_t, _ = measure(evidence_only, repeats)
        labels_t, _ = measure(labels_only, repeats)
        ranking_t, _ = measure(labels_and_ranking, repeats)
        cov = coverage(store, data, Settings())

    def sweep(c: Any) -> dict[int, Any]:
        return {k: threshold_sweep(c, THRESHOLDS, k) for k in range(1, depth + 1)}

    # with_threshold() gives a new Coverage object: the sweep's sorted caches start empty
    sweep_cold, _ = measure(lambda: sweep(cov.with_threshold(0.7)), slow_repeats)
    sweep_warm, _ = measure(lambda: sweep(cov), repeats)

    # the floor of any new threshold: every kept score read once (a numpy comparison and count)
    floor, _ = measure(lambda: np.count_nonzero(scores >= np.float32(0.7)), repeats)
    verdict = "within" if full.median <= TARGET_SECONDS else "OVER"
    rows = (
        (
            "prepare_coverage (once per run, scorer and score cut)",
            fmt_seconds(prepare.median),
            fmt_runs(prepare),
            "",
        ),
        (
            "first evaluate() (prepare_coverage + everything below)",
            fmt_seconds(cold.median),
            fmt_runs(cold),
            "",
        ),
        (
            "new (k, threshold): evaluate(), evidence mode, default metrics",
            fmt_seconds(full.median),
            fmt_runs(full),
            f"{verdict} 50 ms ({fmt_ratio(full.median / TARGET_SECONDS)} of it)",
        ),
        (
            "new k, same threshold: evaluate(), as above",
            fmt_seconds(k_only.median),
            fmt_runs(k_only),
            f"{'within' if k_only.median <= TARGET_SECONDS else 'OVER'} 50 ms",
        ),
        (
            "  of which: 5 evidence metrics at k (registry.compute)",
            fmt_seconds(evidence_t.median),
            fmt_runs(evidence_t),
            "",
        ),
        (
            "  of which: evidence-mode labels (covers -> RankedLabels)",
            fmt_seconds(labels_t.median),
            fmt_runs(labels_t),
            "",
        ),
        (
            "  labels + 7 ranking metrics on them",
            fmt_seconds(ranking_t.median),
            fmt_runs(ranking_t),
            "",
        ),
        (
            f"threshold sweep, {THRESHOLDS.size} thresholds x every k (1..{depth}), cold",
            fmt_seconds(sweep_cold.median),
            fmt_runs(sweep_cold),
            f"{fmt_seconds(sweep_cold.median / depth)} per k",
        ),
        (
            "same sweep again (sorted values cached per k)",
            fmt_seconds(sweep_warm.median),
            fmt_runs(sweep_warm),
            f"{fmt_seconds(sweep_warm.median / depth)} per k",
        ),
    )
    table = Table(
        ("step", "median", "runs (fastest - slowest)", "against the target"),
        rows,
        text_columns=(0, 3),
    )
    tables: list[tuple[str, Table]] = [("", table)]
    points = growth(growth_sizes, depth, spans, seed) if growth_sizes else []
    if points:
        tables.append(
            (
                "Growth: the same synthetic run at each size (first evaluate() includes "
                "prepare_coverage; memory = the score tensor + the peak numpy allocations of that call):",
                Table(
                    (
                        "queries",
                        "first evaluate()",
                        "new (k, threshold)",
                        "sweep 101 x every k",
                        "memory",
                    ),
                    tuple(
                        (
                            f"{p['n_queries']:,}",
                            fmt_seconds(p["first_s"]),
                            fmt_seconds(p["new_setting_s"]),
                            fmt_seconds(p["sweep_s"]),
                            f"{p['peak_mb']:,.0f} MB",
                        )
                        for p in points
                    ),
                ),
            )
        )
    n_excluded = int(np.count_nonzero(n_spans == 0))
    return ScenarioResult(
        key="recompute",
        title="2. Recompute after a new k or threshold",
        setup=(
            f"Synthetic evidence tensor: {n_queries:,} queries x {depth} chunks x {spans} spans "
            f"({scores.size:,} pair scores, float32), lists of {depth // 2}-{depth} chunks, "
            f"{n_excluded:,} queries without gold spans, seed {seed}. Timed through "
            "evaluate(RunData, relevance='evidence', k=..., threshold=...), as the dashboard "
            "calls it; each timed call uses a (k, threshold) not seen before."
        ),
        tables=tuple(tables),
        notes=(
            f"A new (k, threshold) takes {fmt_seconds(full.median)} (median of "
            f"{len(full.seconds)}): {verdict} the 50 ms target. Of that, the 5 evidence metrics "
            f"take {fmt_seconds(evidence_t.median)}; the evidence-mode labels and the 7 ranking "
            f"metrics over them (running counts over {n_queries:,} x {depth} int8, float sums "
            f"over the relevant cells only) {fmt_seconds(ranking_t.median)}; the rest is "
            "evaluate()'s bookkeeping (per-query scatter, aggregation). A new k alone takes "
            f"{fmt_seconds(k_only.median)}: the threshold's labels and their sums are kept.",
            f"The warm-up call's report (k={report.settings['k']}, threshold="
            f"{report.settings['threshold']}): {len(report.metrics)} metrics over "
            f"{report.counts.get('scored_evidence', 0):,} queries with gold spans.",
        ),
        data={
            "n_queries": n_queries,
            "depth": depth,
            "spans": spans,
            "target_s": TARGET_SECONDS,
            "within_target": bool(full.median <= TARGET_SECONDS),
            "timings": {
                "prepare_coverage": prepare.to_json(),
                "first_evaluate": cold.to_json(),
                "new_k_threshold": full.to_json(),
                "evidence_metrics": evidence_t.to_json(),
                "evidence_labels": labels_t.to_json(),
                "labels_and_ranking": ranking_t.to_json(),
                "sweep_cold": sweep_cold.to_json(),
                "sweep_warm": sweep_warm.to_json(),
            },
            # kept out of "timings", whose key set tests/bench/test_bench_smoke.py pins
            "new_k_same_threshold": k_only.to_json(),
            "report_settings": {
                "k": report.settings["k"],
                "threshold": report.settings["threshold"],
            },
            "report_metrics": dict(report.metrics),
            # the growth plot's series (bench/report.py growth_series): seconds = first evaluate()
            "growth": points,
            "limits": [
                {
                    "figure": f"new (k, threshold) on {n_queries:,} queries",
                    "measured": fmt_seconds(full.median),
                    "limit": (
                        f"{fmt_seconds(floor.median)}: one numpy pass over the {scores.size:,} "
                        "kept scores (every new threshold must read each score once)"
                    ),
                    "distance": f"{full.median / floor.median:.1f}x of it",
                }
            ],
            "growth_label": "metrics: first evaluate() (synthetic scored run)",
        },
    )
