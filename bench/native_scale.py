"""Scenario 4: a large native JSONL run imported by the real CLI (`rageval import`), at growing sizes.

The run is generated here, deterministic for a seed: each query has 20 chunks of about 500
characters (random words, the score, the doc id), 1-3 relevant ids, 1-3 gold evidence spans,
latency for 3 stages and 2 token counts; about 11.4 KB of JSON per query. Each size is imported
into a new file-backed store by `python -m rageval_core.cli import FILE --no-score` in a child
process (with its progress bar): wall time, CPU time, MB/s of JSON, the child's peak RSS
(VmHWM) and the machine's load average are recorded. Scoring the evidence is a separate step,
left out here. A file this size takes the native reader's DuckDB route
(rageval_core.formats.native_duckdb); profile_import times each of its steps on its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ScenarioResult, Table, fmt_seconds

#: the issue's figures: at least this many MB of JSON per second, at most this much memory
TARGET_MB_S = 50.0
TARGET_PEAK_MB = 2048.0

_WORD_TEXT = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one all we their been has when who will more "
    "no if out so said what up its about into than them can only other new some could time these "
    "two may then do first any my now such like our over man me even most made after also did "
    "many before must through back years where much your way well down should because each just "
    "those people how too little state good very make world still see own men work long here get "
    "both between life being under never day same another know while last might us great old "
    "year off come since against go came right used take three tax rate income relief pension "
    "allowance threshold return filing deduction credit estate trust dividend interest capital"
)


def write_native_run(
    path: Path,
    n_queries: int,
    n_chunks: int = 20,
    text_chars: int = 500,
    seed: int = 0,
    spans: int | None = None,
) -> int:
    """Write a deterministic native JSONL run (a header record, then n_queries records); its bytes.

    spans: gold spans (and relevant ids) per query; None = 1-3 at random.
    """
    rng = np.random.default_rng(seed)
    words = rng.choice(np.array(_WORD_TEXT.split(), dtype=object), size=1_000_000)
    corpus = " ".join(words.tolist())[:4_000_000]
    span = len(corpus) - text_chars - 1
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", buffering=1 << 22) as fh:
        fh.write(
            json.dumps({"rageval_run": {"name": "scale", "settings": {"top_k": n_chunks}}}) + "\n"
        )
        block = 10_000
        for lo in range(0, n_queries, block):
            m = min(block, n_queries - lo)
            offsets = rng.integers(0, span, size=(m, n_chunks)).tolist()
            docs = rng.integers(0, 10_000_000, size=(m, n_chunks)).tolist()
            scores = np.round(np.sort(rng.random((m, n_chunks)), axis=1)[:, ::-1], 4).tolist()
            query_at = rng.integers(0, span, size=m).tolist()
            latency = np.round(rng.gamma(2.0, 20.0, size=(m, 3)), 1).tolist()
            tokens = rng.integers(50, 4000, size=(m, 2)).tolist()
            n_gold = rng.integers(1, 4, size=m).tolist()
            if spans is not None:  # drawn anyway: the rest of the stream stays the same
                n_gold = [spans] * m
            out = []
            for i in range(m):
                # the corpus is lowercase words and spaces: no JSON escaping needed; %-templates
                # keep JSON's braces readable
                chunks = ",".join(
                    '{"doc_id":"d%07d","text":"%s","score":%r}'  # noqa: UP031
                    % (docs[i][r], corpus[offsets[i][r] : offsets[i][r] + text_chars], scores[i][r])
                    for r in range(n_chunks)
                )
                gold = range(n_gold[i])
                relevant = ",".join(f'"d{docs[i][r]:07d}"' for r in gold)
                # gold spans are taken from the relevant chunks' texts
                evidence = ",".join(
                    f'"{corpus[offsets[i][r] + 40 : offsets[i][r] + 120]}"' for r in gold
                )
                out.append(
                    '{"query_id":"q%07d","query":"%s","retrieved":[%s],"relevant_ids":[%s],'  # noqa: UP031
                    '"evidence":[%s],"latency_ms":{"retrieve":%r,"rerank":%r,"generate":%r},'
                    '"tokens":{"prompt":%d,"completion":%d}}\n'
                    % (
                        lo + i,
                        corpus[query_at[i] : query_at[i] + 60],
                        chunks,
                        relevant,
                        evidence,
                        *latency[i],
                        *tokens[i],
                    )
                )
            fh.write("".join(out))
    return path.stat().st_size


def run(
    workdir: Path,
    sizes: tuple[int, ...] = (10_000, 100_000),
    seed: int = 0,
    keep_files: bool = False,
) -> ScenarioResult:
    """Generate and import each size; one import per size (the large ones take minutes)."""
    free_gb = shutil.disk_usage(workdir if workdir.exists() else workdir.parent).free / 1e9
    rows = []
    points: list[dict[str, Any]] = []
    notes: list[str] = []
    steps: dict[str, tuple[float, float]] = {}
    steps_size = 0
    for n in sizes:
        need_gb = n * 11_500 * 1.6 / 1e9  # the file plus the store (zstd, about 0.3x) and slack
        if need_gb > free_gb * 0.9:
            notes.append(
                f"{n:,} queries skipped: about {need_gb:.0f} GB needed, "
                f"{free_gb:.0f} GB free on the bench's disk."
            )
            continue
        run_file = workdir / f"native_{n}.jsonl"
        started = time.perf_counter()
        size = write_native_run(run_file, n, seed=seed)
        generated_s = time.perf_counter() - started
        db = workdir / f"store_{n}.duckdb"
        db.unlink(missing_ok=True)
        result = measure_import(run_file, db)
        if not steps:
            steps = profile_import(run_file, workdir)
            steps_size = size
        mb = size / 1e6
        point = {
            "n_queries": n,
            "bytes": size,
            "generate_s": generated_s,
            **result,
            "mb_per_s": mb / result["seconds"],
            "store_bytes": db.stat().st_size,
        }
        points.append(point)
        rows.append(
            (
                f"{n:,}",
                f"{mb:,.0f} MB",
                fmt_seconds(result["seconds"]),
                f"{result['cpu_s']:.1f} s",
                f"{point['mb_per_s']:.1f}",
                f"{result['peak_rss_mb']:,.0f} MB",
                f"{point['store_bytes'] / 1e6:,.0f} MB",
                "yes" if result["progress_shown"] else "no",
                f"{result['load_before']:.2f} / {result['load_after']:.2f}",
            )
        )
        if not keep_files:
            run_file.unlink(missing_ok=True)
            db.unlink(missing_ok=True)
            db.with_name(db.name + ".wal").unlink(missing_ok=True)
        free_gb = shutil.disk_usage(workdir).free / 1e9
    table = Table(
        (
            "queries",
            "JSON",
            "import (wall)",
            "CPU (all threads)",
            "MB/s",
            "peak RSS",
            "store file",
            "progress bar",
            "load average (before / after)",
        ),
        tuple(rows),
    )
    tables: list[tuple[str, Table]] = [("Import of one run per size:", table)]
    if steps:
        mb = steps_size / 1e6
        step_rows = tuple(
            (
                name,
                _STEP_WHAT[name],
                fmt_seconds(wall),
                fmt_seconds(cpu),
                f"{mb / wall:,.0f}",
                f"{mb / cpu:,.0f}",
            )
            for name, (wall, cpu) in steps.items()
        )
        tables.append(
            (
                f"Where the time goes: each step alone on the {sizes[0]:,}-query file ({mb:,.0f} MB), "
                "one after another. The import runs the two DuckDB scans side by side (each on every "
                "core) and DuckDB's insert beside them; the Python steps are the fallback routes:",
                Table(
                    ("step", "what", "wall", "CPU", "MB/s (wall)", "MB/s per CPU second"),
                    step_rows,
                    text_columns=(0, 1),
                ),
            )
        )
    # the speed target is the largest run's (a small one is mostly Python's start-up); memory is
    # every run's
    met_speed = bool(points) and points[-1]["mb_per_s"] >= TARGET_MB_S
    met_memory = bool(points) and all(p["peak_rss_mb"] < TARGET_PEAK_MB for p in points)
    if points:
        largest = points[-1]
        notes.insert(
            0,
            (
                f"Largest size: {largest['n_queries']:,} queries, {largest['bytes'] / 1e9:.1f} GB of "
                f"JSON at {largest['mb_per_s']:.1f} MB/s with a peak of {largest['peak_rss_mb']:,.0f} MB: "
                f"speed target ({TARGET_MB_S:.0f} MB/s) {'met' if met_speed else 'MISSED'}, memory "
                f"target (under {TARGET_PEAK_MB:,.0f} MB) {'met' if met_memory else 'MISSED'}."
            ),
        )
        if len(points) > 1:
            first = points[0]
            notes.append(
                "Growth from the smallest to the largest size: time x"
                f"{largest['seconds'] / first['seconds']:.1f} and peak memory x"
                f"{largest['peak_rss_mb'] / first['peak_rss_mb']:.1f} for x"
                f"{largest['n_queries'] / first['n_queries']:.0f} the queries."
            )
    limits = []
    if steps and points:
        from rageval_core.formats.native_duckdb import MIN_FILE_BYTES

        mb = steps_size / 1e6
        route = sum(steps[name][1] for name in _ROUTE_STEPS)
        reader = sum(steps[name][1] for name in ("witness", "rows", "tables"))
        insert_alone = mb / steps["insert"][1]
        largest = points[-1]
        cores = os.cpu_count() or 1
        small = [p for p in points if p["bytes"] < MIN_FILE_BYTES]
        notes.append(
            f"The limit on this machine: the DuckDB route costs {route / mb * 1000:.1f} CPU seconds "
            f"per GB of JSON (its steps above, CPU time): reading and checking "
            f"{reader / route:.0%} of it (two full JSON parses: the witness's json_structure, "
            f"and read_json for the rows), DuckDB's insert with its zstd string compression "
            f"{steps['insert'][1] / route:.0%}, the content hash {steps['hash'][1] / route:.0%}. "
            f"The scans run on DuckDB's threads beside the insert, which takes one batch at a "
            f"time: with {cores} free cores the import tends to the slower of the insert alone "
            f"({insert_alone:,.0f} MB/s) and every step shared over the cores "
            f"({mb / route * cores:,.0f} MB/s), with one core to {mb / route:,.0f} MB/s. The "
            f"Python readers it falls back to cannot pass json.loads, "
            f"{mb / steps['json'][0]:,.0f} MB/s on one core (their column route: "
            f"{mb / steps['python_columns'][0]:,.0f} MB/s"
            + (
                f"; files under {MIN_FILE_BYTES >> 20} MB, like the smallest here, take it, as "
                "starting DuckDB's scans costs more than it saves"
                if small
                else ""
            )
            + f"). The largest import ran at {largest['mb_per_s']:.1f} MB/s using "
            f"{largest['cpu_s'] / largest['seconds']:.2f} cores on average, with a load average "
            f"of {largest['load_before']:.2f} before and {largest['load_after']:.2f} after it: "
            f"this virtual machine's {cores} cores are shared, which is where the rest goes."
        )
        ceiling = min(insert_alone, mb / route * cores)
        limits.append(
            {
                "figure": f"native JSONL import, {largest['n_queries']:,} queries",
                "measured": f"{largest['mb_per_s']:.1f} MB/s",
                "limit": (
                    f"{ceiling:,.0f} MB/s: the slower of DuckDB's insert alone and the route's "
                    f"CPU cost per GB shared over {cores} cores (steps below)"
                ),
                "distance": f"{largest['mb_per_s'] / ceiling:.0%} of it",
            }
        )
    return ScenarioResult(
        key="native_scale",
        title="4. Native JSONL import at scale",
        setup=(
            f"Generated native runs (seed {seed}): 20 chunks of about 500 characters per query, "
            "plus relevant ids, evidence spans, latency and tokens (about 11.4 KB of JSON per "
            "query). Each is imported once by `rageval import FILE --no-score` in a child "
            "process into a new file-backed store; MB/s is the file's size over the child's "
            "wall time (Python start-up included), peak RSS is the child's VmHWM."
        ),
        tables=tuple(tables),
        notes=tuple(notes),
        data={
            "points": points,
            "steps_s": {k: wall for k, (wall, _) in steps.items()},
            "steps_cpu_s": {k: cpu for k, (_, cpu) in steps.items()},
            "target_mb_s": TARGET_MB_S,
            "target_peak_mb": TARGET_PEAK_MB,
            "met_speed": met_speed,
            "met_memory": met_memory,
            "limits": limits,
        },
    )


#: what each profiled step is (the import's own steps, then the Python fallback routes)
_STEP_WHAT = {
    "witness": "DuckDB: raw lines, json_structure of each, checks (all cores)",
    "rows": "DuckDB: read_json with the store's types, to Arrow batches (all cores)",
    "tables": "Arrow slices into the store's tables, value checks (Python + Arrow)",
    "hash": "content hash of those tables (sha256, one core)",
    "insert": "DuckDB: insert into a new file store, zstd strings (all cores)",
    "read": "fallback floor: the bytes, line by line (one core)",
    "json": "fallback floor: json.loads of every line (one core)",
    "python_columns": "fallback: Python's column route (json.loads, checks, Arrow; one core)",
}
#: the steps the import runs
_ROUTE_STEPS = ("witness", "rows", "tables", "hash", "insert")


def profile_import(run_file: Path, workdir: Path) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds of each step of the import on its own (where the time goes).

    The DuckDB route's steps (the file is taken by it; see _STEP_WHAT), then the Python routes
    a file goes to when DuckDB cannot vouch for it, for comparison. CPU seconds are the
    process's (all threads): DuckDB's steps use every core.
    """
    import resource

    import duckdb

    from rageval_core.formats import native, native_duckdb
    from rageval_core.model import RunInfo
    from rageval_core.store.rows import ContentHasher
    from rageval_core.store.schema import migrate
    from rageval_core.store.store import _import_settings

    def cpu() -> float:
        use = resource.getrusage(resource.RUSAGE_SELF)
        return use.ru_utime + use.ru_stime

    out: dict[str, tuple[float, float]] = {}
    clock: tuple[float, float] = (0.0, 0.0)

    def start() -> None:
        nonlocal clock
        clock = (time.perf_counter(), cpu())

    def stop(name: str) -> None:
        out[name] = (time.perf_counter() - clock[0], cpu() - clock[1])

    witness = native_duckdb._Witness(run_file, True, None)
    start()
    witness.run()
    stop("witness")
    if not witness.ok:
        raise RuntimeError(f"the DuckDB route would not take {run_file}: {witness.why}")
    con = native_duckdb._connect()
    start()
    reader = con.sql(native_duckdb._ROWS_SQL, params=[str(run_file)]).to_arrow_reader(
        native_duckdb._batch_queries(run_file, 1)
    )
    record_batches = list(reader)
    stop("rows")
    con.close()
    native_duckdb._column_batch(record_batches[-1].slice(1), 0, set())  # warms up Arrow, untimed
    start()
    batches, seen, n = [], set[int](), 0
    for i, rb in enumerate(record_batches):
        part = rb.slice(1) if i == 0 else rb  # the header record
        batches.append(native_duckdb._column_batch(part, n, seen))
        n += part.num_rows
    stop("tables")
    del record_batches
    hasher = ContentHasher(RunInfo())
    start()
    for batch in batches:
        hasher.add(batch)
    stop("hash")
    db = workdir / "profile.duckdb"
    db.unlink(missing_ok=True)
    store = duckdb.connect(str(db))
    migrate(store, str(db))
    start()
    store.begin()
    with _import_settings(store):  # as the import runs: capped memory, zstd strings
        for batch in batches:
            for table, rageval_batch in batch.tables.items():  # noqa: B007 (read by name in SQL)
                store.execute(f"INSERT INTO {table} SELECT 1, * FROM rageval_batch")
    store.commit()
    stop("insert")
    store.close()
    db.unlink(missing_ok=True)
    db.with_name(db.name + ".wal").unlink(missing_ok=True)
    del batches

    start()
    with run_file.open("rb") as fh:
        for _line in fh:
            pass
    stop("read")
    decode = json.JSONDecoder().decode
    start()
    with run_file.open("rb") as fh:
        for line in fh:
            decode(line.decode("utf-8"))
    stop("json")
    start()
    for _batch in native._jsonl_columns(run_file, 1):
        pass  # each batch dropped once made: only the reading is timed
    stop("python_columns")
    return out


