"""Each what-if count equals a recomputation through the normal evaluate path at the changed
setting: the failing queries whose FullCoverageRate@k (ids mode: Hit@k) becomes 1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import rageval as rv
from tests.paths import REPO


def _fixes_by_evaluate(
    run: rv.LoadedRun, d: rv.Diagnosis, metric: str, given: dict[str, Any], **changed: Any
) -> int:
    """Failing queries of d whose metric@k is 1 at the settings given to diagnose, changed."""
    settings = {"k": 10, **given, **changed}
    name = f"{metric}@{settings['k']}"
    values = rv.evaluate(run, [name], **settings).per_query[name]
    return int(np.count_nonzero(d.failing & (values == 1)))


def _what_if(d: rv.Diagnosis) -> dict[str, Any]:
    return {w.reason: w for w in d.what_if}


def _check_evidence(run: rv.LoadedRun, d: rv.Diagnosis, given: dict[str, Any]) -> set[str]:
    """Every evidence what-if of d against evaluate; the reasons checked."""
    w = _what_if(d)
    k, t = d.settings["k"], d.settings["threshold"]
    for line in d.what_if:
        assert line.of == d.n_failing
    if "ranked_below_k" in w:
        k2 = int(w["ranked_below_k"].change.removeprefix("k = "))
        assert k2 == min(2 * k, run.data.depth)
        assert w["ranked_below_k"].fixes == _fixes_by_evaluate(
            run, d, "FullCoverageRate", given, k=k2
        )
    if "near_miss" in w:
        t2 = float(w["near_miss"].change.removeprefix("threshold "))
        assert t2 == round(t - d.settings["near_miss_band"], 6)
        assert w["near_miss"].fixes == _fixes_by_evaluate(
            run, d, "FullCoverageRate", given, threshold=t2
        )
    if "numbers_differ" in w:
        assert w["numbers_differ"].fixes == _fixes_by_evaluate(
            run, d, "FullCoverageRate", given, numbers_must_match=False
        )
    if "split_across_chunks" in w:  # no setting rechunks: the queries whose misses are all splits
        per_query = d.to_json(per_query=True)["per_query"]
        whole = [
            q for q in per_query if {m["reason"] for m in q["missed"]} == {"split_across_chunks"}
        ]
        assert w["split_across_chunks"].fixes == len(whole)
    return set(w)


def test_what_if_counts_equal_evaluate_at_the_new_setting(built: rv.LoadedRun) -> None:
    d = rv.diagnose(built)
    checked = _check_evidence(built, d, {})
    assert checked == {"numbers_differ", "ranked_below_k", "split_across_chunks", "near_miss"}
    w = _what_if(d)
    assert w["ranked_below_k"].change == "k = 20" and w["ranked_below_k"].fixes == 1  # q_below
    assert w["near_miss"].change == "threshold 0.6"
    assert w["near_miss"].fixes == 2  # q_near, and q_split (its chunks score 0.66 and 0.68)
    assert w["numbers_differ"].fixes == 1 and w["split_across_chunks"].fixes == 1
    assert all(line.of == 7 for line in d.what_if)


def test_ids_what_if_equals_hit_at_the_larger_k(built_ids: rv.LoadedRun) -> None:
    d = rv.diagnose(built_ids)
    (line,) = d.what_if
    assert (line.change, line.fixes, line.of) == ("k = 20", 1, 2)
    assert line.fixes == _fixes_by_evaluate(built_ids, d, "Hit", {}, k=20)


@pytest.fixture(scope="module")
def bm25() -> Iterator[rv.LoadedRun]:
    with rv.load(REPO / "sample_runs" / "bm25.jsonl") as run:
        yield run


@pytest.mark.parametrize(
    "settings",
    [
        {"k": 5},
        {"k": 3, "threshold": 0.8, "near_miss_band": 0.2},
        {"k": 5, "numbers_must_match": False},
        {"k": 5, "score_threshold": 8.0},
    ],
)
def test_sample_run_what_if_counts_equal_evaluate(
    bm25: rv.LoadedRun, settings: dict[str, Any]
) -> None:
    given = {"relevance": "evidence", **settings}
    d = rv.diagnose(bm25, **given)
    checked = _check_evidence(bm25, d, given)
    assert {"ranked_below_k", "near_miss"} <= checked


def test_sample_run_ids_what_if_equals_hit(bm25: rv.LoadedRun) -> None:
    d = rv.diagnose(bm25, k=5)
    assert d.relevance == "ids"
    (line,) = d.what_if
    assert line.fixes == _fixes_by_evaluate(bm25, d, "Hit", {"k": 5}, k=10) > 0


def test_a_not_retrieved_span_names_the_better_chunk_the_guard_zeroed(bm25: rv.LoadedRun) -> None:
    """q0018's span holds "36 months"; its best top-k chunk (0.51) lacks the 36: the metrics
    count 0.00, and the sentence says both."""
    d = rv.diagnose(bm25, relevance="evidence")
    q = int(np.flatnonzero(d.query_ids == "q0018")[0])
    assert d.status[q] == "not_retrieved"
    assert d.sentences(q) == [
        "span 1 is in no retrieved chunk (best score 0.00; 0.51 by a chunk whose figures differ)"
    ]
