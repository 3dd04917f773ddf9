"""A label click at scale (issue 31): the store write, the grades signature every labelled
result is keyed by, and the re-evaluation that follows, on a 10,000-query run.

    python -m bench.label_speed [--queries N] [--clicks N]

Prints milliseconds per click: (write + signature, re-evaluation). The browser's round trip
(Streamlit's rerun, the page drawn again) comes on top; bench/dashboard_scale.py measures that
for a slider move.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.dashboard_scale import import_run
from bench.dashboard_speed import write_big_run


def measure(workdir: Path, n_queries: int, clicks: int) -> list[tuple[float, float]]:
    from rageval_core import annotate
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.evaluation.report import Settings
    from rageval_core.rundata import load_run_data
    from rageval_core.store import Store

    #: the people's grades count (after the imported qrels): a label moves the metrics
    LABELLED = Settings(labels="imported,people")  # noqa: N806
    run_file, db = workdir / "labels.jsonl", workdir / "labels.duckdb"
    write_big_run(run_file, n_queries)
    import_run(run_file, db)
    out = []
    with Store(db) as store:
        data = load_run_data(store, store.runs()[0].run_id)
        evaluate(data, None, store=store, settings=LABELLED)  # the page's first render
        for i in range(clicks):
            started = time.perf_counter()
            annotate.set_grade(store, str(data.query_ids[i]), f"doc{i}", 2, annotator="bench")
            annotate.grades_signature(store)
            written = time.perf_counter()
            evaluate(data, None, store=store, settings=LABELLED)
            out.append((1000 * (written - started), 1000 * (time.perf_counter() - written)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--clicks", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for write_ms, evaluate_ms in measure(Path(tmp), args.queries, args.clicks):
            print(f"write + signature {write_ms:.1f} ms, re-evaluation {evaluate_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
