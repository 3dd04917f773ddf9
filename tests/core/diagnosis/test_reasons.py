"""Each missed gold span gets exactly the reason its run was built with (runs.py), through
rv.diagnose; the query's reason is its spans' most frequent (ties by the order of reasons)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rageval as rv
from rageval_core.diagnosis import EVIDENCE_REASONS, IDS_REASONS, diagnose
from rageval_core.matching import score_one
from rageval_core.numbers import missing_numbers
from tests.core.diagnosis import runs


def test_the_constructed_scores_are_what_the_runs_need() -> None:
    """The premises: covering, refused, near and split scores are where the reasons need them."""
    t = 0.7
    assert score_one(runs.BELOW, runs.BELOW)[0] == 1.0
    assert score_one(runs.NUMBERS, runs.NUMBERS_CHUNK)[0] >= t
    assert missing_numbers(runs.NUMBERS, runs.NUMBERS_CHUNK)
    near = score_one(runs.NEAR, runs.NEAR_CHUNK)[0]
    assert 0.6 <= near < t and round(t - near, 2) == 0.04
    for chunk in (runs.SPLIT_FIRST, runs.SPLIT_SECOND):  # neither holds the whole span
        assert score_one(runs.SPLIT, chunk)[0] < t
    assert score_one(runs.SPLIT_A, runs.SPLIT_FIRST)[0] == 1.0
    assert score_one(runs.SPLIT_B, runs.SPLIT_SECOND)[0] == 1.0
    for record in runs.evidence_records():
        fillers = [c["text"] for c in record["retrieved"] if c["text"].startswith("Filler")]
        for span in record.get("evidence", []):
            assert max(score_one(span, f)[0] for f in fillers) < 0.6


def _reasons(d: rv.Diagnosis) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for q, reason in zip(d.missed.qidx.tolist(), d.missed.reason.tolist(), strict=True):
        out.setdefault(str(d.query_ids[q]), []).append(d.reasons[reason])
    return out


def test_each_missed_span_gets_the_reason_it_was_built_with(built: rv.LoadedRun) -> None:
    d = rv.diagnose(built)
    assert d.relevance == "evidence"
    assert _reasons(d) == {q: r for q, r in runs.EXPECTED.items() if r}
    assert dict(zip(map(str, d.query_ids), d.status, strict=True)) == runs.PRIMARY


def test_each_reason_reports_its_rank_or_score(built: rv.LoadedRun) -> None:
    d = rv.diagnose(built)
    by_query = {str(d.query_ids[q]): d.missed_of(q) for q in range(d.query_ids.size)}
    assert by_query["q_below"].rank.tolist() == [14]
    assert by_query["q_numbers"].rank.tolist() == [1]
    split = by_query["q_split"]
    assert (split.rank.tolist(), split.rank2.tolist()) == ([2], [5])
    assert split.extra_chars[0] >= 30  # the documented minimum part length
    near = float(by_query["q_near"].score[0])
    assert near == pytest.approx(score_one(runs.NEAR, runs.NEAR_CHUNK)[0], abs=1e-6)
    assert d.sentences(int(np.flatnonzero(d.query_ids == "q_near")[0])) == [
        "span 1: best score 0.66, 0.04 under the threshold"
    ]
    assert d.sentences(int(np.flatnonzero(d.query_ids == "q_split")[0])) == [
        "span 1 is split: its first half is in chunk #2, its second in #5"
    ]
    assert d.sentences(int(np.flatnonzero(d.query_ids == "q_below")[0])) == [
        "span 1 is covered at rank 14, below k = 10"
    ]


def test_the_counts_add_up(built: rv.LoadedRun) -> None:
    d = rv.diagnose(built)
    assert d.span_counts() == {
        "numbers_differ": 1,
        "ranked_below_k": 3,
        "split_across_chunks": 1,
        "near_miss": 1,
        "not_retrieved": 4,
    }
    assert d.query_counts() == {
        "numbers_differ": 1,
        "ranked_below_k": 2,
        "split_across_chunks": 1,
        "near_miss": 1,
        "not_retrieved": 2,
        "no_gold": 1,
    }
    assert d.n_failing == 7


def test_the_failing_queries_are_those_evaluate_scores_below_full_coverage(
    built: rv.LoadedRun,
) -> None:
    full = rv.evaluate(built, ["FullCoverageRate@10"]).per_query["FullCoverageRate@10"]
    d = rv.diagnose(built)
    assert np.array_equal(d.failing, full == 0)


def test_the_order_decides_between_reasons_that_both_hold(built: rv.LoadedRun) -> None:
    """With the guard off the refused chunk covers (not missed); with k = 15 the span at 14 is
    covered; a band of 0 leaves no near miss (not_retrieved instead); split_min_chars longer
    than either half leaves the split span a near miss (its chunks score 0.66 and 0.68)."""
    assert "q_numbers" not in _reasons(rv.diagnose(built, numbers_must_match=False))
    assert _reasons(rv.diagnose(built, k=15))["q_tie"] == ["not_retrieved"]
    assert _reasons(rv.diagnose(built, near_miss_band=0.0))["q_near"] == ["not_retrieved"]
    assert _reasons(rv.diagnose(built, split_min_chars=70))["q_split"] == ["near_miss"]
    no_split = diagnose(built.store, built.data, check_splits=False)
    assert _reasons(no_split)["q_split"] == ["near_miss"]


def test_a_score_cut_diagnoses_the_list_that_remains(built: rv.LoadedRun) -> None:
    """Chunks below the retriever-score cut leave first: the chunk at rank 14 (score 0.86) is
    gone, and the span it covered is in no retrieved chunk."""
    d = rv.diagnose(built, score_threshold=0.865)
    assert _reasons(d)["q_below"] == ["not_retrieved"]


def test_ids_mode_reasons_and_unjudged_documents(built_ids: rv.LoadedRun) -> None:
    d = rv.diagnose(built_ids)
    assert d.relevance == "ids" and d.reasons == IDS_REASONS
    status = dict(zip(map(str, d.query_ids), d.status, strict=True))
    assert status == {
        "i_pass": "passing",
        "i_below": "relevant_below_k",
        "i_none": "not_retrieved",
        "i_nothing": "no_gold",
        "i_unjudged": "no_gold",
    }
    rows = {str(d.query_ids[q]): i for i, q in enumerate(d.missed.qidx.tolist())}
    assert d.missed.rank[rows["i_below"]] == 14 and d.missed.rank[rows["i_none"]] == 0
    assert d.unjudged is not None
    # top 10 of i_below: d2 judged (0), 9 unjudged; of i_none: d1 and d3 judged, 8 unjudged
    assert d.unjudged[np.flatnonzero(d.failing)].tolist() == [9, 8]
    hit = rv.evaluate(built_ids, ["Hit@10"]).per_query["Hit@10"]
    # evaluate scores i_nothing (judged, nothing relevant) 0: it has nothing to find
    assert np.array_equal(d.failing, (hit == 0) & (d.query_ids != "i_nothing"))


def test_a_run_without_gold_is_all_no_gold() -> None:
    records = [{"query_id": "a", "retrieved": [{"doc_id": "x", "text": "y"}]}]
    with rv.load(records) as run:
        d = rv.diagnose(run)
    assert d.relevance is None and set(d.status) == {"no_gold"} and d.what_if == ()
    assert d.to_json()["queries"]["no_gold"] == 1


def test_by_tag_counts_inside_each_value(built: rv.LoadedRun) -> None:
    records = runs.evidence_records()
    for i, r in enumerate(records):
        r["tags"] = {"half": "first" if i < 4 else "second"}
    with rv.load(records) as run:
        d = rv.diagnose(run, by="half")
        with pytest.raises(rv.UsageError, match="no tag 'nope'"):
            rv.diagnose(run, by="nope")
    assert d.by is not None
    groups = d.by["groups"]
    assert groups["first"]["n"] == 4 and groups["first"]["failing"] == 3
    assert groups["first"]["queries"]["split_across_chunks"] == 1
    assert groups["second"]["queries"]["not_retrieved"] == 2
    total = {
        r: groups["first"]["spans"][r] + groups["second"]["spans"][r] for r in EVIDENCE_REASONS
    }
    assert total == d.span_counts()


def test_settings_out_of_range_are_usage_errors(built: rv.LoadedRun) -> None:
    with pytest.raises(rv.UsageError, match="near-miss band"):
        rv.diagnose(built, near_miss_band=1.5)
    with pytest.raises(rv.UsageError, match="split minimum"):
        rv.diagnose(built, split_min_chars=0)


def test_the_json_has_the_documented_keys(built: rv.LoadedRun) -> None:
    out = rv.diagnose(built).to_json(per_query=True)
    assert list(out) == ["run", "settings", "spans", "queries", "what_if", "per_query"]
    assert all(set(w) == {"change", "fixes", "of"} for w in out["what_if"])
    assert all(set(q) == {"query_id", "reason", "missed"} for q in out["per_query"])
    near = next(q for q in out["per_query"] if q["query_id"] == "q_near")["missed"][0]
    assert set(near) == {"span", "reason", "score"} and not math.isnan(near["score"])
    assert out["settings"]["near_miss_band"] == 0.1 and out["settings"]["split_min_chars"] == 30


def test_kept_part_scores_give_what_a_fresh_check_gives() -> None:
    """The split check keeps its part scores on the run: a diagnosis at another threshold and k
    after the first equals one on a freshly loaded run (nothing stale is reused)."""
    moved = {"threshold": 0.72, "k": 6}
    with rv.load(runs.evidence_records()) as run:
        rv.diagnose(run)
        again = rv.diagnose(run, **moved).to_json(per_query=True)
    with rv.load(runs.evidence_records()) as fresh:
        assert rv.diagnose(fresh, **moved).to_json(per_query=True) == again
    assert {q["query_id"]: q["reason"] for q in again["per_query"]}["q_split"] == (
        "split_across_chunks"
    )
