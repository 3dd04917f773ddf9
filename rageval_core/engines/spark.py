"""A run's ranking and evidence metrics on Apache Spark: `rageval evaluate FILE_OR_GLOB --engine spark`.

Spark's own readers read the run (native JSONL with partition.SPARK_SCHEMA, or Parquet with the
same columns: a file, a folder or a glob, local or on shared storage such as s3a:// or hdfs://;
several files are one run), one aggregate job counts what the report's counts need and picks the
relevance mode as evaluate() does, and mapInArrow runs partition.evaluate_batches in the
partitions (pair scoring included); the partial sums come back to the driver and
partition.combine() turns them into the run values evaluate() gives on one machine
(tests/core/test_engine_spark.py holds the two equal to 1e-12). docs/scale-out.md.

pyspark is imported inside the functions only: the `spark` extra is optional, and `rageval --help`
never loads it. Nothing is downloaded (no spark.jars.packages) and the UI is off; in local mode
the driver is bound to 127.0.0.1.
"""

from __future__ import annotations

import functools
import glob
import json
import math
import os
import re
import shutil
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval_core.engines import partition
from rageval_core.errors import MAX_PROBLEMS, InputError, Problem, RagevalError, UsageError
from rageval_core.evaluation.report import Settings

#: what this engine does not compute (the output lists them; partition.py's docstring says why)
NOT_COMPUTED = (
    "answer (generation) metrics",
    "judge scores",
    "latency, token and cost summaries (ops)",
    "the lenient-threshold warning",
)
#: besides partition.SPARK_SCHEMA: the header record (the run's name), whether the run has
#: answers (so the output can say they were left out), and the raw text of a line Spark could
#: not read into the schema
READ_SCHEMA = partition.SPARK_SCHEMA + ", rageval_run STRING, answer STRING, _corrupt_record STRING"
CORRUPT = "_corrupt_record"
FILE = "_file"
INPUT_COLUMNS = tuple(field.name for field in partition.INPUT_SCHEMA)
_GLOB = re.compile(r"[*?\[{]")


# --- the session -----------------------------------------------------------------------------


def start(master: str | None = None, app_name: str = "rageval") -> Any:
    """A SparkSession: master (default local[*]) or, under spark-submit, the one it set up."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql.pandas.utils import (
            require_minimum_pandas_version,
            require_minimum_pyarrow_version,
        )

        # pandas 3's notice, whichever module pyspark attributes it to (its check, mapInArrow)
        warnings.filterwarnings("ignore", "PySpark does not yet fully support", FutureWarning)
        # mapInArrow checks for pandas only when the job is planned, after the JVM has started
        require_minimum_pandas_version()
        require_minimum_pyarrow_version()
    except ImportError as e:  # pyspark's PySparkImportError included
        raise UsageError(f"--engine spark needs {_missing(e)}: pip install 'rageval[spark]'") from e
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this process's JVM
    if not submitted:
        java_home = os.environ.get("JAVA_HOME")
        java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
        if java is None or not Path(java).exists():
            raise UsageError(
                "--engine spark needs Java 17 or later for Spark's JVM: `make java`, or install "
                "openjdk-17-jre-headless and put `java` on the PATH"
            )
        master = master or "local[*]"
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # a relevance key given twice keeps its last label, as the native reader (json.loads)
        .config("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
    )
    if master:
        builder = builder.master(master)
    if master and master.startswith("local"):
        os.environ["PYSPARK_PYTHON"] = sys.executable  # workers run this interpreter (rageval)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # a master that cannot be reached, a JVM that does not start
        raise UsageError(f"Spark did not start (master {master}): {_first_line(e)}") from e
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _missing(e: ImportError) -> str:
    """What an ImportError says is missing, in a few words (pyspark's own names the version)."""
    if e.name:  # ModuleNotFoundError: pyspark itself, or a module it imports
        return e.name.split(".")[0]
    params = getattr(e, "getMessageParameters", lambda: None)() or {}
    if "package_name" in params:
        return f"{params['package_name']} >= {params.get('minimum_version', '?')}"
    return _first_line(e)


def active() -> Any:
    """The session this thread already runs (a test's, a notebook's), or None: used as it is."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def stop(spark: Any) -> None:
    """Stop the session and wait for the JVM this process started to exit (when it started one)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)  # None under spark-submit: its JVM is not ours
    if gateway is None or proc is None:
        return
    gateway.shutdown()
    if proc.stdin is not None:
        proc.stdin.close()  # the JVM exits when its stdin closes
    try:
        proc.wait(timeout=60)
    except Exception:  # a JVM that does not stop on its own is ended, not left behind
        proc.kill()
        proc.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None


