"""`make bench` at tiny sizes: each scenario runs, reports what it should, and measures the real
thing (rageval's values on the bench data equal pytrec_eval's). Timings are never asserted."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from bench import matching_speed, native_scale, recompute, report, trec_e2e
from bench.__main__ import main
from bench.common import fmt_ratio, fmt_seconds

DIRECT = "rageval direct (direct.trec_arrays -> compute)"
STORE = "rageval store (import -> load_run_data -> evaluate)"
QUERIES = "rageval Query objects (trec.read -> ranked_labels_from_queries -> compute)"
IRM = "ir_measures (read_trec_run/read_trec_qrels -> iter_calc)"
PYTREC = "pytrec_eval (parse_run/parse_qrel -> evaluate)"
RANX = "ranx, warm (from_file -> evaluate)"
#: `python -m bench --quick` as the tests run it: the smallest sizes that still exercise every part
#: of the page (two recompute sizes for the growth section)
SMALLEST = {
    "recompute": {"n_queries": 200, "repeats": 1, "slow_repeats": 1, "growth_sizes": (100, 200)},
    "matching": {"n_queries": 3, "difflib_sample": 50, "repeats": 1},
}


@pytest.fixture()
def smallest(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.__main__ as bench_main

    monkeypatch.setattr(bench_main, "QUICK", {**bench_main.QUICK, **SMALLEST})


def reference_values(workdir: Path) -> dict[str, dict[str, float]]:
    """pytrec_eval on the files the scenario wrote, computed here, apart from the bench code."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (workdir / "bench.qrels").read_text(encoding="utf-8").splitlines():
        qid, _, doc, rel = line.split()
        qrels.setdefault(qid, {})[doc] = int(rel)
    run: dict[str, dict[str, float]] = {}
    for line in (workdir / "bench.run").read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    names = {
        "P@10": "P_10",
        "R@100": "recall_100",
        "RR": "recip_rank",
        "AP": "map",
        "nDCG@10": "ndcg_cut_10",
    }
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(run)
    return {ours: {q: v[theirs] for q, v in evaluated.items()} for ours, theirs in names.items()}


def test_trec_files_are_deterministic_and_shaped_as_described(tmp_path: Path) -> None:
    a = trec_e2e.write_trec_files(tmp_path / "a", 40, depth=50, seed=3)
    b = trec_e2e.write_trec_files(tmp_path / "b", 40, depth=50, seed=3)
    assert a.run.read_bytes() == b.run.read_bytes() and a.qrels.read_bytes() == b.qrels.read_bytes()
    per_query: dict[str, int] = {}
    for line in a.run.read_text(encoding="utf-8").splitlines():
        per_query[line.split()[0]] = per_query.get(line.split()[0], 0) + 1
    assert len(per_query) == 40 and set(per_query.values()) == {50}
    judged: dict[str, int] = {}
    labels = set()
    for line in a.qrels.read_text(encoding="utf-8").splitlines():
        qid, _, _, rel = line.split()
        judged[qid] = judged.get(qid, 0) + 1
        labels.add(int(rel))
    assert all(10 <= n <= 30 for n in judged.values()) and len(judged) == 40
    assert labels == {0, 1, 2, 3}
    assert 0 < len(a.tied) < 40  # some lists hold ties, not all


