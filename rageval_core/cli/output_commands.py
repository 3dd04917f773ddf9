"""The CLI's output commands: `fuse`, `report`, `export` (jsonl, parquet, mlflow) and
`compare --table`. Heavy modules are imported inside the commands (`rageval --help` stays fast)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rageval_core.cli.path_args import OUTPUT, RUN, add_path_argument, check_output, write_output
from rageval_core.errors import ProblemLog, UsageError

EXPORT_TARGETS = ("jsonl", "parquet", "mlflow", "qrels")
#: file suffixes `fuse --out` writes as TREC run lines (any other: native JSONL)
TREC_SUFFIXES = (".trec", ".run", ".txt")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add fuse, report and export to the subcommands, and --table to compare."""
    from rageval_core.settings.fusion_defaults import DEFAULT_RRF_K, METHODS

    p = sub.add_parser(
        "fuse",
        parents=[common],
        help="fuse runs into one (reciprocal rank fusion, CombSUM, CombMNZ), as ranx's fuse (RRF ties ranked as trec_eval does)",
    )
    add_path_argument(
        p,
        "runs",
        kind=RUN,
        nargs="+",
        metavar="RUN",
        help="two or more stored run names or run files",
    )
    p.add_argument("--method", choices=METHODS, default="rrf", help="fusion method (default rrf)")
    p.add_argument(
        "--k",
        type=float,
        default=DEFAULT_RRF_K,
        help=f"rrf's rank constant: 1 / (k + rank) (default {DEFAULT_RRF_K})",
    )
    p.add_argument(
        "--depth", type=int, metavar="N", help="keep the top N fused documents per query"
    )
    p.add_argument("--name", help="the fused run's name (default METHOD-RUN1-RUN2...)")
    add_path_argument(
        p,
        "--out",
        kind=OUTPUT,
        metavar="FILE",
        help="write the fused run to FILE (.trec/.run/.txt: TREC run lines; else native JSONL) "
        "instead of storing it",
    )
    p.set_defaults(func=cmd_fuse)

    p = sub.add_parser(
        "report",
        parents=[common],
        help="write one self-contained HTML report (no script, no request) of one or more runs",
    )
    add_path_argument(
        p, "runs", kind=RUN, nargs="+", metavar="RUN", help="stored run names or run files"
    )
    add_path_argument(
        p, "--out", kind=OUTPUT, required=True, metavar="FILE", help="the .html file to write"
    )
    p.add_argument("--metrics", help='e.g. "P@5 nDCG@10 RR" (default: the default metrics)')
    from rageval_core.cli.settings_flags import add_settings_arguments, add_stat_arguments

    add_settings_arguments(p)
    add_stat_arguments(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "export",
        parents=[common],
        help="write a run back as native JSONL, its labels as TREC qrels, its per-query table as "
        "Parquet, or log it to MLflow",
    )
    p.add_argument("run", help="run name or id")
    p.add_argument(
        "--to",
        required=True,
        metavar="TARGET",
        help="jsonl, parquet, mlflow or qrels (the labels --labels counts, as TREC qrels; a "
        "file name: native JSONL to that file, as before)",
    )
    p.add_argument("--out", metavar="FILE", help="the file to write (jsonl, parquet, qrels)")
    p.add_argument("--metrics", help="the metrics of parquet and mlflow (default: the default set)")
    p.add_argument("--tracking-uri", metavar="URI", help="MLflow tracking URI (default: MLflow's)")
    p.add_argument("--experiment", metavar="NAME", help="MLflow experiment (default rageval)")
    add_settings_arguments(p)
    p.set_defaults(func=cmd_export)

    compare = sub.choices["compare"]
    compare.add_argument(
        "--table",
        choices=("markdown", "latex"),
        help="print the means as a Markdown or LaTeX table (as ranx), for papers and pull requests",
    )
    compare.set_defaults(func=cmd_compare)


def _metrics(args: argparse.Namespace) -> list[str] | None:
    return args.metrics.replace(",", " ").split() if getattr(args, "metrics", None) else None


