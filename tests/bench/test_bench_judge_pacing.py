"""bench/judge_pacing.py at a tiny size: both endpoints judged in full, every third first attempt
throttled and waited for, the ratio in the page's summary. Timings are never asserted."""

from __future__ import annotations

from pathlib import Path

from bench import judge_pacing, report


def test_judge_pacing_runs_both_endpoints_and_reports_the_ratio(tmp_path: Path) -> None:
    result = judge_pacing.run(tmp_path, n_queries=3, latency_s=0.01, concurrency=4)
    plain, throttled = result.data["plain"], result.data["throttled"]
    assert plain["judged"] == throttled["judged"] == plain["tasks"] == 9
    assert plain["throttled"] == 0 and plain["requests"] == 9
    assert throttled["throttled"] == 3 and throttled["requests"] == 12
    assert throttled["retry_waits_s"] == 3.0  # each 429 waited its own Retry-After: 1
    assert throttled["final_interval_s"] == 0.0  # the shared pace recovered
    assert result.data["ratio"] == throttled["seconds"] / plain["seconds"]
    rows = [row for row in report.headline([result]).rows if row[0].startswith("judge, 3 items")]
    assert len(rows) == 1 and rows[0][1].endswith("x")
    assert "every 3rd first attempt 429" in result.text()
