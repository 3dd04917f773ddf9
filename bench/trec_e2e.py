"""Scenario 1: TREC run + qrels files to P@10, R@100, RR, AP and nDCG@10, end to end.

Every tool starts from the same two files and ends with per-query values and their means:
rageval by its direct route (the route `rageval evaluate RUN --qrels QRELS` takes:
direct.trec_arrays, the numpy reader of formats/trec_columns.py, no Query objects), by its store route (import through column batches, load_run_data, evaluate) and by the Query-object
route (trec.read -> ranked_labels_from_queries), pytrec_eval with its own parsers, and ranx with
its own loaders after a warm-up call (numba compiles on first use). The values are checked
against each other on every query, not only on the means. Peak memory is measured per tool in
a child process (`python -m bench.trec_e2e TOOL RUN QRELS`), and with --scale the same is done
at 100,000 queries.
"""

from __future__ import annotations

import cProfile
import io
import json
import math
import pstats
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    ScenarioResult,
    Stopwatch,
    Table,
    Timing,
    fmt_ratio,
    fmt_runs,
    fmt_seconds,
    measure,
)
from rageval_core.evaluation.direct import trec_arrays
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate, open_file_in_scratch_store
from rageval_core.formats import trec
from rageval_core.metrics import aggregate, compute, ranked_labels_from_queries
from rageval_core.rundata import load_run_data

METRICS = ("P@10", "R@100", "RR", "AP", "nDCG@10")
#: the same measures as pytrec_eval (trec_eval) and ranx name them
PYTREC = {
    "P@10": "P_10",
    "R@100": "recall_100",
    "RR": "recip_rank",
    "AP": "map",
    "nDCG@10": "ndcg_cut_10",
}
IR_MEASURES = {"P@10": "P@10", "R@100": "R@100", "RR": "RR", "AP": "AP", "nDCG@10": "nDCG@10"}
RANX = {
    "P@10": "precision@10",
    "R@100": "recall@100",
    "RR": "mrr",
    "AP": "map",
    "nDCG@10": "ndcg@10",
}
#: means (and every per-query value) must agree this closely
TOLERANCE = 1e-9

PerQuery = dict[str, dict[str, float]]  # metric -> query id -> value


@dataclass(frozen=True, slots=True)
class TrecFiles:
    """The generated run and qrels and what they hold."""

    run: Path
    qrels: Path
    n_queries: int
    depth: int
    n_judged: int
    tied: frozenset[str]  # queries whose list holds at least two equal scores


def write_trec_files(directory: Path, n_queries: int, depth: int = 100, seed: int = 0) -> TrecFiles:
    """Write a deterministic TREC run (n_queries x depth) and graded qrels into directory.

    Scores have 3 decimals in [0, 10), so about 40% of the 100-document lists hold a tie
    (trec_eval then orders by docno, descending). Each query has 10-30 judged documents with
    labels 0-3, drawn mostly from the top of its list and some from outside it.
    """
    rng = np.random.default_rng(seed)
    pool = depth + 40  # the list plus documents judged but never retrieved
    candidates = rng.permuted(np.tile(np.arange(1000), (n_queries, 1)), axis=1)[:, :pool]
    # distinct per query: 101 * c < 100,000 for c < 1000, shifted by a query offset
    docs = (np.arange(n_queries)[:, None] * 7919 + candidates * 101) % 100_000
    scores = np.round(np.sort(rng.random((n_queries, depth)) * 10.0, axis=1)[:, ::-1], 3)
    n_judged = rng.integers(10, 31, n_queries)
    weights = 1.0 / np.sqrt(np.arange(1, pool + 1))
    weights /= weights.sum()
    run_lines: list[str] = []
    qrels_lines: list[str] = []
    tied: set[str] = set()
    for q in range(n_queries):
        qid = f"q{q:05d}"
        names = [f"D{d:05d}" for d in docs[q].tolist()]
        row = scores[q].tolist()
        run_lines += [f"{qid} Q0 {names[r]} {r + 1} {row[r]:.3f} bench\n" for r in range(depth)]
        if np.any(scores[q, 1:] == scores[q, :-1]):
            tied.add(qid)
        judged = rng.choice(pool, size=int(n_judged[q]), replace=False, p=weights)
        labels = rng.choice(4, size=judged.size, p=[0.35, 0.35, 0.2, 0.1])
        qrels_lines += [
            f"{qid} 0 {names[j]} {label}\n"
            for j, label in zip(judged.tolist(), labels.tolist(), strict=True)
        ]
    directory.mkdir(parents=True, exist_ok=True)
    run, qrels = directory / "bench.run", directory / "bench.qrels"
    run.write_text("".join(run_lines), encoding="utf-8")
    qrels.write_text("".join(qrels_lines), encoding="utf-8")
    return TrecFiles(run, qrels, n_queries, depth, len(qrels_lines), frozenset(tied))


