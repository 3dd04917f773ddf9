"""The semantic bench scenario at tiny sizes: it runs, its tables hold every scorer, and its
labelled-set rates are the scorer's own (timings are never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench import bench_semantic, report
from rageval_core.matching.scorers import score_pairs
from rageval_core.settings.schema import SCORER_NAMES, SEMANTIC_THRESHOLD


def test_labelled_rates_are_the_scorers_own() -> None:
    by_scorer, sweep = bench_semantic.labelled_rates()
    assert set(by_scorer) == set(bench_semantic.BENCHED)
    assert set(SCORER_NAMES) - set(bench_semantic.BENCHED) == {"cross-encoder"}  # needs a model
    assert by_scorer["semantic"]["threshold"] == SEMANTIC_THRESHOLD
    assert by_scorer["partial"]["threshold"] == 0.7
    # recomputed here, apart from the bench code: the share of paraphrases at 0.45
    rows = [json.loads(line) for line in bench_semantic.PAIRS.read_text().splitlines()]
    para = [r for r in rows if r["kind"] == "paraphrase"]
    idx = np.arange(len(para))
    got = score_pairs([r["span"] for r in para], [r["chunk"] for r in para], idx, idx, "semantic")
    assert by_scorer["semantic"]["paraphrase"] == float((got.score >= SEMANTIC_THRESHOLD).mean())
    # more paraphrases found at a lower threshold, never fewer
    found = [sweep[t]["paraphrase"] for t in sorted(sweep)]
    assert found == sorted(found, reverse=True)


def test_scenario_runs_at_tiny_sizes(tmp_path: Path) -> None:
    result = bench_semantic.run(tmp_path, n_queries=60, n_embed=200)
    assert result.tables[0][0].startswith("Labelled pairs")
    assert len(result.tables[0][1].rows) == len(bench_semantic.BENCHED)
    assert result.data["semantic_over_default"] > 0
    assert result.data["embed"]["chars"] > 200 * 300  # texts of several hundred characters
    rows = [row[0] for row in report.headline([result]).rows]
    assert any("semantic" in r for r in rows) and any("embed" in r for r in rows)
