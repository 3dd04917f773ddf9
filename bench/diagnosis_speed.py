"""Scenario: the failure diagnosis of a large run from its kept scores (issue 30; target < 1 s).

A synthetic scored run (bench.recompute's tensor: queries x 20 chunks x 1-3 spans, 80% with the
gold chunk somewhere in the list, 5% without gold) stands where diagnose() finds a run's kept
pair scores, with a numbers guard refusing 2% of its pairs; the timed call is
rageval_core.diagnosis.diagnose itself at k = 10: every reason but the split check, every
what-if count. The split check reads texts (it scores the undecided spans' two parts against
their top-k chunks): the synthetic run has none, so its cost is measured on the sample run bm25
(real texts, every default) and given per checked span, beside the number of spans the large
run would check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ScenarioResult, Table, fmt_runs, fmt_seconds, measure
from bench.recompute import make_run_data, make_tensor

#: the issue's target for the diagnosis from kept scores
TARGET_SECONDS = 1.0
REPO = Path(__file__).resolve().parents[1]


def run(n_queries: int = 100_000, repeats: int = 5, sample: bool = True) -> ScenarioResult:
    from rageval_core.diagnosis import diagnose
    from rageval_core.evaluate import Settings
    from rageval_core.store import Store

    scores, n_spans, n_ret, retriever = make_tensor(n_queries)
    data = make_run_data(scores, n_spans, n_ret, retriever)
    guard = np.random.default_rng(1).random(scores.shape) >= 0.02
    data._cache[("numbers",)] = guard  # where rundata.numbers_guard keeps a run's guard
    settings = Settings(relevance="evidence")
    with Store(":memory:") as store:

        def once() -> Any:
            data._cache.pop(("diagnosis", "partial", "v1", None, True), None)  # nothing reused
            return diagnose(store, data, settings, check_splits=False)

        timing, d = measure(once, repeats)
        undecided = _split_candidates(d)
    counts = d.span_counts()
    rows = [
        (
            f"{n_queries:,} queries x 20 chunks, diagnose() from kept scores (no text read)",
            fmt_seconds(timing.median),
            fmt_runs(timing),
        )
    ]
    notes = [
        f"{d.n_failing:,} failing queries, {len(d.missed):,} missed spans: "
        + ", ".join(f"{r} {n:,}" for r, n in counts.items()),
        "what-if: " + "; ".join(w.text() for w in d.what_if),
        f"target {TARGET_SECONDS:g} s: {'met' if timing.median < TARGET_SECONDS else 'MISSED'}",
    ]
    data_out: dict[str, Any] = {
        "n_queries": n_queries,
        "timing": timing.to_json(),
        "met": timing.median < TARGET_SECONDS,
        "split_candidates": undecided,
    }
    if sample:
        split = _split_cost()
        data_out["split"] = split
        rows.append(
            (
                f"sample run bm25 (360 queries): the split check of {split['checked']} undecided "
                "spans (texts read, parts scored)",
                fmt_seconds(split["seconds"]),
                f"{fmt_seconds(split['seconds'] / max(split['checked'], 1))} per span",
            )
        )
        rows.append(
            (
                "sample run bm25: the whole diagnosis at another threshold (part scores kept)",
                fmt_seconds(split["again_s"]),
                "1",
            )
        )
        notes.append(
            f"the large run would check {undecided:,} spans for a split: about "
            f"{fmt_seconds(undecided * split['seconds'] / max(split['checked'], 1))} at the "
            "sample run's rate (a run with texts; the split check is the one part that reads them)"
        )
    return ScenarioResult(
        key="diagnosis",
        title="Failure diagnosis from kept scores",
        setup=__doc__.strip().splitlines()[0] if __doc__ else "",
        tables=(("", Table(("what", "median", "runs"), tuple(rows), text_columns=(0, 2))),),
        notes=tuple(notes),
        data=data_out,
    )


def _split_candidates(d: Any) -> int:
    """Spans the split check would read: neither refused nor covered below k (here they are
    near misses or not retrieved)."""
    return int(np.count_nonzero(np.isin(d.missed.reason, (3, 4))))


def _split_cost() -> dict[str, Any]:
    """Seconds of the split check on the sample run bm25 (diagnose with it minus without; the
    best of three each, nothing kept between calls), and a second check at another threshold
    that reuses the kept part scores."""
    import time

    import rageval as rv
    from rageval_core.diagnosis import diagnose

    with rv.load(REPO / "sample_runs" / "bm25.jsonl") as bm25:
        without = diagnose(bm25.store, bm25.data, relevance="evidence", check_splits=False)
        checked = _split_candidates(without)
        best = {}
        for split in (False, True, False, True, False, True):
            for key in [k for k in bm25.data._cache if k[0] in ("diagnosis", "split_parts")]:
                del bm25.data._cache[key]  # nothing kept from the call before
            started = time.perf_counter()
            diagnose(bm25.store, bm25.data, relevance="evidence", check_splits=split)
            seconds = time.perf_counter() - started
            best[split] = min(best.get(split, seconds), seconds)
        started = time.perf_counter()  # the kept part scores serve another threshold
        diagnose(bm25.store, bm25.data, relevance="evidence", threshold=0.75)
        again = time.perf_counter() - started
    return {"checked": checked, "seconds": max(best[True] - best[False], 0.0), "again_s": again}