# --- the four ways from files to values (each returns (raw output, stage seconds)) --------


def rageval_direct(files: TrecFiles) -> tuple[Any, dict[str, float]]:
    """direct.trec_arrays (numpy reader, sort and join in numpy) -> registry.compute (+ means)."""
    sw = Stopwatch()
    got = trec_arrays(files.run, files.qrels)
    if got is None:
        raise RuntimeError("the direct route refused the bench files")
    arrays = got[0]
    sw.lap("read + labels")
    values = compute(METRICS, arrays)
    means = {name: aggregate(name, v) for name, v in values.items()}
    sw.lap("metrics")
    return (arrays.query_ids, values, means), sw.stages


def rageval_queries(files: TrecFiles) -> tuple[Any, dict[str, float]]:
    """trec.read -> ranked_labels_from_queries (Query objects) -> registry.compute (+ run means)."""
    sw = Stopwatch()
    log = ProblemLog()
    parsed = trec.read(files.run, files.qrels, log)
    sw.lap("parse")
    arrays, _ = ranked_labels_from_queries(parsed.queries)  # builds the Query objects lazily
    log.raise_if_errors()
    sw.lap("queries + labels")
    values = compute(METRICS, arrays)
    means = {name: aggregate(name, v) for name, v in values.items()}
    sw.lap("metrics")
    return (arrays.query_ids, values, means), sw.stages


def rageval_store(files: TrecFiles) -> tuple[Any, dict[str, float]]:
    """Import into Store(':memory:') -> load_run_data -> evaluate."""
    sw = Stopwatch()
    store = open_file_in_scratch_store([files.run, files.qrels], fmt="trec")
    sw.lap("parse + import")
    with store:
        data = load_run_data(store, store.runs()[0].run_id)
        sw.lap("load arrays")
        report = evaluate(data, list(METRICS), store=store, relevance="ids")
        sw.lap("evaluate")
    return (tuple(report.query_ids), report.per_query, report.metrics), sw.stages


def pytrec_eval_run(files: TrecFiles) -> tuple[Any, dict[str, float]]:
    """pytrec_eval's own parse_run/parse_qrel, then RelevanceEvaluator.evaluate and the means."""
    import pytrec_eval

    sw = Stopwatch()
    with files.run.open(encoding="utf-8") as fh:
        run = pytrec_eval.parse_run(fh)
    with files.qrels.open(encoding="utf-8") as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    sw.lap("parse")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
    means = {
        m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()])
        for m in PYTREC.values()
    }
    sw.lap("evaluate")
    return (per_query, means), sw.stages


def ranx_run(files: TrecFiles) -> tuple[Any, dict[str, float]]:
    """ranx's Qrels.from_file / Run.from_file, then ranx.evaluate (means; per query kept in run)."""
    import ranx

    sw = Stopwatch()
    qrels = ranx.Qrels.from_file(str(files.qrels), kind="trec")
    run = ranx.Run.from_file(str(files.run), kind="trec")
    sw.lap("load")
    means = ranx.evaluate(qrels, run, list(RANX.values()))
    sw.lap("evaluate")
    return (run, means), sw.stages