# --- the input -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """FILE_OR_GLOB as Spark reads it: files, folders or globs (one run); local or Hadoop URLs."""

    paths: tuple[str, ...]
    fmt: str  # "json" (native JSONL) or "parquet"

    @property
    def path(self) -> str:
        """The input as messages name it."""
        more = len(self.paths) - 1
        return self.paths[0] + (f" (and {more} more)" if more else "")


def source(paths: str | Sequence[str], fmt: str | None = None) -> Source:
    """The input and its format (Parquet by its .parquet names, else native JSONL); a local path
    that names no file is a UsageError here, before Spark starts."""
    given = [paths] if isinstance(paths, str) else list(paths)
    names: list[str] = []
    for path in given:
        names += _local_files(path) if "://" not in path else [path.rstrip("/")]
    if fmt is None:
        parquet = [n.endswith(".parquet") for n in names]
        if any(parquet) and not all(parquet):
            raise UsageError(f"{given[0]}: mixes Parquet and other files: name one format's files")
        fmt = "parquet" if all(parquet) else "json"
    return Source(tuple(p if "://" in p else str(Path(p).absolute()) for p in given), fmt)


def _local_files(path: str) -> list[str]:
    """The files a local file, folder or glob names; UsageError when none."""
    if _GLOB.search(path):
        names = sorted(glob.glob(path))
        if not names:
            raise UsageError(f"{path}: no file matches")
        return names
    if Path(path).is_dir():
        names = sorted(str(p) for p in Path(path).iterdir() if p.is_file())
        names = [n for n in names if not Path(n).name.startswith((".", "_"))]  # _SUCCESS
        if not names:
            raise UsageError(f"{path}: the folder holds no file")
        return names
    if Path(path).is_file():
        return [path]
    raise UsageError(f"{path}: no such file or folder")


def read(spark: Any, src: Source) -> Any:
    """The input as a DataFrame: INPUT_COLUMNS, rageval_run, answer, _corrupt_record, _file."""
    from pyspark.sql import functions as F

    try:
        if src.fmt == "parquet":
            df = spark.read.parquet(*src.paths)
            missing = [c for c in ("query_id", "retrieved") if c not in df.columns]
            if missing:
                raise UsageError(
                    f"{src.path}: no {' or '.join(missing)} column (a Parquet run has the columns "
                    "of partition.INPUT_SCHEMA, docs/scale-out.md)"
                )
            types = dict(_ddl_types())
            for name in (*INPUT_COLUMNS, "rageval_run", "answer", CORRUPT):
                if name not in df.columns:
                    df = df.withColumn(name, F.lit(None).cast(types.get(name, "STRING")))
        else:
            df = (
                spark.read.schema(READ_SCHEMA)
                .option("mode", "PERMISSIVE")
                .option("columnNameOfCorruptRecord", CORRUPT)
                .json(list(src.paths))
            )
        return df.withColumn(FILE, F.input_file_name())
    except RagevalError:
        raise
    except Exception as e:
        raise _translated(e, src) from e


def persisted(df: Any) -> Any:
    """df kept by the executors (memory, then their local disk) once the first job has read it:
    the counts, the metrics and the per-query values are three jobs over one read of the input,
    not three reads of it (tests/core/test_spark_cluster.py counts the opens of the file). The
    persisted plan no longer lists the input's files (inputFiles() is empty, even on the
    DataFrame as read): list them before, and hand them to summarise() and diagnose()."""
    from pyspark import StorageLevel

    return df.persist(StorageLevel.MEMORY_AND_DISK)


def _ddl_types() -> Iterator[tuple[str, str]]:
    """(column, Spark type) of READ_SCHEMA."""
    depth, start = 0, 0
    text = READ_SCHEMA + ","
    for i, ch in enumerate(text):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            name, _, kind = text[start:i].strip().partition(" ")
            yield name, kind
            start = i + 1


