"""Scenario 5: scoring every (gold span, chunk) pair of a large run with `partial`, both cores.

The run comes from bench/large_run.py (20 chunks of about 500 characters and 3 gold spans of 80
characters per query, each span cut from one of its query's chunks), imported with --no-score.
A copy of that store is scored by ensure_scored (what `rageval import` runs after an import) in
a child process, which samples its own and its pool workers' memory and CPU; a second child
asks again for the same run and scorer and gets the kept scores. In this process: the pairs of
the first queries scored by score_pairs on 1 and on 2 cores, and a random sample of the run's
pairs scored by difflib on the strings partial sees (normalised), and by rapidfuzz's
partial_ratio_alignment alone (the scorer's own cost: the floor of any scoring on top of it).
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from rapidfuzz import fuzz

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_seconds
from bench.large_run import build_large_store, read_marker
from rageval_core.matching.scorers import normalise_many, score_pairs

ROOT = Path(__file__).resolve().parents[1]
SCORER = "partial"


def run(
    workdir: Path,
    n_queries: int = 100_000,
    seed: int = 0,
    subset_queries: int = 1_000,
    difflib_sample: int = 2_000,
    reuse_repeats: int = 5,
    core_repeats: int = 3,
) -> ScenarioResult:
    """Score the large run once (child process), re-ask for it, and compare on samples."""
    db, run_name = build_large_store(workdir, n_queries, seed, score=False)
    facts = read_marker(workdir, n_queries, seed) or {}
    work = workdir / f"pair_scoring_{n_queries}.duckdb"
    copy_unscored(db, work, run_name)

    load_before = os.getloadavg()[0]
    first = measure_child(work, run_name, reuse_repeats=0)
    load_after = os.getloadavg()[0]
    again = measure_child(work, run_name, reuse_repeats=reuse_repeats)
    counts = pair_counts(work, run_name)
    ev, ch, pe, pc = read_pairs(work, run_name, subset_queries)
    work.unlink(missing_ok=True)
    work.with_name(work.name + ".wal").unlink(missing_ok=True)

    # the same pairs on one core and on two, interleaved (each call starts its own pool; the
    # fork server is warmed first): medians of core_repeats
    score_pairs(ev[:3], ch[:3], [0, 1, 2], [0, 1, 2], workers=2)
    runs: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(core_repeats):
        for workers in (1, 2):
            started = time.perf_counter()
            score_pairs(ev, ch, pe, pc, scorer=SCORER, workers=workers)
            runs[workers].append(time.perf_counter() - started)
    cores = {workers: statistics.median(times) for workers, times in runs.items()}
    # a random sample of the run's pairs: difflib, and the scorer alone, on normalised strings
    rng = np.random.default_rng(seed + 1)
    sample = rng.choice(pe.size, min(difflib_sample, pe.size), replace=False)
    ev_norm = [t for t, _ in normalise_many([ev[i] for i in pe[sample].tolist()])]
    ch_norm = [t for t, _ in normalise_many([ch[j] for j in pc[sample].tolist()])]
    difflib_pair = per_pair(
        lambda: [
            difflib.SequenceMatcher(None, e, c).ratio()
            for e, c in zip(ev_norm, ch_norm, strict=True)
        ],
        len(sample),
    )
    fuzzy = [(e, c) for e, c in zip(ev_norm, ch_norm, strict=True) if e not in c]
    # CPU seconds (not wall): the floor below is compared with the scoring's CPU seconds
    align_pair = (
        per_pair(
            lambda: [fuzz.partial_ratio_alignment(e, c) for e, c in fuzzy],
            len(fuzzy),
            clock=time.process_time,
        )
        if fuzzy
        else float("nan")
    )

    n_pairs = first["n_pairs"]
    wall = first["call_s"]
    expected = 20 * 3 * n_queries
    end_to_end_pair = wall / n_pairs
    ratio = difflib_pair / end_to_end_pair
    floor_s = counts["fuzzy"] * align_pair / 2
    data: dict[str, Any] = {
        "n_queries": n_queries,
        "seed": seed,
        "n_pairs": n_pairs,
        "expected_pairs": expected,
        "distinct_pairs": counts["distinct"],
        "substring_pairs": counts["substring"],
        "fuzzy_pairs": counts["fuzzy"],
        "score_s": wall,
        "child_wall_s": first["wall_s"],
        "pairs_per_s": n_pairs / wall,
        "distinct_pairs_per_s": counts["distinct"] / wall,
        "fuzzy_pairs_per_s": counts["fuzzy"] / wall,
        "main_cpu_s": first["main_cpu_s"],
        "workers_cpu_s": first["workers_cpu_s"],
        "main_peak_rss_mb": first["main_peak_mb"],
        "peak_pss_mb": first["peak_pss_mb"],
        "peak_rss_sum_mb": first["peak_rss_sum_mb"],
        "reused": {
            "cached": again["cached"],
            "n_pairs": again["n_pairs"],
            "new_pairs_scored": again["new_pairs"],
            "call_s": again["call_s"],
            "call_median_s": again["reuse_median_s"],
            "child_wall_s": again["wall_s"],
        },
        "subset": {
            "queries": subset_queries,
            "pairs": int(pe.size),
            "one_core_s": cores[1],
            "two_cores_s": cores[2],
            "speedup": cores[1] / cores[2],
            "seconds": runs,
        },
        "load_average": {"before_scoring": load_before, "after_scoring": load_after},
        "difflib": {
            "sample": len(sample),
            "s_per_pair": difflib_pair,
            "align_s_per_pair": align_pair,
            "fuzzy_in_sample": len(fuzzy),
        },
        "ratio_vs_difflib": ratio,
        "floor_two_cores_s": floor_s,
        "import": {k: facts.get(k) for k in ("jsonl_bytes", "import_s", "import_peak_rss_mb")},
        "growth": [{"n_queries": n_queries, "seconds": wall, "peak_mb": first["peak_pss_mb"]}],
        "growth_label": "pair scoring: ensure_scored (partial, all cores)",
        "limits": [
            {
                "figure": f"pair scoring, {n_pairs:,} pairs (partial, both cores)",
                "measured": fmt_seconds(wall),
                "limit": (
                    f"{fmt_seconds(floor_s)}: rapidfuzz's partial_ratio_alignment alone on each "
                    f"of the {counts['fuzzy']:,} fuzzy pairs ({fmt_seconds(align_pair)} CPU "
                    "each), spread over 2 cores"
                ),
                "distance": f"{wall / floor_s:.2f}x of it",
            }
        ],
    }

    main_rows = (
        (
            "(span, chunk) pairs stored",
            f"{n_pairs:,}",
            f"20 chunks x 3 spans x {n_queries:,} queries",
        ),
        ("distinct (span text, chunk text) pairs", f"{counts['distinct']:,}", ""),
        (
            "  exact substrings (one str.find each)",
            f"{counts['substring']:,}",
            f"{counts['substring'] / max(n_pairs, 1):.1%}",
        ),
        (
            "  fuzzy (partial_ratio_alignment each)",
            f"{counts['fuzzy']:,}",
            f"{counts['fuzzy'] / max(n_pairs, 1):.1%}",
        ),
        (
            "ensure_scored, wall",
            fmt_seconds(wall),
            f"child process {fmt_seconds(first['wall_s'])}; "
            f"1-minute load average {load_before:.2f} before, {load_after:.2f} after",
        ),
        (
            "pairs per second",
            f"{n_pairs / wall:,.0f}",
            f"distinct {counts['distinct'] / wall:,.0f}; fuzzy {counts['fuzzy'] / wall:,.0f}",
        ),
        (
            "CPU: main process / pool workers",
            f"{first['main_cpu_s']:.1f} s / {first['workers_cpu_s']:.1f} s",
            "read, normalise, find, insert / alignments",
        ),
        ("peak memory: main process (VmHWM)", f"{first['main_peak_mb']:,.0f} MB", ""),
        (
            "peak memory: main + workers (sampled)",
            f"{first['peak_pss_mb']:,.0f} MB",
            f"PSS; RSS sum {first['peak_rss_sum_mb']:,.0f} MB (shared pages counted per process)",
        ),
        (
            "re-run, same run and scorer: ensure_scored",
            fmt_seconds(again["reuse_median_s"]),
            f"kept scores reused ({again['new_pairs']} pairs scored); median of "
            f"{reuse_repeats + 1} calls, the first {fmt_seconds(again['call_s'])}; child process "
            f"{fmt_seconds(again['wall_s'])}",
        ),
    )
    core_rows = tuple(
        (
            f"{w} core{'s' if w > 1 else ''}",
            fmt_seconds(cores[w]),
            f"{pe.size / cores[w]:,.0f}",
            fmt_ratio(cores[1] / cores[w]),
        )
        for w in (1, 2)
    )
    versus_rows = (
        ("difflib SequenceMatcher(None, span, chunk).ratio()", fmt_seconds(difflib_pair), "1.00x"),
        (
            "rapidfuzz partial_ratio_alignment alone, 1 core, CPU time (fuzzy pairs)",
            fmt_seconds(align_pair),
            fmt_ratio(difflib_pair / align_pair),
        ),
        (
            "rageval ensure_scored, end to end, all cores",
            fmt_seconds(end_to_end_pair),
            fmt_ratio(ratio),
        ),
    )
    fuzzy_share = counts["fuzzy"] * align_pair
    cpu_s = first["main_cpu_s"] + first["workers_cpu_s"]
    notes = [
        f"{n_pairs / wall:,.0f} pairs per second end to end on {os.cpu_count()} cores (read from "
        f"DuckDB, normalise, score, store), {fmt_ratio(ratio)} difflib's rate on the same "
        "pairs; a re-run on the same run and scorer reuses the kept scores in "
        f"{fmt_seconds(again['reuse_median_s'])}.",
        f"Where the time goes: the pool workers' alignments took {first['workers_cpu_s']:.0f} "
        f"CPU seconds, the main process {first['main_cpu_s']:.0f} (reading the texts, "
        "normalising, exact substrings, inserting the scores, while the pool works). "
        f"rapidfuzz's partial_ratio_alignment alone costs {fmt_seconds(align_pair)} a fuzzy pair "
        f"on one core (80-character spans take its long-needle path), {fuzzy_share:,.0f} CPU "
        f"seconds for this run's {counts['fuzzy']:,} fuzzy pairs: the limit on 2 cores is "
        f"{fmt_seconds(floor_s)}, and the measured {fmt_seconds(wall)} is "
        f"{wall / floor_s:.2f}x that. The scoring used {cpu_s / wall:.2f} of the 2 cores on "
        f"average ({cpu_s:.0f} CPU seconds in {fmt_seconds(wall)}; 1-minute load average "
        f"{load_before:.2f} before, {load_after:.2f} after, on a machine shared with other "
        f"work): the same CPU seconds on 2 free cores would take {fmt_seconds(cpu_s / 2)}, "
        f"{cpu_s / 2 / floor_s:.2f}x the limit.",
        "Every result is the alignment rapidfuzz gives for that pair (score and window): "
        "nothing is skipped, so no pre-filter can lower the floor without changing a stored "
        "window; only exact substrings (score 1.0 whatever the scorer) skip the scorer.",
    ]
    if facts.get("import_s"):
        notes.append(
            f"The run's import (`rageval import --no-score`, "
            f"{facts['jsonl_bytes'] / 1e9:.2f} GB of JSONL) took "
            f"{fmt_seconds(facts['import_s'])}, not counted here."
        )
    return ScenarioResult(
        key="pair_scoring",
        title="5. Pair scoring at scale: partial, both cores, kept scores reused",
        setup=(
            f"bench/large_run.py run of {n_queries:,} queries (seed {seed}): 20 chunks of about "
            "500 characters and 3 gold spans of 80 characters per query, imported with "
            "--no-score. ensure_scored(scorer='partial', workers=0) scores a copy of that "
            "store in a child process that samples its own and its pool workers' memory "
            "(PSS, every 0.2 s) and CPU; a second child asks again. In this process: the "
            f"pairs of the first {subset_queries:,} queries by score_pairs on 1 and 2 cores, "
            f"and a random sample of {len(sample):,} of them by difflib on the normalised "
            "strings partial sees. One measurement each (the large scoring takes minutes)."
        ),
        tables=(
            ("Scoring the run:", Table(("", "value", "detail"), main_rows, text_columns=(0, 2))),
            (
                f"The pairs of the first {subset_queries:,} queries ({pe.size:,}), score_pairs "
                f"on one core and on two (medians of {core_repeats}, interleaved):",
                Table(("cores", "wall", "pairs/s", "speed-up"), core_rows),
            ),
            (
                f"Per pair, on a random sample of {len(sample):,} of those pairs:",
                Table(("scoring", "seconds per pair", "speed-up over difflib"), versus_rows),
            ),
        ),
        notes=tuple(notes),
        data=data,
    )


def copy_unscored(db: Path, work: Path, run_name: str) -> None:
    """A copy of the shared store with no kept `partial` scores (another scenario may score it)."""
    work.unlink(missing_ok=True)
    work.with_name(work.name + ".wal").unlink(missing_ok=True)
    shutil.copyfile(db, work)
    wal = db.with_name(db.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, work.with_name(work.name + ".wal"))
    con = duckdb.connect(str(work))
    try:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = ?", [run_name]).fetchall()[0][0]
        for table in ("pair_scores", "scorings"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ? AND scorer = ?", [run_id, SCORER])
    finally:
        con.close()


def pair_counts(db: Path, run_name: str) -> dict[str, int]:
    """Stored pairs, distinct (span text, chunk text) pairs, and those scoring 1.0 (substrings)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = ?", [run_name]).fetchall()[0][0]
        stored, substring = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE score = 1) FROM pair_scores "
            "WHERE run_id = ? AND scorer = ?",
            [run_id, SCORER],
        ).fetchall()[0]
        # by two 64-bit hashes per pair, not the texts (GBs at 100,000 queries): a collision
        # among a few million pairs has odds of about 1e-25
        distinct = con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT hash(e.text), hash(c.text) FROM evidence e "
            "JOIN chunks c ON c.run_id = e.run_id AND c.qidx = e.qidx "
            "WHERE e.run_id = ? AND c.text IS NOT NULL)",
            [run_id],
        ).fetchall()[0][0]
    finally:
        con.close()
    return {
        "stored": int(stored),
        "substring": int(substring),
        "fuzzy": int(stored - substring),
        "distinct": int(distinct),
    }