def ir_measures_run(files: TrecFiles) -> tuple[Any, dict[str, float]]:
    """ir_measures' read_trec_run/read_trec_qrels, then iter_calc (per query) and the means."""
    import ir_measures

    sw = Stopwatch()
    qrels = list(ir_measures.read_trec_qrels(str(files.qrels)))
    run = list(ir_measures.read_trec_run(str(files.run)))
    sw.lap("parse")
    measures = [ir_measures.parse_measure(m) for m in IR_MEASURES.values()]
    per_query: PerQuery = {m: {} for m in METRICS}
    names = {str(x): m for m, x in zip(METRICS, measures, strict=True)}
    for row in ir_measures.iter_calc(measures, qrels, run):
        per_query[names[str(row.measure)]][row.query_id] = float(row.value)
    means = {m: float(np.mean(list(per_query[m].values()))) for m in METRICS}
    sw.lap("evaluate")
    return (per_query, means), sw.stages


# --- as processes: the CLI against a plain pytrec_eval script, each a fresh Python ----------

PYTREC_SCRIPT = """
import sys, pytrec_eval
with open(sys.argv[1]) as fh:
    run = pytrec_eval.parse_run(fh)
with open(sys.argv[2]) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
names = sys.argv[3].split(",")
per_query = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
for m in names:
    print(m, pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()]))
"""


def process_command(tool: str, files: TrecFiles) -> list[str]:
    """The command line of tool ("cli" or "pytrec_eval_script") on the files."""
    if tool == "cli":
        exe = str(Path(sys.executable).with_name("rageval"))
        return [exe, "evaluate", str(files.run), "--qrels", str(files.qrels), "--format",
                "trec", "--metrics", " ".join(METRICS), "--json"]  # fmt: skip
    names = ",".join(PYTREC.values())
    return [sys.executable, "-c", PYTREC_SCRIPT, str(files.run), str(files.qrels), names]


