"""How long a slider move takes on each dashboard page, on a 10,000-query run.

The run is the sample hybrid_rerank run's 360 queries repeated under new ids up to N queries (same
texts, evidence, latency and tokens), imported and scored like `make run` does. Each page is run in
Streamlit's AppTest (the server-side script run that every slider move triggers: the core's work,
the figures and the tables); the browser's own drawing is not included. Prints medians in ms.

    .venv/bin/python -m bench.dashboard_speed [--queries 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = ["overview.py", "queries.py", "threshold.py", "latency.py"]


def write_big_run(path: Path, n_queries: int) -> None:
    lines = (REPO / "sample_runs" / "hybrid_rerank.jsonl").read_text().splitlines()
    header, queries = lines[0], [json.loads(x) for x in lines[1:]]
    head = json.loads(header)
    head["rageval_run"]["name"] = f"big{n_queries}"
    with path.open("w") as out:
        out.write(json.dumps(head) + "\n")
        for i in range(n_queries):
            q = dict(queries[i % len(queries)])
            q["query_id"] = f"{q['query_id']}-{i // len(queries)}"
            out.write(json.dumps(q) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    from streamlit.testing.v1 import AppTest

    from rageval_core.importing import import_paths
    from rageval_core.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        run_file, db = Path(tmp) / "big.jsonl", Path(tmp) / "big.duckdb"
        write_big_run(run_file, args.queries)
        t = time.perf_counter()
        with Store(db) as store:
            out = import_paths(store, [run_file])
        print(
            f"import + scoring of {args.queries} queries: {time.perf_counter() - t:.1f} s "
            f"({out.scorings[0].n_pairs} pairs)"
        )
        os.environ["RAGEVAL_DB"] = str(db)
        print(f"{'page':<14}{'first render ms':>16}{'threshold move ms':>19}{'k move ms':>11}")
        for page in PAGES:
            at = AppTest.from_file(str(REPO / "rageval_dashboard" / "app.py"), default_timeout=300)
            at.run()
            at.switch_page(f"app_pages/{page}")
            t = time.perf_counter()
            at.run()
            first = (time.perf_counter() - t) * 1000
            assert not at.exception, [e.value for e in at.exception]
            moves: dict[str, list[float]] = {"threshold": [], "k": []}
            for i in range(args.repeats):
                for key, value in (("threshold", round(0.5 + 0.03 * (i + 1), 2)), ("k", 3 + i)):
                    at.sidebar.slider(key=key).set_value(value)
                    t = time.perf_counter()
                    at.run()
                    moves[key].append((time.perf_counter() - t) * 1000)
                    assert not at.exception, [e.value for e in at.exception]
            print(
                f"{page:<14}{first:>16.0f}{statistics.median(moves['threshold']):>19.0f}"
                f"{statistics.median(moves['k']):>11.0f}"
            )
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
