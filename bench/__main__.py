"""python -m bench: run the scenarios, print their tables and write docs/benchmarks.md."""

from __future__ import annotations

import argparse
import tempfile
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import (
    bench_semantic,
    browser_speed,
    compare_speed,
    diagnosis_speed,
    distributed,
    judge_pacing,
    matching_speed,
    native_scale,
    pair_scoring,
    recompute,
    report,
    trec_e2e,
)
from bench import dashboard_scale
from bench.common import ScenarioResult

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SCENARIOS = (
    "trec",
    "recompute",
    "matching",
    "native_scale",
    "pair_scoring",
    "distributed",
    "dashboard_scale",
    "semantic",
    "compare",
    "browser",
    "diagnosis",
    "judge_pacing",
)
GROWTH_SVG = "benchmarks_growth.svg"

#: full sizes (the brief's) and --quick sizes (seconds, for the smoke test and a first look)
FULL: dict[str, dict[str, Any]] = {
    "trec": {"n_queries": 10_000, "depth": 100},
    "recompute": {
        "n_queries": 100_000,
        "repeats": 15,
        "slow_repeats": 3,
        "growth_sizes": (10_000, 100_000),
    },
    "matching": {"n_queries": 334, "difflib_sample": 3000, "repeats": 3},
    "native_scale": {"sizes": (10_000, 100_000)},
    "pair_scoring": {"n_queries": 10_000},
    "distributed": {"n_queries": 5_000, "repeats": 3},
    "dashboard_scale": {"n_queries": 10_000},
    "semantic": {"n_queries": 10_000, "n_embed": 100_000},
    "compare": {"n_queries": 10_000, "repeats": 3},
    "browser": {"n_queries": 10_000, "repeats": 5},
    "diagnosis": {"n_queries": 100_000, "repeats": 5},
    "judge_pacing": {"n_queries": 120, "latency_s": 0.5, "concurrency": 4},
}
#: added by --scale (make bench passes it): the issue's large sizes, minutes each
SCALE: dict[str, dict[str, Any]] = {
    "trec": {"scale_queries": 100_000},
    "recompute": {"growth_sizes": (10_000, 100_000, 1_000_000)},
    "native_scale": {"sizes": (10_000, 100_000, 1_000_000)},
    "pair_scoring": {"n_queries": 100_000},
    "dashboard_scale": {"n_queries": 100_000},
}
QUICK: dict[str, dict[str, Any]] = {
    "trec": {"n_queries": 200, "depth": 100},
    "recompute": {
        "n_queries": 2_000,
        "repeats": 5,
        "slow_repeats": 3,
        "growth_sizes": (500, 2_000),
    },
    "matching": {"n_queries": 10, "difflib_sample": 200, "repeats": 2},
    "native_scale": {"sizes": (500, 2_000)},
    "pair_scoring": {"n_queries": 300, "subset_queries": 100, "difflib_sample": 200},
    "distributed": {"n_queries": 300, "repeats": 1},
    "dashboard_scale": {"n_queries": 500, "moves": 2, "baseline": False},
    "semantic": {"n_queries": 300, "n_embed": 2_000},
    "compare": {"n_queries": 200, "repeats": 1},
    "browser": {"n_queries": 100, "repeats": 1},
    "diagnosis": {"n_queries": 2_000, "repeats": 1},
    "judge_pacing": {"n_queries": 12, "latency_s": 0.1, "concurrency": 4},
}


def run_scenarios(
    names: Sequence[str],
    quick: bool,
    workdir: Path,
    with_ranx: bool = True,
    progress: Callable[[str], None] = print,
    scale: bool = False,
) -> list[ScenarioResult]:
    """Run the named scenarios at full or quick sizes (plus --scale's); progress(text) after each."""
    sizes = {name: dict(values) for name, values in (QUICK if quick else FULL).items()}
    if scale:
        for name, values in SCALE.items():
            sizes[name].update(values)
    results = []
    for name in names:
        started = time.perf_counter()
        try:
            result = _run_one(name, sizes, workdir, with_ranx)
        except Exception as e:  # one scenario's failure must not lose the others' results
            trace = traceback.format_exc().strip().splitlines()
            result = ScenarioResult(
                key=f"{name}:failed",
                title=f"{name}: FAILED",
                setup=f"{type(e).__name__}: {e}",
                tables=(),
                notes=tuple(trace[-6:]),
                data={"failed": True},
            )
        results.append(result)
        progress(f"\n{result.text()}\n({name}: {time.perf_counter() - started:.0f} s)")
    return results


