"""Trends grouped into lines by a run tag or the run name's stem, dated from created_at or import."""

from __future__ import annotations

import pytest

from rageval_core.annotate import attach_facts
from rageval_core.compare import group_keys, name_stem, trend_group, trends
from tests.core.compare.test_compare import make_run, store_with


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("bm25-k3", "bm25"),
        ("hybrid_rerank", "hybrid_rerank"),
        ("exp_v2_2", "exp"),
        ("exp-2026-05-01", "exp"),
        ("k3", "k3"),  # never cut to nothing
    ],
)
def test_name_stem_cuts_version_tails(name: str, stem: str) -> None:
    assert name_stem(name) == stem


def test_trends_group_by_tag_or_stem_and_say_where_the_date_comes_from() -> None:
    runs = (
        make_run("bm25-k3", {"q1": 1}, created_at="2024-05-06"),
        make_run("bm25-k5", {"q1": 2}, created_at="2024-05-07"),
        make_run("dense", {"q1": 1}),
    )
    with store_with(*runs) as store:
        attach_facts(store, "dense", tags={"experiment": "chunking"})
        rows = trends(store, metrics=["RR"])
    by_name = {r.run: r for r in rows}
    assert [trend_group(r) for r in rows] == ["bm25", "bm25", "dense"]
    assert trend_group(by_name["dense"], "experiment") == "chunking"
    assert trend_group(by_name["bm25-k3"], "experiment") == "(no experiment)"
    assert "experiment" in group_keys(rows)
    assert by_name["bm25-k3"].dated_from == "created_at"
    assert by_name["bm25-k3"].when == "2024-05-06"
    assert by_name["dense"].dated_from == "imported_at"
    assert by_name["dense"].when == str(by_name["dense"].imported_at)