# --- the run's counts ------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """What one aggregate job finds in the input (query rows: every row but the header)."""

    run: str
    rows: int
    bad: int  # rows Spark could not read into the schema, or without a query_id
    unique_ids: int
    in_run: int
    has_qrels: int
    qrels_in_run: int
    has_spans: int
    has_answers: int
    qrels_hit: int  # queries with a retrieved chunk the qrels label relevant

    def relevance(self, settings: Settings) -> str | None:
        """relevance.resolve_relevance on these counts."""
        if settings.relevance == "ids" and not self.has_qrels:
            raise UsageError(
                f"run {self.run} has no qrels (relevant ids): use --relevance evidence"
            )
        if settings.relevance == "evidence" and not self.has_spans:
            raise UsageError(f"run {self.run} has no gold evidence: use --relevance ids")
        if settings.relevance is not None:
            return settings.relevance
        if self.has_qrels and (not self.has_spans or self.qrels_hit):
            return "ids"
        return "evidence" if self.has_spans else None

    def counts(self, settings: Settings, ids: bool, evidence: bool) -> dict[str, int]:
        """The report's counts, in evaluate()'s order."""
        out = {"queries": self.rows}
        if ids:
            out["scored_ids"] = self.has_qrels if settings.complete else self.qrels_in_run
            out["skipped_no_qrels"] = self.rows - self.has_qrels
            out["missing_from_run"] = self.has_qrels - self.qrels_in_run
        if evidence:
            out["scored_evidence"] = self.has_spans
            out["no_evidence"] = self.rows - self.has_spans
        return out