def read_pairs(
    db: Path, run_name: str, n_queries: int
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Span texts, chunk texts and the (span, chunk) pairs of the run's first n_queries queries."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = ?", [run_name]).fetchall()[0][0]
        ev = con.execute(
            "SELECT qidx, text FROM evidence WHERE run_id = ? AND qidx < ? ORDER BY qidx, eidx",
            [run_id, n_queries],
        ).fetchall()
        ch = con.execute(
            "SELECT qidx, text FROM chunks WHERE run_id = ? AND qidx < ? "
            "AND text IS NOT NULL ORDER BY qidx, rank",
            [run_id, n_queries],
        ).fetchall()
    finally:
        con.close()
    spans: dict[int, list[int]] = {}
    for i, (q, _) in enumerate(ev):
        spans.setdefault(q, []).append(i)
    pe = [e for q, _ in ch for e in spans.get(q, [])]
    pc = [j for j, (q, _) in enumerate(ch) for _ in spans.get(q, [])]
    return (
        [t for _, t in ev],
        [t for _, t in ch],
        np.asarray(pe, dtype=np.int64),
        np.asarray(pc, dtype=np.int64),
    )


def per_pair(fn: Any, n: int, repeats: int = 3, clock: Any = time.perf_counter) -> float:
    """Median seconds per pair of fn() over the n pairs it scores (wall, or clock's seconds)."""
    times = []
    for _ in range(repeats):
        started = clock()
        fn()
        times.append(clock() - started)
    return statistics.median(times) / max(n, 1)


def measure_child(db: Path, run_name: str, reuse_repeats: int) -> dict[str, Any]:
    """ensure_scored in a child process (python -c), which reports what child_main measured."""
    code = (
        "import sys, json\nfrom bench.pair_scoring import child_main\n"
        "print('RESULT', json.dumps(child_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, str(db), run_name, str(reuse_repeats)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"scoring child failed ({done.returncode}): {done.stderr[-2000:]}")
    return {**json.loads(lines[-1][len("RESULT ") :]), "wall_s": wall}


def child_main(db: str, run_name: str, reuse_repeats: int) -> dict[str, Any]:
    """In the child: time ensure_scored (then reuse_repeats more calls), sampling memory and CPU."""
    from rageval_core.store import Store
    from rageval_core.store.scores import ensure_scored, kept_pair_count

    sampler = _Sampler()
    sampler.start()
    cpu = time.process_time()
    with Store(db) as store:
        before = kept_pair_count(store, run_name, SCORER)
        started = time.perf_counter()
        scoring = ensure_scored(store, run_name, scorer=SCORER, workers=0)
        call_s = time.perf_counter() - started
        calls = [call_s]
        for _ in range(reuse_repeats):
            started = time.perf_counter()
            ensure_scored(store, run_name, scorer=SCORER, workers=0)
            calls.append(time.perf_counter() - started)
        after = kept_pair_count(store, run_name, SCORER)
    sampler.stop()
    main_cpu = time.process_time() - cpu - sampler.own_cpu_s
    return {
        "n_pairs": scoring.n_pairs,
        "cached": scoring.cached,
        "call_s": call_s,
        "reuse_median_s": statistics.median(calls),
        "new_pairs": after - before,
        "main_cpu_s": main_cpu,
        "workers_cpu_s": sampler.workers_cpu_s,
        "main_peak_mb": _status_kb(os.getpid(), "VmHWM") / 1024,
        "peak_pss_mb": sampler.peak_pss_kb / 1024,
        "peak_rss_sum_mb": sampler.peak_rss_kb / 1024,
    }


class _Sampler:
    """Every 0.2 s: PSS and RSS of this process and its descendants (the pool), and their CPU."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.every_s = every_s
        self.peak_pss_kb = 0.0
        self.peak_rss_kb = 0.0
        self._cpu: dict[int, float] = {}  # descendant pid -> last seen CPU seconds
        self.own_cpu_s = 0.0  # this thread's CPU, taken out of the main process's figure
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @property
    def workers_cpu_s(self) -> float:
        return sum(self._cpu.values())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        me = os.getpid()
        tick = os.sysconf("SC_CLK_TCK")
        while not self._stop.is_set():
            pss = rss = 0.0
            for pid in (me, *_descendants(me)):
                rollup = _smaps_rollup(pid)
                pss += rollup.get("Pss", 0.0)
                rss += rollup.get("Rss", 0.0)
                if pid != me:
                    try:
                        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                        self._cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
                    except (OSError, IndexError, ValueError):
                        pass
            self.peak_pss_kb = max(self.peak_pss_kb, pss)
            self.peak_rss_kb = max(self.peak_rss_kb, rss)
            self.own_cpu_s = time.thread_time()
            self._stop.wait(self.every_s)


def _descendants(root: int) -> list[int]:
    """Every process below root (the fork server and its pool workers), from /proc's children lists."""
    found, frontier = [], [root]
    while frontier:
        children = []
        for pid in frontier:
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                    children += [int(c) for c in text.split()]
            except OSError:
                continue
        found += children
        frontier = children
    return found


def _smaps_rollup(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("Pss", "Rss"):
                out[name] = float(rest.split()[0])
    except OSError:
        pass
    return out


def _status_kb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    return float("nan")