def test_trec_scenario_values_equal_pytrec_eval(tmp_path: Path) -> None:
    result = trec_e2e.run(
        tmp_path,
        n_queries=120,
        depth=100,
        with_ranx=False,
        profile=True,
        repeats=1,
        scale_queries=150,
    )
    data = result.data
    assert {"timings", "means", "per_query", "agreement", "ratios", "n_tied_queries"} <= set(data)
    assert set(data["timings"]) == {DIRECT, STORE, QUERIES, PYTREC, IRM}
    # peak memory of each tool, in a child process, and the larger size's run (children too)
    assert set(data["peak_mb"]) == {"direct", "store", "queries", "pytrec_eval", "ir_measures"}
    assert all(mb > 10 for mb in data["peak_mb"].values())
    scale = data["scale"]["tools"]
    # the CLI and a pytrec_eval script are also timed as processes
    assert set(scale) == {
        "direct",
        "store",
        "pytrec_eval",
        "ir_measures",
        "cli",
        "pytrec_eval_script",
    }
    for got in (scale[t] for t in ("direct", "store", "pytrec_eval", "ir_measures")):
        assert len(got["seconds"]) == 2
        for metric in trec_e2e.METRICS:
            assert got["means"][metric] == pytest.approx(
                scale["pytrec_eval"]["means"][metric], abs=1e-9
            )
    for metric in trec_e2e.METRICS:  # the CLI process, by the direct route, at both sizes
        assert scale["cli"]["means"][metric] == pytest.approx(
            scale["pytrec_eval"]["means"][metric], abs=1e-9
        )
        assert data["processes"]["cli"]["means"][metric] == pytest.approx(
            data["means"][PYTREC][metric], abs=1e-9
        )
    assert data["help_s"] > 0  # `rageval --help` timed as a process
    assert {"direct_vs_pytrec_eval", "store_vs_pytrec_eval"} <= set(data["ratios"])
    assert all(t["median_s"] > 0 and t["repeats"] == 1 for t in data["timings"].values())
    assert data["n_tied_queries"] > 0  # trec_eval's tie order is exercised

    expected = reference_values(tmp_path)
    for label in (DIRECT, STORE, QUERIES, IRM):
        got = data["per_query"][label]
        for metric, values in expected.items():
            assert set(got[metric]) == set(values)
            worst = max(abs(got[metric][q] - v) for q, v in values.items())
            assert worst <= 1e-9, (label, metric, worst)
            assert data["means"][label][metric] == pytest.approx(
                np.mean(list(values.values())), abs=1e-9
            )
        assert data["agreement"][label]["queries_differing"] == 0

    # the page's summary states the CLI's time and memory against the script at both sizes
    rows = {row[0]: row for row in report.headline([result]).rows}
    for n, tools in ((120, data["processes"]), (150, scale)):
        head = f"rageval evaluate from TREC files (a process), {n:,} queries x 100 / a pytrec_eval script"
        ratio = rows[f"{head}, peak memory"][1]
        assert ratio == fmt_ratio(tools["cli"]["peak_mb"] / tools["pytrec_eval_script"]["peak_mb"])
        assert rows[f"{head}, wall time"][2].startswith("target 0.5x: ")
    assert rows["`rageval --help` as a process"][1] == fmt_seconds(data["help_s"])

    text = result.text()
    assert "Where the direct path's time goes" in text  # profile=True adds the cProfile table
    assert "equals pytrec_eval on every query" in text and "DISAGREES" not in text


@pytest.mark.slow
def test_trec_scenario_with_ranx_agrees_off_ties(tmp_path: Path) -> None:
    result = trec_e2e.run(
        tmp_path, n_queries=60, depth=100, with_ranx=True, profile=False, repeats=1
    )
    agreement = result.data["agreement"][RANX]
    assert agreement["queries_differing_untied"] == 0
    assert agreement["max_query_difference_untied"] <= 1e-9
    assert {"direct_vs_ranx", "store_vs_ranx"} <= set(result.data["ratios"])
    assert result.data["first_call_s"][RANX] > 0


def test_native_scale_scenario_imports_with_the_cli(tmp_path: Path) -> None:
    result = native_scale.run(tmp_path, sizes=(30, 90))
    points = result.data["points"]
    assert [p["n_queries"] for p in points] == [30, 90]
    for p in points:
        assert p["mb_per_s"] > 0 and p["peak_rss_mb"] > 10 and p["cpu_s"] > 0
        assert f"({p['n_queries']} queries, depth 20)" in p["stdout"]  # the CLI's own report
    assert set(result.data["steps_s"]) == {
        "witness",
        "rows",
        "tables",
        "hash",
        "insert",
        "read",
        "json",
        "python_columns",
    }
    assert "Where the time goes" in result.text()
    series = report.growth_series([result])
    assert [p["n_queries"] for p in series[0]["points"]] == [30, 90]
    svg = report.growth_svg(series)
    assert svg.startswith("<svg") and svg.count("<circle") == 4  # 2 sizes x 2 panels