def measure_import(run_file: Path, db: Path) -> dict[str, Any]:
    """Run the CLI import in a child that reports its own VmHWM (peak RSS) on exit.

    The 1-minute load average is read before and after: the machine's cores are shared.
    """
    env = {**os.environ, "RAGEVAL_DB": str(db)}
    code = (
        "import runpy, sys, atexit\n"
        "def peak():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            print('PEAK_KB', line.split()[1], file=sys.stderr)\n"
        "    import resource\n"
        "    use = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    print('CPU_S', use.ru_utime + use.ru_stime, file=sys.stderr)\n"
        "atexit.register(peak)\n"
        f"sys.argv = ['rageval', 'import', {str(run_file)!r}, '--no-score']\n"
        "runpy.run_module('rageval_core.cli', run_name='__main__')\n"
    )
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    if done.returncode != 0:
        raise RuntimeError(f"rageval import failed ({done.returncode}): {done.stderr[-2000:]}")
    peak_kb = [
        int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_KB")
    ]
    cpu = [float(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("CPU_S")]
    return {
        "seconds": seconds,
        "peak_rss_mb": peak_kb[-1] / 1024 if peak_kb else float("nan"),
        "cpu_s": cpu[-1] if cpu else float("nan"),
        "stdout": done.stdout.strip(),
        "progress_shown": "importing" in done.stderr,
        "load_before": load_before,
        "load_after": load_after,
    }
