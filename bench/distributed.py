"""Scenario 5: scoring and metrics on Apache Spark (local mode), against evaluate() on one machine.

The same generated native run (bench.native_scale.write_native_run) is evaluated twice, from
the JSONL file each time:
- one machine: `open_file_in_scratch_store` (parse, in-memory store) -> `evaluate()` (pair
  scoring on both cores, then the metrics);
- Spark, master local[N], through the engine `rageval evaluate --engine spark` uses
  (rageval_core/engines/spark.py): Spark's own JSON reader splits the file into N partitions by
  byte range (whole lines, so whole queries) and reads them with partition.SPARK_SCHEMA;
  `mapInArrow` hands each partition's Arrow batches to rageval_core.engines.partition.evaluate_batches
  (score_pairs + the metric registry, one in-memory DuckDB per batch); the few partial sums come
  back with `toArrow()` and partition.combine() reduces them.
The run values must be equal (1e-12) and the per-query values too (a second, untimed job), or
the scenario fails. pyspark is imported only by the engine's functions: the bench extra installs
it (through the spark extra); nothing is downloaded at run time (no spark.jars.packages, no UI,
the driver bound to 127.0.0.1).
"""

from __future__ import annotations

import math
import os
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_runs, fmt_seconds, measure
from bench.native_scale import write_native_run
from rageval_core.engines import partition
from rageval_core.engines import spark as engine
from rageval_core.evaluation.evaluate import evaluate, open_file_in_scratch_store
from rageval_core.evaluation.report import Settings
from rageval_core.rundata import load_run_data

TOLERANCE = 1e-12


def read_run(session: Any, path: Path, partitions: int) -> Any:
    """The native file as a DataFrame of INPUT_SCHEMA rows, in `partitions` byte-range splits."""
    size = path.stat().st_size
    session.conf.set("spark.sql.files.maxPartitionBytes", str(math.ceil(size / partitions)))
    return engine.query_rows(engine.read(session, engine.source(str(path))))