def _run_one(
    name: str, sizes: dict[str, dict[str, Any]], workdir: Path, with_ranx: bool
) -> ScenarioResult:
    """One scenario at its sizes."""
    if name == "trec":
        return trec_e2e.run(workdir / "trec", with_ranx=with_ranx, **sizes["trec"])
    if name == "recompute":
        return recompute.run(**sizes["recompute"])
    if name == "matching":
        return matching_speed.run(**sizes["matching"])
    if name == "native_scale":
        return native_scale.run(workdir / "native", **sizes["native_scale"])
    if name == "pair_scoring":  # workdir / "large": bench/large_run.py's stores, shared
        return pair_scoring.run(workdir / "large", **sizes["pair_scoring"])
    if name == "dashboard_scale":  # a fresh `streamlit run` + chromium, and AppTest
        return dashboard_scale.run(workdir / "dashboard", **sizes["dashboard_scale"])
    if name == "semantic":  # workdir / "large": bench/large_run.py's stores, shared
        return bench_semantic.run(workdir, **sizes["semantic"])
    if name == "compare":  # core timings and AppTest runs of the Compare page
        return compare_speed.run(workdir / "compare", **sizes["compare"])
    if name == "browser":  # a fresh `streamlit run` + chromium, every page
        return browser_speed.run(workdir / "browser", **sizes["browser"])
    if name == "diagnosis":  # rageval_core.diagnosis from kept scores
        return diagnosis_speed.run(**sizes["diagnosis"])
    if name == "judge_pacing":  # a fake judge on 127.0.0.1, with and without 429s
        return judge_pacing.run(workdir / "judge_pacing", **sizes["judge_pacing"])
    if name == "distributed":  # needs pyspark (the bench extra) and Java 17+
        return distributed.run(workdir / "distributed", **sizes["distributed"])
    raise ValueError(f"unknown scenario {name!r} (expected one of {', '.join(SCENARIOS)})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes (seconds); writes no page unless --out is given",
    )
    parser.add_argument(
        "--only",
        default=",".join(SCENARIOS),
        help=f"comma-separated scenarios to run (default: {','.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"page to write (default: {DOCS.relative_to(DOCS.parents[1])} for a full run)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only, write no page")
    parser.add_argument(
        "--no-ranx", action="store_true", help="leave ranx out (its JIT takes a while)"
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="add the large sizes: TREC at 100,000 queries and a native import of "
        "1,000,000 queries (about 11 GB of JSON written to the temp folder; "
        "several minutes)",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="re-run the --only scenarios and replace their sections and summary "
        "rows in the existing page (e.g. one disturbed by other work)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)} (expected {', '.join(SCENARIOS)})")

    facts = report.machine_facts()
    print(
        f"rageval bench{' (--quick)' if args.quick else ''}{' (--scale)' if args.scale else ''}: {facts['cpu']}, {facts['cores']} cores, "
        f"Python {facts['python']}, load {facts['load_before']}",
        flush=True,
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rageval-bench-") as tmp:
        results = run_scenarios(
            names,
            args.quick,
            Path(tmp),
            with_ranx=not args.no_ranx,
            progress=lambda text: print(text, flush=True),
            scale=args.scale,
        )
    elapsed = time.perf_counter() - started
    facts["load_after"] = report.load_average()
    print("\n## Summary\n\n" + report.headline(results).markdown())
    print(
        f"\nwhole run: {elapsed:.0f} s; load average before {facts['load_before']}, "
        f"after {facts['load_after']}"
    )

    out = args.out if args.out is not None else (None if args.quick else DOCS)
    if args.update and out is not None and not args.no_write:
        ok = [r for r in results if not r.data.get("failed")]
        out.write_text(
            report.update_page(out.read_text(encoding="utf-8"), ok, facts), encoding="utf-8"
        )
        print(f"updated {out}")
    elif out is not None and not args.no_write:
        out.parent.mkdir(parents=True, exist_ok=True)
        series = report.growth_series(results)
        growth_image = None
        if series:
            svg = out.with_name(GROWTH_SVG)
            svg.write_text(report.growth_svg(series), encoding="utf-8")
            growth_image = svg.name
            print(f"wrote {svg}")
        out.write_text(
            report.render(results, facts, elapsed, args.quick, growth_image=growth_image),
            encoding="utf-8",
        )
        print(f"wrote {out}")
    failed = [r.title for r in results if r.data.get("failed")]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
