"""Scenario 4: a large native JSONL run imported by the real CLI (`rageval import`), at growing sizes.

The run is generated here, deterministic for a seed: each query has 20 chunks of about 500
characters (random words, the score, the doc id), 1-3 relevant ids, 1-3 gold evidence spans,
latency for 3 stages and 2 token counts; about 11.4 KB of JSON per query. Each size is imported
into a new file-backed store by `python -m rageval_core.cli import FILE --no-score` in a child
process (with its progress bar): wall time, MB/s of JSON, and the child's peak RSS
(os.wait4's ru_maxrss) are recorded. Scoring the evidence is a separate step, left out here.
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
    path: Path, n_queries: int, n_chunks: int = 20, text_chars: int = 500, seed: int = 0,
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
        fh.write(json.dumps({"rageval_run": {"name": "scale", "settings": {"top_k": n_chunks}}}) + "\n")
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
                    % (docs[i][r], corpus[offsets[i][r]:offsets[i][r] + text_chars], scores[i][r])
                    for r in range(n_chunks)
                )
                gold = range(n_gold[i])
                relevant = ",".join(f'"d{docs[i][r]:07d}"' for r in gold)
                # gold spans are taken from the relevant chunks' texts
                spans = ",".join(f'"{corpus[offsets[i][r] + 40:offsets[i][r] + 120]}"' for r in gold)
                out.append(
                    '{"query_id":"q%07d","query":"%s","retrieved":[%s],"relevant_ids":[%s],'  # noqa: UP031
                    '"evidence":[%s],"latency_ms":{"retrieve":%r,"rerank":%r,"generate":%r},'
                    '"tokens":{"prompt":%d,"completion":%d}}\n'
                    % (lo + i, corpus[query_at[i]:query_at[i] + 60], chunks, relevant, spans,
                       *latency[i], *tokens[i])
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
    steps: dict[str, float] = {}
    steps_size = 0
    for n in sizes:
        need_gb = n * 11_500 * 1.6 / 1e9  # the file plus the store (FSST-compressed, about 0.4x)
        if need_gb > free_gb * 0.9:
            notes.append(f"{n:,} queries skipped: about {need_gb:.0f} GB needed, "
                         f"{free_gb:.0f} GB free on the bench's disk.")
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
        point = {"n_queries": n, "bytes": size, "generate_s": generated_s, **result,
                 "mb_per_s": mb / result["seconds"], "store_bytes": db.stat().st_size}
        points.append(point)
        rows.append((
            f"{n:,}", f"{mb:,.0f} MB", fmt_seconds(result["seconds"]), f"{result['cpu_s']:.1f} s",
            f"{point['mb_per_s']:.1f}",
            f"{result['peak_rss_mb']:,.0f} MB", f"{point['store_bytes'] / 1e6:,.0f} MB",
            "yes" if result["progress_shown"] else "no",
        ))
        if not keep_files:
            run_file.unlink(missing_ok=True)
            db.unlink(missing_ok=True)
            db.with_name(db.name + ".wal").unlink(missing_ok=True)
        free_gb = shutil.disk_usage(workdir).free / 1e9
    table = Table(
        ("queries", "JSON", "import (wall)", "CPU (all threads)", "MB/s", "peak RSS", "store file",
         "progress bar"),
        tuple(rows),
    )
    tables: list[tuple[str, Table]] = [("Import of one run per size:", table)]
    if steps:
        mb = steps_size / 1e6
        step_rows = tuple(
            (name, fmt_seconds(seconds), f"{mb / seconds:,.0f}") for name, seconds in steps.items()
        )
        tables.append((
            f"Where the time goes: each step alone on the {sizes[0]:,}-query file ({mb:,.0f} MB), "
            "one after another (the import overlaps the reader's steps with DuckDB's):",
            Table(("step", "seconds", "MB/s of JSON"), step_rows),
        ))
    met_speed = bool(points) and all(p["mb_per_s"] >= TARGET_MB_S for p in points)
    met_memory = bool(points) and all(p["peak_rss_mb"] < TARGET_PEAK_MB for p in points)
    if points:
        largest = points[-1]
        notes.insert(0, (
            f"Largest size: {largest['n_queries']:,} queries, {largest['bytes'] / 1e9:.1f} GB of "
            f"JSON at {largest['mb_per_s']:.1f} MB/s with a peak of {largest['peak_rss_mb']:,.0f} MB: "
            f"speed target ({TARGET_MB_S:.0f} MB/s) {'met' if met_speed else 'MISSED'}, memory "
            f"target (under {TARGET_PEAK_MB:,.0f} MB) {'met' if met_memory else 'MISSED'}."
        ))
        if len(points) > 1:
            first = points[0]
            notes.append(
                "Growth from the smallest to the largest size: time x"
                f"{largest['seconds'] / first['seconds']:.1f} and peak memory x"
                f"{largest['peak_rss_mb'] / first['peak_rss_mb']:.1f} for x"
                f"{largest['n_queries'] / first['n_queries']:.0f} the queries."
            )
    if steps and points:
        mb = steps_size / 1e6
        reader = mb / steps["columns"]
        writer = mb / (steps["insert"] + steps["hash"])
        ceiling = min(reader, writer)
        largest = points[-1]
        notes.append(
            f"The limit on this machine: json.loads alone decodes {mb / steps['json']:,.0f} MB/s "
            f"on one core (no Python reader can beat it); the column route (decode, checks, "
            f"Arrow) {reader:,.0f} MB/s; DuckDB's insert, mostly its string compression "
            f"(zstd during imports), plus the content hash {writer:,.0f} MB/s. The import runs "
            f"the reader in one thread and DuckDB in another, so with 2 free cores it would tend "
            f"to the slower of the two, {ceiling:,.0f} MB/s; with one core, to "
            f"{1 / (1 / reader + 1 / writer):,.0f} MB/s. The largest import ran at "
            f"{largest['mb_per_s']:.1f} MB/s, using {largest['cpu_s'] / largest['seconds']:.2f} "
            f"cores on average: this virtual machine's 2 cores are shared (the load average and "
            f"vmstat's steal time show how much), which is where the rest goes."
        )
    return ScenarioResult(
        key="native_scale",
        title="4. Native JSONL import at scale",
        setup=(f"Generated native runs (seed {seed}): 20 chunks of about 500 characters per query, "
               "plus relevant ids, evidence spans, latency and tokens (about 11.4 KB of JSON per "
               "query). Each is imported once by `rageval import FILE --no-score` in a child "
               "process into a new file-backed store; MB/s is the file's size over the child's "
               "wall time (Python start-up included), peak RSS is the child's VmHWM."),
        tables=tuple(tables),
        notes=tuple(notes),
        data={"points": points, "steps_s": steps, "target_mb_s": TARGET_MB_S, "target_peak_mb": TARGET_PEAK_MB,
              "met_speed": met_speed, "met_memory": met_memory},
    )


def profile_import(run_file: Path, workdir: Path) -> dict[str, float]:
    """Seconds of each step of the import on its own, one core each (where the time goes).

    read: the bytes, line by line; json: json.loads of every line (the floor of any Python
    reader); columns: the native reader's column route (json + checks + Arrow tables); insert:
    DuckDB inserting those batches into a new file store (compression included); hash: the
    content hash of those batches.
    """
    import duckdb

    from rageval_core.formats import native
    from rageval_core.model import RunInfo
    from rageval_core.store.rows import ContentHasher
    from rageval_core.store.schema import migrate
    from rageval_core.store.store import _import_settings

    out: dict[str, float] = {}
    started = time.perf_counter()
    with run_file.open("rb") as fh:
        for _line in fh:
            pass
    out["read"] = time.perf_counter() - started
    decode = json.JSONDecoder().decode
    started = time.perf_counter()
    with run_file.open("rb") as fh:
        for line in fh:
            decode(line.decode("utf-8"))
    out["json"] = time.perf_counter() - started
    for _batch in native._jsonl_columns(run_file, 1):
        break  # a first batch warms up (module imports, allocator) outside the timing
    started = time.perf_counter()
    batches = list(native._jsonl_columns(run_file, 1))
    out["columns"] = time.perf_counter() - started
    db = workdir / "profile.duckdb"
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    migrate(con, str(db))
    started = time.perf_counter()
    con.begin()
    with _import_settings(con):  # as the import runs: capped memory, zstd strings
        for batch in batches:
            for table, rageval_batch in batch.tables.items():  # noqa: B007 (read by name in SQL)
                con.execute(f"INSERT INTO {table} SELECT 1, * FROM rageval_batch")
    con.commit()
    out["insert"] = time.perf_counter() - started
    con.close()
    db.unlink(missing_ok=True)
    hasher = ContentHasher(RunInfo())
    started = time.perf_counter()
    for batch in batches:
        hasher.add(batch)
    out["hash"] = time.perf_counter() - started
    return out


def measure_import(run_file: Path, db: Path) -> dict[str, Any]:
    """Run the CLI import in a child that reports its own VmHWM (peak RSS) on exit."""
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
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"rageval import failed ({done.returncode}): {done.stderr[-2000:]}")
    peak_kb = [int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_KB")]
    cpu = [float(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("CPU_S")]
    return {"seconds": seconds, "peak_rss_mb": peak_kb[-1] / 1024 if peak_kb else float("nan"),
            "cpu_s": cpu[-1] if cpu else float("nan"),
            "stdout": done.stdout.strip(), "progress_shown": "importing" in done.stderr}