def run(
    workdir: Path,
    n_queries: int = 2_000,
    workers: int = 2,
    k: int = 10,
    repeats: int = 3,
    seed: int = 0,
) -> ScenarioResult:
    """Evaluate one generated run on one machine and on Spark local[workers]; compare."""
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")  # pandas 3 notice
    path = workdir / f"distributed_{n_queries}.jsonl"
    size = write_native_run(path, n_queries, seed=seed)
    metrics = partition.default_metrics(k, "ids")
    settings = {"relevance": "ids", "k": k}

    def single() -> tuple[Any, dict[str, float]]:
        started = time.perf_counter()
        with open_file_in_scratch_store([path]) as store:
            data = load_run_data(store, store.runs()[0].run_id)
            loaded = time.perf_counter()
            report = evaluate(data, metrics, store=store, **settings)
        done = time.perf_counter()
        return report, {"import": loaded - started, "score + metrics": done - loaded}

    single_t, report = measure(single, repeats=repeats)

    started = time.perf_counter()
    spark = engine.start(f"local[{workers}]", app_name="rageval-bench")
    spark.conf.set("spark.sql.shuffle.partitions", str(workers))
    startup_s = time.perf_counter() - started
    try:
        df = read_run(spark, path, workers)
        n_partitions = df.rdd.getNumPartitions()
        s = Settings(relevance="ids", k=k)

        def distributed() -> dict[str, float]:
            return engine.run_values(df, metrics, s)

        spark_t, means = measure(distributed, repeats=repeats)
        per_query = engine.per_query_values(df, metrics, s)
    finally:
        engine.stop(spark)
        path.unlink(missing_ok=True)

    worst = check_equal(means, report.metrics, per_query, report)
    rows = (
        (
            "one machine: import + evaluate() (scoring on all cores)",
            fmt_seconds(single_t.median),
            fmt_runs(single_t),
            f"{n_queries / single_t.median:,.0f}",
        ),
        (
            f"Spark local[{workers}]: read JSON + mapInArrow + combine",
            fmt_seconds(spark_t.median),
            fmt_runs(spark_t),
            f"{n_queries / spark_t.median:,.0f}",
        ),
        (f"Spark local[{workers}]: session start (once)", fmt_seconds(startup_s), "1", ""),
    )
    table = Table(("route", "median", "runs", "queries/s"), rows)
    first_job = spark_t.warmup_s or float("nan")
    ratio = spark_t.median / single_t.median
    cold = startup_s + first_job
    notes = (
        f"Equal results: the {len(means)} run values of the Spark job match evaluate()'s, and so "
        f"do the per-query values (largest difference {worst:.1e}, tolerance {TOLERANCE:.0e}).",
        f"One machine, stage split (median): import {fmt_seconds(single_t.stage_median('import'))}, "
        f"scoring + metrics {fmt_seconds(single_t.stage_median('score + metrics'))}.",
        f"Spark read the {size / 1e6:,.0f} MB file as {n_partitions} partitions; its first job "
        f"took {fmt_seconds(first_job)} (Python workers start, imports), not counted in the median.",
        f"The warm Spark job took {fmt_ratio(ratio)} the one-machine time; counting its session "
        f"start and first job, {fmt_ratio(cold / single_t.median)}. On this machine "
        f"({os.cpu_count()} cores, shared with other work) Spark cannot bring a speed-up: both "
        "routes use the same cores, and Spark adds a JVM, JSON parsing into Java rows and their "
        "conversion to Arrow for the Python workers, which at best hide behind the scoring. "
        "What the example shows is that the per-partition function and the reduce give the "
        "single-machine numbers with no data shared between partitions (the reduce moves one "
        "row per metric per Arrow batch); how the time spreads over a real cluster is not "
        "measured here (docs/scale-out.md).",
    )
    return ScenarioResult(
        key="distributed",
        title="6. Past one machine: scoring and metrics on Spark (local mode)",
        setup=(
            f"A generated native run of {n_queries:,} queries (20 chunks, 1-3 gold spans and "
            f"relevant ids each; seed {seed}), metrics {', '.join(metrics)} (relevance ids, "
            f"scorer partial, threshold 0.7). One machine: import into an in-memory store, "
            f"then evaluate(). Spark {_spark_version()} in local mode with {workers} task "
            f"slots (rageval_core.engines.spark, as `rageval evaluate --engine spark`): JSON reader "
            f"-> mapInArrow(rageval_core.engines.partition.evaluate_batches) -> toArrow() -> "
            f"partition.combine(). Each from the file, {repeats} timed runs "
            f"after a warm-up."
        ),
        tables=(("", table),),
        notes=notes,
        data={
            "n_queries": n_queries,
            "bytes": size,
            "workers": workers,
            "partitions": n_partitions,
            "metrics": means,
            "single_machine": report.metrics,
            "max_difference": worst,
            "timings": {"single": single_t.to_json(), "spark": spark_t.to_json()},
            "spark_startup_s": startup_s,
        },
    )


def check_equal(
    means: dict[str, float], expected: dict[str, float], per_query: pa.Table, report: Any
) -> float:
    """The largest difference between the two routes; AssertionError beyond TOLERANCE."""
    if list(means) != list(expected):
        raise AssertionError(f"metrics differ: {list(means)} vs {list(expected)}")
    worst = 0.0
    for name, value in expected.items():
        got = means[name]
        if math.isnan(value) != math.isnan(got):
            raise AssertionError(f"{name}: Spark {got} vs one machine {value}")
        if not math.isnan(value):
            worst = max(worst, abs(got - value))
    index = {q: i for i, q in enumerate(report.query_ids.tolist())}
    order = np.asarray([index[q] for q in per_query["query_id"].to_pylist()], dtype=np.int64)
    if order.size != len(index) or np.unique(order).size != order.size:
        raise AssertionError(f"Spark returned {order.size} queries, the run has {len(index)}")
    for name in expected:
        ours = per_query[name].to_numpy()
        theirs = report.per_query[name][order]
        if not np.array_equal(np.isnan(ours), np.isnan(theirs)):
            raise AssertionError(f"{name}: the scored queries differ")
        both = ~np.isnan(ours)
        if both.any():
            worst = max(worst, float(np.max(np.abs(ours[both] - theirs[both]))))
    if worst > TOLERANCE:
        raise AssertionError(f"Spark and evaluate() differ by {worst:.3e} (tolerance {TOLERANCE})")
    return worst


def _spark_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "(not installed)"
