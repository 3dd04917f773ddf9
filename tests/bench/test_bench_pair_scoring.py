"""The pair-scoring scenario and its large-run builder at --quick size: structure and sanity.

Timings are never asserted; counts, reuse and the shape of what is reported are.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb

from bench import pair_scoring, report
from bench.__main__ import QUICK
from bench.large_run import build_large_store, read_marker


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_large_store_is_built_once_deterministic_and_scored_on_request(tmp_path: Path) -> None:
    db, name = build_large_store(tmp_path / "a", 40, seed=2, score=False)
    marker = read_marker(tmp_path / "a", 40, seed=2)
    assert marker is not None and marker["scored"] is False and name == "scale"
    assert not list((tmp_path / "a").glob("*.jsonl"))  # the JSONL is not kept
    built_at = db.stat().st_mtime_ns
    # a second call reuses the store; score=True then scores it, once
    assert build_large_store(tmp_path / "a", 40, seed=2, score=False) == (db, name)
    assert db.stat().st_mtime_ns == built_at
    build_large_store(tmp_path / "a", 40, seed=2, score=True)
    marker = read_marker(tmp_path / "a", 40, seed=2)
    assert marker is not None and marker["scored"] is True and marker["n_pairs"] == 40 * 20 * 3
    assert stored(db, "SELECT count(*) FROM pair_scores") == [(40 * 20 * 3,)]
    # three spans per query, twenty chunks; the same seed gives the same texts elsewhere
    assert stored(db, "SELECT DISTINCT count(*) FROM evidence GROUP BY qidx") == [(3,)]
    assert stored(db, "SELECT DISTINCT count(*) FROM chunks GROUP BY qidx") == [(20,)]
    other, _ = build_large_store(tmp_path / "b", 40, seed=2, score=False)
    texts = "SELECT qidx, eidx, text FROM evidence ORDER BY qidx, eidx"
    assert stored(other, texts) == stored(db, texts)


def test_pair_scoring_scenario_at_quick_size(tmp_path: Path) -> None:
    sizes = QUICK["pair_scoring"]
    n = sizes["n_queries"]
    result = pair_scoring.run(tmp_path, **sizes)
    data = result.data
    assert data["n_pairs"] == data["expected_pairs"] == 20 * 3 * n
    assert data["substring_pairs"] + data["fuzzy_pairs"] == data["n_pairs"]
    assert data["substring_pairs"] >= 3 * n  # every span is cut from one of its chunks
    assert 3 * n <= data["distinct_pairs"] <= data["n_pairs"]
    reused = data["reused"]
    assert reused["cached"] is True and reused["new_pairs_scored"] == 0
    assert reused["n_pairs"] == data["n_pairs"]
    for key in (
        "ratio_vs_difflib",
        "pairs_per_s",
        "floor_two_cores_s",
        "main_peak_rss_mb",
        "peak_pss_mb",
    ):
        assert math.isfinite(data[key]) and data[key] > 0, key
    assert data["workers_cpu_s"] > 0  # the pool did the alignments (seen by the sampler)
    subset = data["subset"]
    assert subset["pairs"] == 20 * 3 * sizes["subset_queries"]
    assert math.isfinite(subset["speedup"]) and subset["speedup"] > 0
    assert data["difflib"]["sample"] == sizes["difflib_sample"]
    assert next(caption for caption, _ in result.tables) == "Scoring the run:"
    text = result.text()
    assert result.title in text and f"{data['n_pairs']:,}" in text
    json.dumps(data)  # the report keeps it as JSON
    headline = report.headline([result]).markdown()
    assert f"pair scoring, {data['n_pairs']:,} (span, chunk) pairs" in headline
    assert "0 pairs scored" in headline  # the re-run's row
    (limit,) = report.limits_table([result]).rows
    assert limit[0].startswith("pair scoring") and limit[3].endswith("x of it")
    assert not list(tmp_path.glob("pair_scoring_*.duckdb"))  # the scored copy is removed