def test_native_run_generator_is_deterministic_and_valid(tmp_path: Path) -> None:
    from rageval_core.errors import ProblemLog
    from rageval_core.formats import native

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    native_scale.write_native_run(a, 25, seed=4)
    native_scale.write_native_run(b, 25, seed=4)
    assert a.read_bytes() == b.read_bytes()
    log = ProblemLog()
    queries = list(native.read(a, None, log).queries)
    assert log.problems == [] and len(queries) == 25
    assert all(q.retrieved is not None and len(q.retrieved) == 20 for q in queries)
    texts = [c.text or "" for q in queries for c in q.retrieved or ()]
    assert 450 <= sum(map(len, texts)) / len(texts) <= 500
    assert all(q.evidence and q.latency_ms and q.tokens and q.relevance for q in queries)


def test_recompute_scenario_times_the_real_evaluate(tmp_path: Path) -> None:
    n, depth = 400, 20
    result = recompute.run(n_queries=n, depth=depth, repeats=2, slow_repeats=1)
    data = result.data
    timings = data["timings"]
    assert set(timings) == {
        "prepare_coverage",
        "first_evaluate",
        "new_k_threshold",
        "evidence_metrics",
        "evidence_labels",
        "labels_and_ranking",
        "sweep_cold",
        "sweep_warm",
    }
    assert isinstance(data["within_target"], bool) and data["target_s"] == 0.05
    # The report came from the synthetic tensor: EvidenceRecall@k by brute force over it.
    k, threshold = data["report_settings"]["k"], data["report_settings"]["threshold"]
    scores, n_spans, _, _ = recompute.make_tensor(n, depth)
    with np.errstate(invalid="ignore"):
        best = np.fmax.reduce(scores[:, :k, :], axis=1)  # (n, spans), NaN where no span
        covered = (best >= np.float32(threshold)).sum()
    expected = covered / n_spans.sum()
    assert data["report_metrics"][f"EvidenceRecall@{k}"] == pytest.approx(expected, abs=1e-12)
    assert "50 ms" in result.text()


def test_recompute_growth_reports_each_size() -> None:
    result = recompute.run(n_queries=300, repeats=1, slow_repeats=1, growth_sizes=(200, 600))
    points = result.data["growth"]
    assert [p["n_queries"] for p in points] == [200, 600]
    # memory holds at least the score tensor itself (n x 20 x 3 float32)
    assert all(p["peak_mb"] >= p["n_queries"] * 20 * 3 * 4 / 1e6 for p in points)
    assert all(p["seconds"] > 0 and p["sweep_s"] > 0 and p["new_setting_s"] > 0 for p in points)
    rows = report.growth_table(report.growth_series([result])).rows
    assert [row[1] for row in rows] == ["200", "600"] and rows[0][4] == "" and rows[1][4] != ""
    assert "Growth:" in result.text()


def test_matching_scenario_reports_the_ratio() -> None:
    result = matching_speed.run(n_queries=3, difflib_sample=50, repeats=1)
    data = result.data
    assert {"cpus", "target_ratio", "ratio_all_cores", "source", "subsets"} <= set(data)
    assert data["target_ratio"] == 20.0
    assert math.isfinite(data["ratio_all_cores"]) and data["ratio_all_cores"] > 0
    if data["source"] == "functions":
        mix = data["subsets"]["retrieval mix (all pairs)"]
        assert mix["pairs"] == 3 * 20 * 3
        assert mix["difflib_s_per_pair"] > 0 and mix["partial_all_cores_s_per_pair"] > 0


@pytest.mark.usefixtures("smallest")
def test_main_quick_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--quick", "--only", "recompute", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    for part in (
        "# Benchmarks",
        "## Summary",
        "## Machine",
        "make bench",
        "2. Recompute",
        "numpy / duckdb",
        "load average",
    ):
        assert part in page
    assert "| CPU" in page and "cores" in page
    # the quick sizes run recompute at two sizes: the growth section and its plot are written
    assert "## Growth with the number of queries" in page
    # the limits table: recompute's floor (one pass over the kept scores) and how far from it
    assert "## Where the time goes, and the limit on this machine" in page
    assert "one numpy pass over the 12,000 kept scores" in page  # 200 queries x 20 ranks x 3 spans
    assert "memory bandwidth" in page
    svg = out.with_name("benchmarks_growth.svg").read_text(encoding="utf-8")
    assert "benchmarks_growth.svg" in page and svg.count("<circle") == 4
    assert "## Summary" in capsys.readouterr().out


