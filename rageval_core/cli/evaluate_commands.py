"""The commands that compute: `evaluate` (the local engine; Spark is engine_flags.py),
`compare` and `gate`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import rageval_core.cli.engine_flags as cli_engines
from rageval_core.cli.common import compare_runs, open_store, print_problems
from rageval_core.cli.explain_table import print_explanation
from rageval_core.cli.settings_flags import (
    given_values,
    settings_from_args,
)
from rageval_core.errors import InputError, RagevalError, UsageError
from rageval_core.terminal import json_text


def cmd_evaluate(args: argparse.Namespace) -> int:
    import contextlib

    if args.engine != "local" or args.master:  # Spark (rageval_core.cli.engine_flags)
        return cli_engines.cmd_evaluate(args)

    metrics = args.metrics.replace(",", " ").split() if args.metrics else None
    path = Path(args.run)
    if not path.is_file() and (args.qrels or args.format or args.companions):
        raise UsageError(
            f"{args.run} is not a file: companions, --qrels and --format apply to run files only"
        )
    plain = not (args.companions or args.explain_preset or args.ignore_identical_ids)
    direct_route = bool(path.is_file() and args.qrels and plain)
    if direct_route:
        _load_numpy_with_one_blas_thread()  # before the settings, which load numpy
    settings = settings_from_args(args)
    if direct_route:
        from rageval_core.evaluation.direct import trec_report  # a TREC run: no store at all

        direct = trec_report([path, Path(args.qrels)], args.format, metrics, settings, args.by)
        if direct is not None:
            return _print_report(direct, args)
    from rageval_core import api  # after the direct route, which needs none of it

    with contextlib.ExitStack() as stack:
        if path.is_file():
            files = [path, *map(Path, args.companions)] + ([Path(args.qrels)] if args.qrels else [])
            run = stack.enter_context(api.load(files, format=args.format))
            bring_grades(args, settings, run)
        else:
            run = stack.enter_context(
                api.load(args.run, store=stack.enter_context(open_store(args)))
            )
        if args.explain_preset:  # "why do my numbers differ?" (evaluation/preset_parity.py)
            fixed = given_values(args)
            return print_explanation(api.explain_preset(run, args.explain_preset, **fixed), args)
        report = api.evaluate(run, metrics, settings=settings, by=args.by)
    return _print_report(report, args)


def bring_grades(args: argparse.Namespace, settings: Any, run: Any) -> None:
    """A run file evaluated with --labels beyond its own qrels reads the grades made in rageval
    from --db's store (store-wide, by query and document id): they are copied into the file's
    scratch store. No store file there: no grades (nothing is created)."""
    from rageval_core.settings.label_sources import IMPORTED, parse_labels
    from rageval_core.store.ground_truth import copy_grades, grade_rows
    from rageval_core.store.store import default_path

    if parse_labels(settings.labels) == (IMPORTED,) or not Path(args.db or default_path()).exists():
        return
    ids = [str(q) for q in run.data.query_ids]
    with open_store(args) as store:
        rows = grade_rows(store, ids)
    copy_grades(run.store, rows)


def _load_numpy_with_one_blas_thread() -> None:
    """Import numpy with OpenBLAS limited to one thread, unless this process has numpy already.

    The direct route multiplies no matrices, and OpenBLAS starting a spinning thread per core
    at import took CPU from the reader (docs/benchmarks.md, "Figures behind the code"). The
    environment is left as it was for anything started later."""
    if "numpy" in sys.modules:
        return
    previous = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        if previous is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = previous


def _print_report(report: Any, args: argparse.Namespace) -> int:
    if args.json:
        print(json_text(report.to_json(per_query=args.per_query)))
    else:
        from rageval_core.outputs.report_text import format_report

        print(format_report(report, per_query=args.per_query))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from rageval_core.outputs.compare_text import format_comparison

    metrics = args.metrics.replace(",", " ").split() if args.metrics else None
    if args.json:  # with the diagnosis's transition table
        import rageval_core.cli.diagnose_commands as cli_diagnose

        print(json_text(cli_diagnose.compare_json(args, metrics)))
        return 0
    comparison = compare_runs(args, args.runs, metrics, args.by or (), args.worst)
    print(format_comparison(comparison, worst=args.worst))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    """Exit 0 when every rule holds, 1 when one fails, 2 on bad arguments or input."""
    from rageval_core import api
    from rageval_core.compare import metrics_of
    from rageval_core.outputs.compare_text import format_gate

    try:
        rules = api.rules_of(args.max_drop, args.max_increase)
        if not rules:
            raise UsageError("the gate has no rule: give --max-drop and/or --max-increase")
        comparison = compare_runs(args, [args.baseline, args.candidate], metrics_of(rules))
        result = api.gate(
            comparison,
            max_drop=args.max_drop,
            max_increase=args.max_increase,
            significant_only=args.significant_only,
        )
    except InputError as e:
        print_problems(e.problems, e.truncated)
        return 2
    except RagevalError as e:  # a store that cannot be read is bad input too, never "failed"
        print(f"rageval: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json_text(result.to_json()))
    else:
        print(format_gate(result))
    return 0 if result.passed else 1
