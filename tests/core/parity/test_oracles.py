"""The test oracles themselves, on cases small enough to work out by hand from the scripts' rules."""

from __future__ import annotations

import pytest

from tests.core.parity import oracle_eggai as E
from tests.core.parity import oracle_tatrag as T


def doc(content: str, score: float = 1.0, **meta: object) -> dict[str, object]:
    return {"id": content[:8], "content": content, "score": score, "metadata": meta}


def test_tatrag_chunk_inside_span_covers_and_one_chunk_one_item() -> None:
    entry = {
        "query": "q",
        "gold": [
            {"content": "Revenue  grew by 10 percent in 2019", "type": "TEXT"},
            {"content": "revenue grew by 10 percent in 2019"},  # the same span, listed twice
            {"content": "x/y/Table_1.csv", "type": "FILE"},
        ],
    }
    docs = [
        doc("grew by 10 percent"),  # inside span 0: covers it (the first item it matches)
        doc("unrelated words entirely", table_path="csvs/table_1.csv"),  # FILE by metadata
        doc("nothing here at all"),
        doc("REVENUE grew by 10\npercent in 2019"),  # span 0 again: a duplicate hit
    ]
    r = T.evaluate_query(docs, entry)
    assert r["total"] == 3
    assert r["covered"][10] == 2  # the duplicate span can never be covered
    assert r["precision"][5] == pytest.approx(3 / 4)  # divided by min(5, 4 retrieved)
    assert r["precision"][1] == 1.0
    assert r["full"][10] == 0.0
    assert r["ap"] == pytest.approx((1 / 1 + 2 / 2) / 3)  # only ranks covering a new item
    assert r["rr"] == 1.0
    assert r["hit"][1] == 1.0


def test_tatrag_score_threshold_prunes_and_files_only_query_is_scored() -> None:
    entry = {"query": "q", "gold": [{"content": "a/b.csv", "type": "FILE"}]}
    hits = [doc("x", 0.05, source="b.csv"), doc("y", 0.3), doc("z", 0.2, doc_id="B.CSV")]
    docs = T.retrieved(hits)
    assert [d["content"] for d in docs] == ["y", "z"]
    r = T.evaluate_query(docs, entry)
    assert r["total"] == 1 and r["rr"] == 0.5 and r["ap"] == 0.5 and r["precision"][5] == 0.5


def test_tatrag_no_gold_scores_zero_and_pooled_evidence_recall() -> None:
    golden = [
        {"query": "a", "gold": [{"content": "alpha beta gamma"}, {"content": "delta epsilon"}]},
        {"query": "b", "gold": [{"content": "x", "type": "OTHER"}]},
    ]
    output = [[doc("alpha beta gamma")], [doc("x")]]
    rows = T.per_query(golden, output)
    assert rows[1]["MRR"] == 0.0 and rows[1]["_total"] == 0.0
    s = T.summary(rows)
    assert s["EvidenceRecall@10"] == pytest.approx(1 / 2)  # 1 covered of 2 gold items in all
    assert s["PerQueryCoverage@10"] == pytest.approx((1 / 2 + 0) / 2)


def test_eggai_metrics_by_hand() -> None:
    expected = "abcd"
    chunks = [{"text": "wxyz"}, {"text": " ABCD "}, {"text": "abcx"}, {"text": "abcd"}]
    r = E.case_metrics(expected, chunks)
    sims = [0.0, 1.0, 0.75, 1.0]
    assert r["context_coverage"] == 1.0
    assert r["recall_score"] == 1.0
    assert r["precision_at_k"] == pytest.approx(3 / 4)
    assert r["mrr_score"] == 0.5
    assert r["best_match_position"] == 2  # the first position with the highest similarity
    import math

    dcg = sims[0] + sims[1] / math.log2(2) + sims[2] / math.log2(3) + sims[3] / math.log2(4)
    idcg = 1.0 + 1.0 / math.log2(2) + 0.75 / math.log2(3) + 0.0
    assert r["ndcg_score"] == pytest.approx(dcg / idcg)


def test_eggai_no_whitespace_collapse_and_summary() -> None:
    assert E.similarity("a  b", "a b") < 1.0
    rows = [
        E.case_metrics("abcd", [{"text": "abcd"}]),
        E.case_metrics("abcd", [{"text": "zz"}, {"text": "zz"}, {"text": "abcd"}]),
        E.case_metrics("abcd", []),
    ]
    s = E.summary(rows)
    assert s["best_match_position"] == 2.0  # (1 + 3) / 2: only cases that have one
    assert s["hit_rate_top_1"] == pytest.approx(1 / 3)
    assert s["hit_rate_top_3"] == pytest.approx(2 / 3)
    assert s["precision_at_k"] == pytest.approx((1 + 1 / 3 + 0) / 3)
