"""A large native run imported into a file store once per bench run, shared by the scenarios.

build_large_store() writes the run with bench.native_scale.write_native_run (deterministic for a
seed: 20 chunks of about 500 characters per query, each gold span an 80-character cut of one of
the query's relevant chunks), imports it with `rageval import FILE --no-score` in a child process
and, when asked, scores its evidence pairs. A marker file next to the store records what was
built, so a second call with the same size, seed and spans in the same workdir reuses it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.native_scale import measure_import, write_native_run

#: the run's name, from the header record write_native_run writes
RUN_NAME = "scale"
#: gold spans per query by default: the issue's "20 chunks x 3 gold spans"
SPANS = 3


def store_paths(
    workdir: Path, n_queries: int, seed: int = 0, spans: int | None = SPANS
) -> tuple[Path, Path]:
    """(store file, marker file) of one (size, seed, spans) in workdir."""
    stem = f"large_{n_queries}_seed{seed}_spans{spans if spans is not None else 'mixed'}"
    return workdir / f"{stem}.duckdb", workdir / f"{stem}.json"


def read_marker(
    workdir: Path, n_queries: int, seed: int = 0, spans: int | None = SPANS
) -> dict[str, Any] | None:
    """What build_large_store recorded for this (size, seed, spans): import figures, scored or not."""
    db, marker = store_paths(workdir, n_queries, seed, spans)
    if not (db.exists() and marker.exists()):
        return None
    return json.loads(marker.read_text(encoding="utf-8"))


def build_large_store(
    workdir: Path,
    n_queries: int,
    seed: int = 0,
    score: bool = True,
    *,
    spans: int | None = SPANS,
    keep_jsonl: bool = False,
) -> tuple[Path, str]:
    """(store path, run name) of a native run of n_queries queries, imported (and scored) once.

    score: also score the run's pairs with the default scorer (`partial`, all cores), as
    `rageval import` without --no-score would; skipped when already done. spans: gold spans per
    query (None: 1-3 at random, as native_scale's import scenario). The JSONL file is deleted
    after the import unless keep_jsonl (it is 11.4 KB per query).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    db, marker = store_paths(workdir, n_queries, seed, spans)
    facts = read_marker(workdir, n_queries, seed, spans)
    if facts is None:
        run_file = db.with_suffix(".jsonl")
        for stale in (db, db.with_name(db.name + ".wal"), marker):
            stale.unlink(missing_ok=True)
        size = write_native_run(run_file, n_queries, seed=seed, spans=spans)
        result = measure_import(run_file, db)
        facts = {
            "n_queries": n_queries,
            "seed": seed,
            "spans": spans,
            "run_name": RUN_NAME,
            "jsonl_bytes": size,
            "import_s": result["seconds"],
            "import_peak_rss_mb": result["peak_rss_mb"],
            "scored": False,
        }
        if not keep_jsonl:
            run_file.unlink(missing_ok=True)
        _write_marker(marker, facts)
    if score and not facts["scored"]:
        from rageval_core.store import Store
        from rageval_core.store.scores import ensure_scored

        with Store(db) as store:
            scoring = ensure_scored(store, RUN_NAME)
        facts = {**facts, "scored": True, "score_s": scoring.seconds, "n_pairs": scoring.n_pairs}
        _write_marker(marker, facts)
    return db, RUN_NAME


def _write_marker(marker: Path, facts: dict[str, Any]) -> None:
    # written last and atomically: a marker only ever describes a finished store
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(facts, indent=2), encoding="utf-8")
    tmp.replace(marker)