def test_main_rejects_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--quick", "--only", "nope"])
    assert "unknown scenario" in capsys.readouterr().err


@pytest.mark.usefixtures("smallest")
def test_a_failing_scenario_is_reported_and_the_others_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import bench.__main__ as bench_main

    real = bench_main._run_one

    def run_one(name: str, *args: object) -> object:
        if name == "matching":
            raise RuntimeError("the disk went away")
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(bench_main, "_run_one", run_one)
    out = tmp_path / "benchmarks.md"
    assert main(["--quick", "--only", "matching,recompute", "--out", str(out)]) == 1
    page = out.read_text(encoding="utf-8")
    assert "## matching: FAILED" in page and "RuntimeError: the disk went away" in page
    assert "2. Recompute" in page  # the scenario after it still ran and was written
    assert "FAILED: matching: FAILED" in capsys.readouterr().err


@pytest.mark.usefixtures("smallest")
def test_update_replaces_one_section_and_its_summary_rows(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--quick", "--only", "recompute,matching", "--out", str(out)]) == 0
    before = out.read_text(encoding="utf-8")
    assert main(["--quick", "--only", "recompute", "--out", str(out), "--update"]) == 0
    after = out.read_text(encoding="utf-8")
    assert after.count("## 2. Recompute") == 1 and after.count("## 3. Evidence matching") == 1
    assert "re-run on its own (`python -m bench --update`)" in after
    # matching's section and the Machine table are the first run's, untouched
    section = before[before.index("## 3. Evidence matching") :]
    assert section.split("\n## ")[0] in after
    assert before[before.index("## Machine") : before.index("## Where")] in after
    row = next(
        line for line in after.splitlines() if line.startswith("| new (k, threshold) on 200 ")
    )
    assert row.rstrip("| ").endswith(("target 50 ms: met", "target 50 ms: MISSED"))
    # the same row, re-measured: its cells, not their widths (timings print with varying digits)
    old = next(line for line in before.splitlines() if line.startswith("| new (k, threshold)"))
    assert row.count("|") == old.count("|") and row.split("|")[1] == old.split("|")[1]


def test_update_adds_a_summary_row_the_page_lacks() -> None:
    """A figure new since the page was written (the CLI process rows) joins the summary after
    the scenario's row before it; rows already there are replaced in place."""
    from bench.common import ScenarioResult, Table

    data = {
        "ratios": {"direct_vs_pytrec_eval": 0.2, "store_vs_pytrec_eval": 1.1},
        "depth": 100,
        "n_queries": 10,
        "processes": {
            "cli": {"seconds": [0.4], "peak_mb": 50.0},
            "pytrec_eval_script": {"seconds": [1.0], "peak_mb": 100.0},
        },
        "help_s": 0.05,
    }
    data["ratios"]["queries_vs_pytrec_eval"] = 2.0
    result = ScenarioResult("trec", "1. TREC", "setup", (("", Table(("a",), (("x",),))),), (), data)
    rows = report.headline([result]).rows
    first, store, *_ = rows
    page = (
        "# Benchmarks\n\n## Summary\n\n| comparison | result | meaning |\n|---|---:|---|\n"
        f"| {first[0]} | 9x | old |\n| {store[0]} | 9x | old |\n"
        f"| {rows[2][0]} | 9x | old |\n| other scenario | 1 | kept |\n\n## 1. TREC\n\nold text\n"
    )
    facts = {"date": "today", "load_before": "1", "load_after": "1"}
    after = report.update_page(page, [result], facts).splitlines()
    summary = after[: after.index("## 1. TREC")]
    table = [line for line in summary if line.startswith("| ") and "comparison" not in line]
    assert [line.split("|")[1].strip() for line in table] == [
        *(r[0] for r in rows),
        "other scenario",
    ]
    assert all(" 9x " not in line for line in table)
    assert "old text" not in "\n".join(after)
