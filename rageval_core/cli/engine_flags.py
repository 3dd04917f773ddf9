"""`rageval evaluate FILE_OR_GLOB --engine spark [--master URL]`: the flags and their command.

The local engine is cli.cmd_evaluate itself; this module adds the flags to the evaluate parser
and runs the Spark path (rageval_core.engines.spark). A flag the Spark path cannot honour is
refused with one line and exit 2, never ignored. Nothing heavy is imported here: `rageval --help`
builds this parser too.
"""

from __future__ import annotations

import argparse
from typing import Any

from rageval_core.errors import UsageError

ENGINES = ("local", "spark")
#: the settings partition.py computes with; any other setting given on the command line is refused
SPARK_SETTINGS = frozenset(
    {
        "k",
        "threshold",
        "scorer",
        "strip_punct",
        "strip_articles",
        "relevance",
        "score_threshold",
        "rel_level",
        "complete",
        "judged_only",
        "numbers_must_match",
    }
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """--engine and --master on the evaluate parser."""
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where to evaluate: in this process (default), or on Apache Spark for runs too large "
        "for one machine (RUN and any FILE after it: native JSONL or Parquet files, folders or "
        "globs, read as one run; ranking and "
        "evidence metrics only; pip install 'rageval[spark]'; docs/scale-out.md)",
    )
    p.add_argument(
        "--master",
        metavar="URL",
        help="the Spark master with --engine spark (default local[*]; e.g. spark://host:7077, "
        "yarn, k8s://...; under spark-submit its own --master applies)",
    )


def refusal(args: argparse.Namespace) -> str | None:
    """Why the Spark path cannot run this command line as given (None: it can)."""
    from rageval_core.settings.schema import BY_NAME

    flags = (
        ("qrels", "--qrels (a TREC run's qrels)"),
        ("by", "--by"),
        ("explain_preset", "--explain-preset"),
        ("ignore_identical_ids", "--ignore-identical-ids"),
        ("stage", "--stage"),
    )
    for dest, shown in flags:
        if getattr(args, dest, None):
            return f"{shown} is not available with --engine spark"
    if args.format not in (None, "native"):
        return (
            f"--format {args.format} is not available with --engine spark: it reads native JSONL "
            "or Parquet (docs/scale-out.md)"
        )
    for name in sorted(getattr(args, "given_settings", ())):
        if name not in SPARK_SETTINGS:
            return f"{BY_NAME[name].flag} is not available with --engine spark (docs/scale-out.md)"
    from rageval_core.matching.keys import is_semantic

    if is_semantic(args.scorer):
        return (
            f"--scorer {args.scorer} is not available with --engine spark: its embedder is not "
            "installed on the executors (docs/scale-out.md)"
        )
    return None


def cmd_evaluate(args: argparse.Namespace) -> int:
    """evaluate RUN on the engine given (cli.cmd_evaluate hands over when it is not local)."""
    if args.engine != "spark":
        raise UsageError("--master applies with --engine spark only")
    why = refusal(args)
    if why is not None:
        raise UsageError(why)
    from rageval_core.cli.settings_flags import settings_from_args
    from rageval_core.engines import spark

    metrics = args.metrics.replace(",", " ").split() if args.metrics else None
    settings = settings_from_args(args)
    fmt = "json" if args.format == "native" else None
    # several files (a glob the shell expanded) are one run; a local path that names no file
    # is said here, before Spark's JVM starts (seconds)
    src = spark.source([args.run, *args.companions], fmt)
    running = spark.active()  # a caller's session (a test's, a notebook's): used, not stopped
    if running is not None and args.master and args.master != running.sparkContext.master:
        raise UsageError(
            f"--master {args.master}: this process already runs Spark on "
            f"{running.sparkContext.master}"
        )
    session = running or spark.start(args.master)
    try:
        out = spark.evaluate(session, src, metrics, settings, per_query=args.per_query)
    finally:
        if running is None:
            spark.stop(session)
    if args.json:
        from rageval_core.terminal import json_text

        print(json_text(out))
    else:
        print(format_spark_report(out, args.per_query))
    return 0


def format_spark_report(out: dict[str, Any], per_query: bool) -> str:
    """The text report of the Spark path: the local report's lines, then what was not computed."""
    import types

    import numpy as np

    from rageval_core.outputs.report_text import format_report

    queries = list(out.get("per_query", {}))
    report = types.SimpleNamespace(
        run=out["run"],
        n_queries=out["n_queries"],
        settings=out["settings"],
        counts=out["counts"],
        metrics={k: float("nan") if v is None else v for k, v in out["metrics"].items()},
        ops={},
        by=None,
        per_query={
            name: np.asarray(
                [out["per_query"][q][name] for q in queries], dtype=np.float64
            )  # None (JSON null) -> NaN
            for name in out["metrics"]
        }
        if per_query
        else {},
        query_ids=queries,
    )
    engine = out["engine"]
    text = format_report(report, per_query=per_query)
    skipped = "; ".join(engine["not_computed"])
    note = f"engine: spark {engine['spark_version']} (master {engine['master']}); not computed: {skipped}"
    if engine.get("queries_with_answers"):
        note += f" ({engine['queries_with_answers']} queries have answers)"
    return f"{text}\n\n{note}"