def in_process(tool: str, files: TrecFiles, calls: int) -> dict[str, Any]:
    """Run tool's command calls times from a small Python (bench.process_peak): seconds of
    each (process start to exit) and the command's own peak RSS (the largest over the calls)."""
    seconds, cpu, peaks, means = [], [], [], {}
    for _ in range(calls):
        done = subprocess.run(
            [sys.executable, "-m", "bench.process_peak", *process_command(tool, files)],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        got = json.loads(done.stdout)
        if got["returncode"] != 0:
            raise RuntimeError(f"{tool} failed: {got['stderr']}")
        seconds.append(got["seconds"])
        cpu.append(got["cpu_s"])
        peaks.append(got["peak_mb"])
        if tool == "cli":
            means = {m: float(v) for m, v in json.loads(got["stdout"])["metrics"].items()}
        else:
            lines = dict(line.split() for line in got["stdout"].splitlines())
            means = {m: float(lines[PYTREC[m]]) for m in METRICS}
    return {
        "tool": tool,
        "seconds": seconds,
        "cpu_s": cpu,
        "peak_mb": max(peaks),
        "start_mb": 0.0,
        "means": means,
    }


def compile_bytecode() -> list[str]:
    """Compile the bytecode of the packages both processes import, as pip install does.

    Without it a Python run with PYTHONDONTWRITEBYTECODE (as on the bench machine) compiles
    numpy's and rageval's sources again at every start: both sides would pay it, rageval more.
    """
    import compileall
    import importlib.util

    done = []
    for name in ("numpy", "pytrec_eval", "rageval_core", "rageval"):
        spec = importlib.util.find_spec(name)
        folders = list(spec.submodule_search_locations or []) if spec else []
        for folder in folders:
            compileall.compile_dir(folder, quiet=2, workers=1)
            done.append(name)
    return done


def help_seconds(calls: int = 5) -> float:
    """Median wall time of `rageval --help` as a process (it must load nothing heavy)."""
    exe = str(Path(sys.executable).with_name("rageval"))
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run([exe, "--help"], capture_output=True, check=True)
        seconds.append(time.perf_counter() - started)
    return float(np.median(seconds))


def interleaved(files: TrecFiles, calls: int) -> dict[str, dict[str, Any]]:
    """in_process for every command of PROCESSES, taking turns call by call, so that other
    work on the machine falls on both alike."""
    runs = [{key: in_process(key, files, 1) for key in PROCESSES} for _ in range(calls)]
    out = {}
    for key in PROCESSES:
        got = [r[key] for r in runs]
        out[key] = {
            **got[-1],
            "seconds": [s for g in got for s in g["seconds"]],
            "cpu_s": [c for g in got for c in g["cpu_s"]],
            "peak_mb": max(g["peak_mb"] for g in got),
        }
    return out


PROCESSES = {
    "cli": "rageval evaluate RUN --qrels QRELS --json (the CLI, a process)",
    "pytrec_eval_script": "pytrec_eval in a script (parse + evaluate, a process)",
}


# --- values in one shape, and their agreement -----------------------------------------------


def values_direct(raw: Any) -> tuple[PerQuery, dict[str, float]]:
    query_ids, values, means = raw
    return (
        {m: dict(zip(query_ids, values[m].tolist(), strict=True)) for m in METRICS},
        {m: float(means[m]) for m in METRICS},
    )


def values_pytrec(raw: Any) -> tuple[PerQuery, dict[str, float]]:
    per_query, means = raw
    return (
        {m: {q: float(v[PYTREC[m]]) for q, v in per_query.items()} for m in METRICS},
        {m: float(means[PYTREC[m]]) for m in METRICS},
    )


def values_ranx(raw: Any) -> tuple[PerQuery, dict[str, float]]:
    run, means = raw
    return (
        {m: {q: float(v) for q, v in run.scores[RANX[m]].items()} for m in METRICS},
        {m: float(means[RANX[m]]) for m in METRICS},
    )


#: every way from the files to the values, by key; LABELS name them in tables
TOOLS: dict[str, Callable[[TrecFiles], tuple[Any, dict[str, float]]]] = {
    "direct": rageval_direct,
    "store": rageval_store,
    "queries": rageval_queries,
    "pytrec_eval": pytrec_eval_run,
    "ir_measures": ir_measures_run,
    "ranx": ranx_run,
}
CONVERT: dict[str, Callable[[Any], tuple[PerQuery, dict[str, float]]]] = {
    "direct": values_direct,
    "store": values_direct,
    "queries": values_direct,
    "pytrec_eval": values_pytrec,
    "ir_measures": lambda raw: raw,
    "ranx": values_ranx,
}
LABELS = {
    "direct": "rageval direct (direct.trec_arrays -> compute)",
    "store": "rageval store (import -> load_run_data -> evaluate)",
    "queries": "rageval Query objects (trec.read -> ranked_labels_from_queries -> compute)",
    "pytrec_eval": "pytrec_eval (parse_run/parse_qrel -> evaluate)",
    "ir_measures": "ir_measures (read_trec_run/read_trec_qrels -> iter_calc)",
    "ranx": "ranx, warm (from_file -> evaluate)",
}


def in_child(tool: str, files: TrecFiles, calls: int) -> dict[str, Any]:
    """Run one tool calls times in a fresh Python: seconds of each call, peak RSS, the means.

    The first call warms up (ranx's numba, the page cache); peak RSS (VmHWM) covers all calls.
    """
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.trec_e2e",
            tool,
            str(files.run),
            str(files.qrels),
            str(calls),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[1],
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tool} failed in its child process: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _child_main(argv: list[str]) -> int:
    tool, run_file, qrels_file, calls = argv[0], Path(argv[1]), Path(argv[2]), int(argv[3])
    files = TrecFiles(run_file, qrels_file, 0, 0, 0, frozenset())
    # rageval is imported with this module; the others' packages here, so the baseline below
    # holds every import and the peak above it is the tool's own work
    if tool == "pytrec_eval":
        import pytrec_eval  # noqa: F401
    elif tool == "ranx":
        import ranx  # noqa: F401
    elif tool == "ir_measures":
        import ir_measures  # noqa: F401
    start_mb = rss_mb()
    seconds, means = [], {}
    for _ in range(calls):
        started = time.perf_counter()
        raw, _ = TOOLS[tool](files)
        seconds.append(time.perf_counter() - started)
        means = CONVERT[tool](raw)[1]
        del raw
    print(
        json.dumps(
            {
                "tool": tool,
                "seconds": seconds,
                "peak_mb": peak_rss_mb(),
                "start_mb": start_mb,
                "means": means,
            }
        )
    )
    return 0


