"""How long the Compare page takes at N queries x 3 runs: the core's parts and the page's run.

The three sample runs are repeated under new ids up to N queries each (as bench.dashboard_speed
does with one) and imported into a scratch store. Core: the deltas-first comparison
(resample=False), the full one (bootstrap and randomisation tests over every metric), and what a k
move recomputes (the metric tests; latency and cost are cached apart), from scratch and through
a CompareMemo as the dashboard does (only the @k metrics tested again). Page: Streamlit's AppTest
runs of the Compare page (first render, then k moves), each the whole script: deltas, then the
tests. Prints medians in ms.

    .venv/bin/python -m bench.compare_speed [--queries 10000] [--repeats 3] [--db FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RUNS = ("bm25", "hybrid_rerank", "tfidf_char")


def write_runs(
    folder: Path, n_queries: int, names: tuple[str, ...] = RUNS, chunks: int | None = None
) -> list[Path]:
    """The sample runs `names` repeated under new ids up to n_queries each; chunks: every
    query's list padded to that many chunks with the next sample queries' (lower scores, after
    its own)."""
    out = []
    for name in names:
        lines = (REPO / "sample_runs" / f"{name}.jsonl").read_text().splitlines()
        head, queries = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
        head["rageval_run"]["name"] = f"{name}{n_queries}"
        path = folder / f"{name}.jsonl"
        with path.open("w") as f:
            f.write(json.dumps(head) + "\n")
            for i in range(n_queries):
                q = dict(queries[i % len(queries)])
                if chunks is not None:
                    q["retrieved"] = _padded(queries, i, chunks)
                q["query_id"] = f"{q['query_id']}-{i // len(queries)}"
                f.write(json.dumps(q) + "\n")
        out.append(path)
    return out


def _padded(queries: list[dict[str, Any]], i: int, chunks: int) -> list[dict[str, Any]]:
    """Query i's chunks, then the next queries' chunks not in the list yet, up to chunks."""
    out = list(queries[i % len(queries)]["retrieved"])
    seen = {c["doc_id"] for c in out}
    low = min((c["score"] for c in out), default=1.0)
    step = 1
    while len(out) < chunks:
        for c in queries[(i + step) % len(queries)]["retrieved"]:
            if len(out) < chunks and c["doc_id"] not in seen:
                low *= 0.99
                out.append({**c, "score": round(low, 6)})
                seen.add(c["doc_id"])
        step += 1
    return out


def _ms(fn: object) -> float:
    t = time.perf_counter()
    fn()  # type: ignore[operator]
    return (time.perf_counter() - t) * 1000


def core_timings(db: Path, repeats: int) -> dict[str, float]:
    from rageval_core.compare import compare, compare_ops
    from rageval_core.compare.memo import CompareMemo
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.evaluation.report import Settings
    from rageval_core.rundata import load_run_data
    from rageval_core.store import Store

    with Store(db) as store:
        runs = [load_run_data(store, r.run_id) for r in store.runs()]
        out = {
            "deltas first (resample=False)": _ms(
                lambda: (
                    compare(runs, store=store, resample=False, with_ops=False),
                    compare_ops(runs, store=store, resample=False),
                )
            ),
            "latency and cost with intervals": _ms(lambda: compare_ops(runs, store=store)),
            "full metric tests": _ms(lambda: compare(runs, store=store, with_ops=False)),
        }
        quick, full = [], []
        for i in range(repeats):
            k = 3 + i
            quick.append(
                _ms(lambda k=k: compare(runs, store=store, k=k, resample=False, with_ops=False))
            )
            full.append(_ms(lambda k=k: compare(runs, store=store, k=k, with_ops=False)))
        out["k move: deltas"] = statistics.median(quick)
        out["k move: full tests"] = statistics.median(full)
        # the dashboard's path: each run's report at the new k is cached by the page, the
        # memo holds the tests and draws of the k before
        memo = CompareMemo()
        metrics = compare(runs, store=store, memo=memo, with_ops=False).metrics
        quick, full = [], []
        for i in range(repeats):
            k = 9 - i
            moved = [m.replace("@10", f"@{k}") for m in metrics]
            reports = [evaluate(r, moved, store=store, settings=Settings(k=k)) for r in runs]
            kw: dict[str, Any] = {"store": store, "memo": memo, "with_ops": False, "k": k}
            quick.append(
                _ms(lambda kw=kw, r=reports: compare(runs, reports=r, resample=False, **kw))
            )
            full.append(_ms(lambda kw=kw, r=reports: compare(runs, reports=r, **kw)))
        out["k move through the memo: deltas"] = statistics.median(quick)
        out["k move through the memo: full tests"] = statistics.median(full)
    return out


def page_timings(db: Path, repeats: int) -> dict[str, float]:
    from streamlit.testing.v1 import AppTest

    os.environ["RAGEVAL_DB"] = str(db)
    at = AppTest.from_file(str(REPO / "rageval_dashboard" / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("app_pages/compare.py")
    first = _ms(at.run)
    assert not at.exception, [e.value for e in at.exception]
    moves = []
    for i in range(repeats):
        at.sidebar.slider(key="k").set_value(3 + i)
        moves.append(_ms(at.run))
        assert not at.exception, [e.value for e in at.exception]
    return {
        "page first render (whole run)": first,
        "page k move (whole run)": statistics.median(moves),
    }


def run(workdir: Path, n_queries: int = 10_000, repeats: int = 3, page: bool = True) -> Any:
    """The timings as a bench scenario (python -m bench --only compare)."""
    from bench.common import ScenarioResult, Table, fmt_seconds
    from rageval_core.importing import import_paths
    from rageval_core.store import Store

    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "compare.duckdb"
    db.unlink(missing_ok=True)
    files = write_runs(workdir, n_queries)
    with Store(db) as store:
        import_paths(store, files)
    found = core_timings(db, repeats)
    if page:
        found.update(page_timings(db, repeats))
    load = os.getloadavg()
    rows = tuple((name, fmt_seconds(ms / 1000)) for name, ms in found.items())
    return ScenarioResult(
        key="compare",
        title=f"Compare, {n_queries:,} queries x 3 runs (core and AppTest)",
        setup=(
            f"The three sample runs repeated up to {n_queries:,} queries each, in one store. "
            "Core: the deltas-first comparison (resample=False), latency and cost with their "
            "intervals, the full metric tests, and what a k move recomputes (medians of "
            f"{repeats}). Page: Streamlit's AppTest runs of the Compare page, each the whole "
            "script (a large comparison's tests run in a thread: not in these figures)."
        ),
        tables=(("Wall time:", Table(("step", "time"), rows)),),
        notes=(f"Load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 shared cores).",),
        data={"n_queries": n_queries, "ms": found},
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--db", type=Path, help="a store already holding the three runs")
    ap.add_argument("--no-page", action="store_true", help="core timings only")
    args = ap.parse_args(argv)
    from rageval_core.importing import import_paths
    from rageval_core.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            db = Path(tmp) / "compare.duckdb"
            files = write_runs(Path(tmp), args.queries)
            with Store(db) as store:
                import_paths(store, files)
        found = core_timings(db, args.repeats)
        if not args.no_page:
            found.update(page_timings(db, args.repeats))
    print(f"Compare, {args.queries:,} queries x 3 runs (ms)")
    for name, ms in found.items():
        print(f"  {name:<36}{ms:>10.0f}")
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