def cmd_fuse(args: argparse.Namespace) -> int:
    from rageval_core.cli.common import open_store
    from rageval_core.compare.fusion import fuse_queries, stored_queries, write_trec_run

    files = [r for r in args.runs if Path(r).is_file()]
    need_store = args.out is None or len(files) < len(args.runs)
    store = open_store(args) if need_store else None
    try:
        with stored_queries(args.runs, store) as runs:
            fused = fuse_queries(runs, args.method, args.k, args.depth, args.name)
        if args.out is not None:
            out = Path(args.out)
            with write_output(args.out) as partial:
                if out.suffix.lower() in TREC_SUFFIXES:
                    n = write_trec_run(fused, partial)
                else:
                    from rageval_core.formats.native import write_native

                    n = write_native(fused.info, fused.queries, partial)
            print(f"wrote {n} fused queries ({args.method}) to {out}")
            return 0
        from rageval_core.model import ParsedRun

        assert store is not None  # opened above whenever there is no --out
        log = ProblemLog()
        parsed = ParsedRun(fused.info, fused.queries, "native", (fused.info.description or "",))
        result = store.import_run(parsed, log, name=args.name)
        verb = "imported" if result.created else "already stored"
        print(f"{verb}: {result.run.name} ({result.run.n_queries} queries, {args.method})")
        return 0
    finally:
        if store is not None:
            store.close()


def cmd_export(args: argparse.Namespace) -> int:
    from rageval_core.cli.common import open_store
    from rageval_core.cli.settings_flags import settings_from_args

    target = args.to
    out = args.out
    if target not in EXPORT_TARGETS:  # `export RUN --to FILE`, as before: native JSONL
        if out is not None:
            raise UsageError(f"--to {target}: expected one of {', '.join(EXPORT_TARGETS)}")
        target, out = "jsonl", target
    if target in ("jsonl", "parquet", "qrels") and out is None:
        raise UsageError(f"export --to {target} needs --out FILE")
    if out is not None:  # before the store is opened and the run evaluated
        check_output(out, "--out" if args.out is not None else "--to")
    with open_store(args) as store:
        if target == "jsonl":
            from rageval_core.importing import export_native

            with write_output(out) as partial:
                n = export_native(store, args.run, partial)
            print(f"exported {n} queries to {out}")
            return 0
        if target == "qrels":  # the labels that count (--labels) as TREC qrels
            from rageval_core.evaluation.labels import resolved_qrels
            from rageval_core.outputs.exports import write_trec_qrels
            from rageval_core.terminal import shown

            labels = settings_from_args(args).labels
            rows, counts = resolved_qrels(store, args.run, labels)
            with write_output(out) as partial:
                n = write_trec_qrels(rows, partial)
            counted = ", ".join(f"{source} {k}" for source, k in counts.items())
            print(f"wrote {n} labels ({counted}) of {shown(args.run)} to {out}")
            return 0
        from rageval_core.evaluation.evaluate import evaluate
        from rageval_core.rundata import load_stored

        data = load_stored(store, args.run)
        report = evaluate(data, _metrics(args), store=store, settings=settings_from_args(args))
        if target == "parquet":
            from rageval_core.outputs.exports import write_per_query_parquet

            with write_output(out) as partial:
                n = write_per_query_parquet(report, partial)
            print(f"wrote the per-query table of {report.run} ({n} queries) to {out}")
            return 0
        from rageval_core.outputs.exports import export_mlflow

        exp_id, run_id = export_mlflow(
            report, data.run.settings or {}, args.tracking_uri, args.experiment
        )
        print(f"logged {report.run} to MLflow: experiment {exp_id}, run {run_id}")
        return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from rageval_core.cli.evaluate_commands import cmd_compare as plain_compare
    from rageval_core.cli.common import compare_runs

    if not args.table:
        return plain_compare(args)
    from rageval_core.outputs.paper_tables import comparison_table

    comparison = compare_runs(args, args.runs, _metrics(args), args.by or (), args.worst)
    print(comparison_table(comparison, args.table), end="")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from rageval_core.cli.common import open_store
    from rageval_core.cli.settings_flags import settings_from_args
    from rageval_core.compare import StatOptions
    from rageval_core.outputs.html_report import write_report

    files = [r for r in args.runs if Path(r).is_file()]
    store = open_store(args) if len(files) < len(args.runs) else None
    try:
        options = StatOptions(
            n_permutations=args.permutations,
            n_bootstrap=args.bootstrap,
            seed=args.seed,
            alpha=args.alpha,
        )
        with write_output(args.out) as partial:
            write_report(
                args.runs,
                partial,
                metrics=_metrics(args),
                store=store,
                settings=settings_from_args(args),
                options=options,
            )
    finally:
        if store is not None:
            store.close()
    path = Path(args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)", file=sys.stdout)
    return 0