def rss_mb() -> float:
    """This process's resident memory now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def max_difference(
    a: PerQuery, b: PerQuery, queries: set[str] | None = None
) -> tuple[float, set[str]]:
    """Largest |a - b| over every metric and query (or the given queries); queries that differ."""
    worst = 0.0
    differing: set[str] = set()
    for m in METRICS:
        if set(a[m]) != set(b[m]):
            return math.inf, set(a[m]) ^ set(b[m])
        for q in a[m] if queries is None else queries:
            d = abs(a[m][q] - b[m][q])
            worst = max(worst, d)
            if d > TOLERANCE:
                differing.add(q)
    return worst, differing


def profile_direct(files: TrecFiles, top: int = 12) -> tuple[Table, str]:
    """cProfile of one direct-path call: the functions with the most own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    rageval_direct(files)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:top]  # type: ignore[attr-defined]
    table_rows = []
    for (file, line, func), (_, calls, own, cum, _) in rows:
        where = f"{Path(file).name}:{line} {func}" if line else func
        table_rows.append(
            (where, f"{calls:,}", f"{own:.2f}", f"{100 * own / total:.0f}%", f"{cum:.2f}")
        )
    table = Table(
        ("function (own time)", "calls", "own s", "share", "cumulative s"), tuple(table_rows)
    )
    return table, f"profiled total {total:.2f} s (cProfile inflates per-call overhead)"