def summarise(df: Any, src: Source, files: Sequence[str] | None = None) -> Summary:
    """One aggregate job over the input: counts, the header, and the rows that are not queries.

    files: the input's files, listed before df was persisted (default: df.inputFiles())."""
    files = sorted(df.inputFiles()) if files is None else files
    from pyspark.sql import functions as F

    header = F.col("rageval_run").isNotNull()
    query = ~header
    qrels = F.col("relevance").isNotNull() | F.col("relevant_ids").isNotNull()
    in_run = F.col("retrieved").isNotNull()
    hit = F.exists(
        "retrieved",
        lambda c: (
            F.coalesce(
                F.col("relevance")[c["doc_id"]],
                F.when(F.array_contains("relevant_ids", c["doc_id"]), F.lit(1)),
                F.lit(0),
            )
            > 0
        ),
    )

    def count(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    bad = (
        F.col(CORRUPT).isNotNull()
        | (query & F.col("query_id").isNull())
        | (header & F.col("query_id").isNotNull())
    )
    row = df.agg(
        count(query).alias("rows"),
        count(bad).alias("bad"),
        F.countDistinct(F.when(query, F.col("query_id"))).alias("unique_ids"),
        count(query & F.col("query_id").isNotNull()).alias("with_ids"),
        count(query & in_run).alias("in_run"),
        count(query & qrels).alias("has_qrels"),
        count(query & qrels & in_run).alias("qrels_in_run"),
        count(query & (F.size("evidence") > 0)).alias("has_spans"),
        count(query & F.col("answer").isNotNull()).alias("has_answers"),
        count(query & hit).alias("qrels_hit"),
        F.min(F.when(header, F.struct(F.col(FILE), F.col("rageval_run")))).alias("header"),
    ).collect()[0]
    name = _run_name(row["header"], src)
    summary = Summary(
        run=name,
        **{k: int(row[k] or 0) for k in Summary.__dataclass_fields__ if k != "run"},
    )
    if summary.bad or int(row["with_ids"] or 0) != summary.unique_ids:
        raise diagnose(df, src, files)
    if not summary.rows:  # as the native reader says it
        raise InputError([Problem(_shown(files[0]), 0, "file", "no queries")])
    return summary


def _run_name(header: Any, src: Source) -> str:
    """The first file's header name, as the native reader names a run; else the input's stem."""
    if header is not None:
        try:
            info = json.loads(header[1])
        except ValueError:
            info = None
        if isinstance(info, dict) and isinstance(info.get("name"), str) and info["name"]:
            return str(info["name"])
    stem = Path(src.paths[0].rstrip("/")).name
    return _GLOB.split(stem)[0].removesuffix(".parquet").removesuffix(".jsonl") or "run"


# --- the metrics -----------------------------------------------------------------------------


def evaluate(
    spark: Any,
    path: str | Sequence[str] | Source,
    metrics: Sequence[str] | None,
    settings: Settings,
    *,
    fmt: str | None = None,
    per_query: bool = False,
) -> dict[str, Any]:
    """The report of the run at path as evaluate()'s to_json() gives it, for the metrics computed
    here (ops is null; the "engine" key says what was left out)."""
    from rageval_core.metrics.latency_cost import to_json_value
    from rageval_core.settings.label_sources import IMPORTED, parse_labels

    if parse_labels(settings.labels) != (IMPORTED,):  # grades made in rageval live in a store
        raise UsageError(
            "--engine spark reads the files' own qrels only: --labels needs the local engine"
        )
    src = path if isinstance(path, Source) else source(path, fmt)
    raw = read(spark, src)
    files = sorted(raw.inputFiles())  # a listing, not a read; the persisted plan has none
    df = persisted(raw)
    try:
        summary = summarise(df, src, files)
        relevance = summary.relevance(settings)
        names = (
            list(metrics)
            if metrics
            else partition.default_metrics(settings.k, relevance, evidence=bool(summary.has_spans))
        )
        if relevance is None and names and not metrics:
            raise UsageError(
                f"run {summary.run} has neither qrels nor gold evidence: ranking metrics need one"
            )
        measures, s = partition.plan(names, settings, relevance=relevance)
        names = [str(m) for m in measures]
        families = {m.spec.family for m in measures}
        rows = query_rows(df)
        options = {"source": src.path if src.fmt == "parquet" else "partition"}
        values = run_values(rows, names, s, **options)
        out: dict[str, Any] = {
            "run": summary.run,
            "n_queries": summary.rows,
            "settings": s.to_json(relevance),
            "counts": summary.counts(
                s,
                ids="ranking" in families and relevance == "ids",
                evidence="evidence" in families
                or ("ranking" in families and relevance == "evidence"),
            ),
            "metrics": {name: values.get(name, math.nan) for name in names},
        }
        if per_query:
            table = per_query_values(rows, names, s, **options)
            columns = {name: table[name].to_pylist() for name in names}
            out["per_query"] = {
                qid: {name: columns[name][i] for name in names}
                for i, qid in enumerate(table["query_id"].to_pylist())
            }
    except RagevalError:
        raise
    except Exception as e:
        raise _translated(e, src, df, files) from e
    finally:
        df.unpersist()
    out["ops"] = None
    out["engine"] = {
        "name": "spark",
        "master": spark.sparkContext.master,
        "spark_version": spark.version,
        "not_computed": list(NOT_COMPUTED),
        # the run's answers were read past, not evaluated: how many queries have one
        **({"queries_with_answers": summary.has_answers} if summary.has_answers else {}),
    }
    return to_json_value(out)  # type: ignore[no-any-return]


def _queries(df: Any) -> Any:
    """The rows that are queries (every row but the header record)."""
    return df["rageval_run"].isNull()


def query_rows(df: Any) -> Any:
    """read()'s DataFrame as partition.INPUT_SCHEMA rows: the queries, their input columns."""
    return df.where(_queries(df)).select(*INPUT_COLUMNS)


def run_values(
    rows: Any, names: Sequence[str], settings: Settings, **options: Any
) -> dict[str, float]:
    """{metric: run value}: evaluate_batches in every partition (mapInArrow), then combine()."""
    job = functools.partial(
        partition.evaluate_batches,
        metrics=list(names),
        settings=settings,
        per_query=False,
        **options,
    )
    parts = rows.mapInArrow(job, partition.PARTIAL_SPARK_SCHEMA).toArrow()
    return partition.combine([parts])


def per_query_values(rows: Any, names: Sequence[str], settings: Settings, **options: Any) -> Any:
    """Every query's values as one Arrow table (evaluate_partition's columns; a second job)."""
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    # mapInArrow matches columns by position: declare them in evaluate_partition's order
    schema = partition.per_query_schema(list(names), settings)
    fields = [
        StructField(f.name, StringType() if f.name == "query_id" else DoubleType()) for f in schema
    ]
    job = functools.partial(
        partition.evaluate_batches,
        metrics=list(names),
        settings=settings,
        per_query=True,
        **options,
    )
    return rows.mapInArrow(job, StructType(fields)).toArrow()


# --- bad input -------------------------------------------------------------------------------


def _translated(
    e: BaseException, src: Source, df: Any = None, files: Sequence[str] | None = None
) -> RagevalError:
    """A Spark or worker error as rageval's: a missing path, or the input's problems."""
    text = str(e)
    if "PATH_NOT_FOUND" in text or "Path does not exist" in text:
        named = re.search(r"Path does not exist: (\S+?)\.?(?:\s|$)", text)
        missing = named.group(1) if named and len(src.paths) > 1 else src.path
        return UsageError(f"{missing}: no such file or folder")
    if "rageval_core.errors.InputError" in text:
        if src.fmt == "json" and df is not None:  # rageval's own reader says where, line by line
            return diagnose(df, src, files)
        found = re.findall(r"^(\S.*?:\d+: .*)$", text.split("InputError:", 1)[1], re.M)
        return UsageError(
            f"{src.path}: a row does not fit the input (row numbers count within Spark's Arrow "
            f"batch): {found[0] if found else _first_line(e)}"
        )
    match = re.search(r"rageval_core\.errors\.UsageError: (.*)", text)
    if match:
        return UsageError(match.group(1))
    if "AnalysisException" in type(e).__name__ or "UNABLE_TO_INFER_SCHEMA" in text:
        return UsageError(f"{src.path}: Spark cannot read it: {_first_line(e)}")
    raise e


def diagnose(df: Any, src: Source, files: Sequence[str] | None = None) -> InputError | UsageError:
    """The input's problems as `file:line: field: problem`, from the native reader's checks run
    over every line of every file in the partitions (only when Spark has reported a bad row)."""
    from pyspark.sql import functions as F

    from rageval_core.formats.fields import quoted

    spark = df.sparkSession
    files = sorted(df.inputFiles()) if files is None else files
    dup_rows = (
        df.where(_queries(df) & F.col("query_id").isNotNull())
        .groupBy("query_id")
        .count()
        .where("count > 1")
        .limit(MAX_PROBLEMS)
        .collect()
    )
    dups = frozenset(r["query_id"] for r in dup_rows)
    problems: list[Problem] = []
    first_seen: dict[str, str] = {}
    more = 0
    for uri in files:
        shown = _shown(uri)
        check = functools.partial(check_lines, shown=shown, dups=dups)
        lines = spark.sparkContext.textFile(uri).zipWithIndex().mapPartitions(check)
        for line, field, problem in lines.collect() if dups else lines.take(MAX_PROBLEMS + 1):
            if field == "query_id" and problem in dups:  # a duplicate: the first one is not
                first = first_seen.setdefault(problem, f"{shown}:{line}")
                if first == f"{shown}:{line}":
                    continue
                where = first.removeprefix(f"{shown}:")
                problem = f"duplicate {quoted(problem)} (first on line {where})"
            if len(problems) < MAX_PROBLEMS:
                problems.append(Problem(shown, line, field, problem))
            else:
                more += 1
    if not problems:
        return UsageError(
            f"{src.path}: Spark's JSON reader could not read some records into the input "
            "schema, and rageval's reader finds no problem in them (docs/scale-out.md)"
        )
    return InputError(problems, more)


def check_lines(
    rows: Iterable[tuple[str, int]], shown: str, dups: frozenset[str]
) -> Iterator[tuple[int, str, str]]:
    """(line, field, problem) of each bad line: the native reader's checks on one line each.

    A duplicate query id comes out as (line, "query_id", the id): the driver keeps the first.
    """
    from rageval_core.errors import ProblemLog
    from rageval_core.formats.base import HEADER_KEY
    from rageval_core.formats.fields import Check
    from rageval_core.formats.jsonarray import DECODER, error_field
    from rageval_core.formats.native import parse_query

    for text, index in rows:
        line = index + 1
        if line == 1:
            text = text.removeprefix("\ufeff")
            if text.lstrip().startswith("["):  # the native format's other form
                yield (
                    line,
                    "file",
                    "a JSON array: --engine spark reads one query per line (JSON Lines); "
                    "`rageval export RUN --to jsonl` writes a stored run that way",
                )
                return
        if not text.strip():
            continue
        try:
            obj = DECODER.decode(text)
        except json.JSONDecodeError as e:  # as the native reader reports it
            yield line, error_field(e), f"{e.msg} (column {e.colno})"
            continue
        if isinstance(obj, dict) and HEADER_KEY in obj:
            if line != 1:
                yield line, HEADER_KEY, "the header record must be the first record of the file"
            continue
        log = ProblemLog()
        parse_query(obj, Check(shown, line, log), set())
        for p in log.errors:
            yield p.line, p.field, p.problem
        if isinstance(obj, dict) and obj.get("query_id") in dups:
            yield line, "query_id", obj["query_id"]


def _shown(uri: str) -> str:
    """A file as problems name it: a local path relative to the working directory, else its URL."""
    from rageval_core.formats.base import display_path

    if uri.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return display_path(Path(unquote(urlparse(uri).path)))
    return uri


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