def run(
    workdir: Path,
    n_queries: int = 10_000,
    depth: int = 100,
    seed: int = 0,
    with_ranx: bool = True,
    profile: bool | None = None,
    repeats: int | None = None,
    memory: bool = True,
    scale_queries: int | None = None,
) -> ScenarioResult:
    """Time every tool on the same generated files and check their values agree.

    profile None: profile the direct path only when it is slower than pytrec_eval or ranx.
    memory: each tool's peak RSS in a child process. scale_queries: the same (time and memory,
    in children) on files of that many queries too.
    """
    files = write_trec_files(workdir, n_queries, depth, seed)
    tools: dict[str, Any] = {
        label: (TOOLS[key], CONVERT[key])
        for key, label in LABELS.items()
        if with_ranx or key != "ranx"
    }
    timings: dict[str, Timing] = {}
    values: dict[str, tuple[PerQuery, dict[str, float]]] = {}
    for label, (fn, convert) in tools.items():
        # for ranx the untimed warm-up call is the one where numba compiles (or loads its cache)
        timing, raw = measure(lambda fn=fn: fn(files), repeats)  # type: ignore[misc]
        timings[label] = timing
        values[label] = convert(raw)
    first_call = {label: t.warmup_s for label, t in timings.items() if t.warmup_s is not None}

    labels = list(tools)
    direct, store, pyt = LABELS["direct"], LABELS["store"], LABELS["pytrec_eval"]
    reference = values[pyt][0]
    agreement: dict[str, Any] = {}
    for label in labels:
        if label == pyt:
            continue
        per_query, means = values[label]
        mean_diff = max(abs(means[m] - values[pyt][1][m]) for m in METRICS)
        worst, differing = max_difference(per_query, reference)
        untied = set(reference[METRICS[0]]) - files.tied
        worst_untied, _ = max_difference(per_query, reference, untied)
        agreement[label] = {
            "max_mean_difference": mean_diff,
            "max_query_difference": worst,
            "max_query_difference_untied": worst_untied,
            "queries_differing": len(differing),
            "queries_differing_untied": len(differing - files.tied),
        }

    rows = []
    for label in labels:
        t = timings[label]
        stages = ", ".join(f"{name} {fmt_seconds(t.stage_median(name))}" for name in t.stages)
        rows.append(
            (
                label,
                fmt_seconds(t.median),
                fmt_runs(t),
                stages,
                fmt_ratio(timings[direct].median / t.median),
                fmt_ratio(timings[store].median / t.median),
            )
        )
    time_table = Table(
        (
            "tool / path",
            "median",
            "runs (fastest - slowest)",
            "split (medians)",
            "rageval direct / this",
            "rageval store / this",
        ),
        tuple(rows),
        text_columns=(0, 3),
    )
    value_rows = []
    for m in METRICS:
        value_rows.append((m, *(f"{values[label][1][m]:.6f}" for label in labels)))
    value_table = Table(("mean of", *(_short(label) for label in labels)), tuple(value_rows))
    check_rows = tuple(
        (
            _short(label),
            f"{a['max_mean_difference']:.1e}",
            f"{a['max_query_difference']:.1e}",
            f"{a['queries_differing']:,} ({a['queries_differing_untied']:,} untied)",
            f"{a['max_query_difference_untied']:.1e}",
        )
        for label, a in agreement.items()
    )
    check_table = Table(
        (
            "against pytrec_eval",
            "max |mean diff|",
            "max |per-query diff|",
            "queries differing",
            "max diff, untied queries",
        ),
        check_rows,
    )

    others = [x for x in labels if x.startswith(("pytrec", "ranx"))]
    direct_slower = [x for x in others if timings[direct].median > timings[x].median]
    tables: list[tuple[str, Table]] = [
        ("Wall-clock time from the two files to the five means:", time_table),
        ("Means (every tool computed every query):", value_table),
        (
            f"Agreement with pytrec_eval ({len(files.tied):,} of {n_queries:,} queries hold tied "
            f"scores):",
            check_table,
        ),
    ]
    keys = [k for k in LABELS if with_ranx or k != "ranx"]
    peaks: dict[str, dict[str, Any]] = {}
    if memory:
        peaks = {key: in_child(key, files, 1) for key in keys}
        rows_mem = tuple(
            (
                LABELS[key],
                f"{peaks[key]['peak_mb']:,.0f} MB",
                f"{peaks[key]['start_mb']:,.0f} MB",
                f"{peaks[key]['peak_mb'] - peaks[key]['start_mb']:,.0f} MB",
            )
            for key in keys
        )
        tables.append(
            (
                f"Peak memory at {n_queries:,} queries (one call in a fresh Python, which "
                "imports the bench module, so rageval too, before its tool's own imports):",
                Table(
                    ("tool / path", "peak RSS (VmHWM)", "RSS before the call", "peak above that"),
                    rows_mem,
                ),
            )
        )
    processes: dict[str, dict[str, Any]] = {}
    compiled: list[str] = []
    help_s = None
    if memory:
        compiled = compile_bytecode()
        help_s = help_seconds()
        processes = interleaved(files, 5)
        base_s = float(np.median(processes["pytrec_eval_script"]["seconds"]))
        base_cpu = float(np.median(processes["pytrec_eval_script"]["cpu_s"]))
        base_mb = processes["pytrec_eval_script"]["peak_mb"]
        rows_proc = tuple(
            (
                label,
                fmt_seconds(float(np.median(processes[key]["seconds"]))),
                fmt_seconds(float(np.median(processes[key]["cpu_s"]))),
                f"{processes[key]['peak_mb']:,.0f} MB",
                fmt_ratio(float(np.median(processes[key]["seconds"])) / base_s),
                fmt_ratio(float(np.median(processes[key]["cpu_s"])) / base_cpu),
                fmt_ratio(processes[key]["peak_mb"] / base_mb),
                f"{max(abs(processes[key]['means'][m] - values[pyt][1][m]) for m in METRICS):.1e}",
            )
            for key, label in PROCESSES.items()
        )
        tables.append(
            (
                f"As processes at {n_queries:,} queries (start to exit, median of 5, the two "
                "commands taking turns; CPU time = user + system, which other work on the "
                "machine inflates far less than wall time; peak RSS of the process; bytecode "
                "compiled first, as pip install does):",
                Table(
                    (
                        "command",
                        "wall time",
                        "CPU time",
                        "peak RSS",
                        "time / pytrec_eval script",
                        "CPU time / pytrec_eval script",
                        "memory / pytrec_eval script",
                        "max |mean diff| vs pytrec_eval",
                    ),
                    rows_proc,
                ),
            )
        )
    scale: dict[str, Any] = {}
    if scale_queries:
        big = write_trec_files(workdir / "scale", scale_queries, depth, seed)
        # the Query-object route would take minutes here: the fast routes stand for rageval
        scale_keys = [k for k in keys if k != "queries"]
        scale = {key: in_child(key, big, 2) for key in scale_keys}
        scale.update(interleaved(big, 2))
        scale_keys += list(PROCESSES)
        pyt_s = scale["pytrec_eval"]["seconds"][-1]
        rows_scale = []
        for key in scale_keys:
            got = scale[key]
            agree = max(abs(got["means"][m] - scale["pytrec_eval"]["means"][m]) for m in METRICS)
            rows_scale.append(
                (
                    LABELS.get(key) or PROCESSES[key],
                    fmt_seconds(got["seconds"][-1]),
                    fmt_seconds(got["seconds"][0]),
                    f"{got['peak_mb']:,.0f} MB",
                    f"{got['peak_mb'] - got['start_mb']:,.0f} MB",
                    fmt_ratio(got["seconds"][-1] / pyt_s),
                    f"{agree:.1e}",
                )
            )
        tables.append(
            (
                f"At {scale_queries:,} queries x {depth} ({scale_queries * depth:,} run lines), each tool "
                "in a fresh Python: a warm-up call, then the timed call:",
                Table(
                    (
                        "tool / path",
                        "timed call",
                        "warm-up call",
                        "peak RSS",
                        "peak above start",
                        "time / pytrec_eval",
                        "max |mean diff| vs pytrec_eval",
                    ),
                    tuple(rows_scale),
                ),
            )
        )
        for path in (big.run, big.qrels):
            path.unlink(missing_ok=True)

    profile_note = None
    if profile or (profile is None and direct_slower):
        ptable, profile_note = profile_direct(files)
        tables.append(("Where the direct path's time goes (cProfile, one call):", ptable))

    notes = [
        f"rageval vs pytrec_eval: direct path {fmt_ratio(timings[direct].median / timings[pyt].median)}"
        f", store path {fmt_ratio(timings[store].median / timings[pyt].median)} "
        "of pytrec_eval's time (above 1x = rageval is slower).",
    ]
    for label, a in agreement.items():
        ok = a["max_query_difference"] <= TOLERANCE
        if label.startswith("ranx"):
            ok_untied = a["max_query_difference_untied"] <= TOLERANCE
            notes.append(
                "ranx equals pytrec_eval on every query without tied scores"
                if ok_untied
                else "ranx DISAGREES with pytrec_eval on queries without ties"
            )
            if not ok:
                notes.append(
                    f"ranx differs on {a['queries_differing']:,} queries, all holding tied scores: "
                    "ranx does not break ties by docno descending as trec_eval does, so its "
                    "means differ slightly (rageval follows trec_eval)."
                )
        elif ok:
            notes.append(
                f"{_short(label)} equals pytrec_eval on every query and metric "
                f"(within {TOLERANCE:g})."
            )
        else:
            notes.append(
                f"{_short(label)} DISAGREES with pytrec_eval (max {a['max_query_difference']:.2e})."
            )
    if with_ranx:
        label = LABELS["ranx"]
        notes.append(
            f"ranx's first call in this process took {fmt_seconds(first_call[label])} "
            f"(numba compiles, or loads its on-disk cache), against "
            f"{fmt_seconds(timings[label].median)} once warm; only warm calls are in the ratios."
        )
    if profile_note:
        notes.append(profile_note)
    if peaks:
        rivals_mem = [k for k in keys if k in ("pytrec_eval", "ranx")]
        lowest = min(rivals_mem, key=lambda k: peaks[k]["peak_mb"])

        def above(key: str) -> float:
            return float(peaks[key]["peak_mb"] - peaks[key]["start_mb"])

        notes.append(
            f"Peak memory at {n_queries:,} queries: rageval direct {peaks['direct']['peak_mb']:,.0f} MB "
            f"({above('direct'):,.0f} MB above its start), store {peaks['store']['peak_mb']:,.0f} MB "
            f"({above('store'):,.0f}); the lower of pytrec_eval and ranx, {_short(LABELS[lowest])}, "
            f"{peaks[lowest]['peak_mb']:,.0f} MB ({above(lowest):,.0f}). Every child starts with the "
            "same imports (the bench module imports rageval), so the columns compare like with like."
        )
    if processes:
        cli, script = processes["cli"], processes["pytrec_eval_script"]
        notes.append(
            f"As processes at {n_queries:,} queries: `rageval evaluate` takes "
            f"{fmt_ratio(float(np.median(cli['seconds'])) / float(np.median(script['seconds'])))} "
            "of a pytrec_eval script's wall time, "
            f"{fmt_ratio(float(np.median(cli['cpu_s'])) / float(np.median(script['cpu_s'])))} "
            f"of its CPU time and {fmt_ratio(cli['peak_mb'] / script['peak_mb'])} "
            "of its peak memory (Python start and imports included on both sides)."
        )
    if help_s is not None:
        notes.append(
            f"`rageval --help` as a process: {fmt_seconds(help_s)} (median of 5). Bytecode "
            f"compiled before the process timings: {', '.join(sorted(set(compiled)))}."
        )
    if scale:
        cli, script = scale["cli"], scale["pytrec_eval_script"]
        notes.append(
            f"As processes at {scale_queries:,} queries: `rageval evaluate` takes "
            f"{fmt_ratio(min(cli['seconds']) / min(script['seconds']))} of a pytrec_eval "
            f"script's wall time, {fmt_ratio(min(cli['cpu_s']) / min(script['cpu_s']))} of its CPU "
            f"time (the faster of 2 calls each) and {fmt_ratio(cli['peak_mb'] / script['peak_mb'])} "
            "of its peak memory."
        )
        pyt_s = scale["pytrec_eval"]["seconds"][-1]
        rivals = {k: v for k, v in scale.items() if k in ("pytrec_eval", "ranx")}
        for key in ("direct", "store"):
            faster = all(scale[key]["seconds"][-1] < v["seconds"][-1] for v in rivals.values())
            leaner = all(
                scale[key]["peak_mb"] < v["peak_mb"]
                and scale[key]["peak_mb"] - scale[key]["start_mb"] < v["peak_mb"] - v["start_mb"]
                for v in rivals.values()
            )
            notes.append(
                f"At {scale_queries:,} queries, rageval {key}: {fmt_ratio(scale[key]['seconds'][-1] / pyt_s)} "
                f"of pytrec_eval's time; {'faster' if faster else 'NOT faster'} than "
                f"{' and '.join(rivals)}, {'with less' if leaner else 'NOT with less'} peak memory."
            )

    return ScenarioResult(
        key="trec",
        title="1. TREC run + qrels end to end",
        setup=(
            f"{n_queries:,} queries x {depth} documents ({n_queries * depth:,} run lines), "
            f"{files.n_judged:,} graded qrels lines (10-30 per query, labels 0-3), seed {seed}; "
            f"metrics {', '.join(METRICS)}. Each time is the median of timed repeats after one "
            "untimed warm-up call."
        ),
        tables=tuple(tables),
        notes=tuple(notes),
        data={
            "n_queries": n_queries,
            "depth": depth,
            "n_judged": files.n_judged,
            "n_tied_queries": len(files.tied),
            "timings": {label: t.to_json() for label, t in timings.items()},
            "means": {label: v[1] for label, v in values.items()},
            "per_query": {label: v[0] for label, v in values.items()},
            "agreement": agreement,
            "first_call_s": first_call,
            "peak_mb": {key: v["peak_mb"] for key, v in peaks.items()},
            "processes": processes,
            "help_s": help_s,
            "scale": {"n_queries": scale_queries, "tools": scale} if scale else None,
            "ratios": {
                "direct_vs_pytrec_eval": timings[direct].median / timings[pyt].median,
                "store_vs_pytrec_eval": timings[store].median / timings[pyt].median,
                "queries_vs_pytrec_eval": timings[LABELS["queries"]].median / timings[pyt].median,
                **(
                    {
                        "direct_vs_ranx": timings[direct].median / timings[LABELS["ranx"]].median,
                        "store_vs_ranx": timings[store].median / timings[LABELS["ranx"]].median,
                    }
                    if with_ranx
                    else {}
                ),
            },
        },
    )


def _short(label: str) -> str:
    return label.split(" (")[0]


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1:]))
