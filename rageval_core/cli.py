"""The `rageval` command: a thin argparse front over the core's verbs."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval_core import cli_attach, cli_diagnose, cli_engines, cli_judge, cli_outputs, cli_paths
from rageval_core import threads
from rageval_core.cli_paths import INPUT, OUTPUT_FOLDER, RUN, add_path_argument, on_spark
from rageval_core.cli_presets import print_explanation
from rageval_core.cli_signals import SigintSeen, interrupted, silence
from rageval_core.cli_settings import (
    add_settings_arguments,
    add_stat_arguments,
    given_values,
    settings_from_args,
)
from rageval_core.cli_readers import add_reader_arguments, reader_options
from rageval_core.errors import EXIT_CODES, InputError, RagevalError, UsageError
from rageval_core.terminal import EscapingWriter, json_text, shown, text_table


def _store(args: argparse.Namespace) -> Any:
    """The store, waiting (and saying so) while another process holds it; tells of interruptions."""
    from rageval_core.store import Store
    from rageval_core.store.locking import StoreBusyError, wait_s
    from rageval_core.store.store import default_path

    cli_paths.check_store_path(args.db or default_path())  # a FIFO: DuckDB would wait for good
    try:
        store = Store(args.db, wait_s=0)
    except StoreBusyError as e:
        print(
            f"rageval: the store {e.path} is in use by another process{e.holder} (an import or "
            f"the dashboard); waiting up to {wait_s():g} s ...",
            file=sys.stderr,
        )
        store = Store(args.db)
    _tell_interrupted(store)
    return store


def _tell_interrupted(store: Any) -> None:
    """Say (once) which imports or scorings a killed process left unfinished."""
    found = store.interrupted()
    for entry in found:
        print(f"rageval: note: {entry.message}", file=sys.stderr)
    store.acknowledge_interrupted(found)


def _print_problems(problems: Sequence[Any], truncated: int = 0) -> None:
    for p in problems:
        print(p, file=sys.stderr)
    if truncated:
        print(f"... and {truncated} more problems", file=sys.stderr)


class _Bars:
    """tqdm bars per (stage, label), shown only when a step takes more than a moment."""

    def __init__(self) -> None:
        self.bars: dict[tuple[str, str], Any] = {}

    def __call__(self, stage: str, label: str, done: int, total: int | None) -> None:
        from tqdm import tqdm

        key = (stage, label)
        if key not in self.bars:
            desc = f"importing {label}" if stage == "import" else f"scoring evidence of {label}"
            # the bar redraws with \r on the stream under main()'s EscapingWriter; its label is
            # user text (a file or run name), escaped here
            self.bars[key] = tqdm(
                desc=shown(desc),
                unit=" queries",
                total=total,
                delay=0.5,
                file=getattr(sys.stderr, "raw", sys.stderr),
                leave=False,
            )
        bar = self.bars[key]
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def cmd_import(args: argparse.Namespace) -> int:
    return _import(args, [Path(p) for p in args.files], args.format, args.name, not args.no_score)


def _import(
    args: argparse.Namespace, paths: list[Path], fmt: str | None, name: str | None, score: bool
) -> int:
    """Import paths into the store of args (--db), printing what happened; the exit code."""
    from rageval_core.importing import import_paths

    bars = _Bars()
    with _store(args) as store:
        try:
            out = import_paths(store, paths, fmt, name, progress=bars, score=score)
        finally:
            bars.close()
    _print_problems(out.problems, out.truncated)
    for verb, runs in (("imported", out.imported), ("already stored", out.existing)):
        for run in runs:
            print(
                f"{verb}: {run.name} ({run.n_queries} queries, depth {run.max_depth}) "
                f"from {', '.join(run.sources)}"
            )
    for scoring in out.scorings:
        if not scoring.cached:
            print(
                f"scored {scoring.n_pairs} evidence x chunk pairs ({scoring.scorer}) "
                f"in {scoring.seconds:.1f} s"
            )
    for source in out.failed:
        print(f"{source}: import failed, nothing was stored", file=sys.stderr)
    return 2 if out.failed else 0


def _run_row(r: Any) -> list[Any]:
    return [r.name, r.format, r.n_queries, r.max_depth, r.created_at or "", str(r.imported_at)[:19]]


def cmd_runs(args: argparse.Namespace) -> int:
    with _store(args) as store:
        runs = store.runs()
    if args.json:
        print(json_text([_run_json(r) for r in runs], default=str))
    elif not runs:
        print("no runs yet: `rageval import FILE` or `make run` imports the sample runs")
    else:
        print(
            text_table(
                ["name", "format", "queries", "depth", "created_at", "imported"],
                [_run_row(r) for r in runs],
            )
        )
    return 0


def _run_json(r: Any) -> dict[str, Any]:
    keys = [
        "run_id",
        "name",
        "format",
        "sources",
        "created_at",
        "description",
        "imported_at",
        "settings",
        "price_prompt_per_1k",
        "price_completion_per_1k",
        "n_queries",
        "n_chunks",
        "max_depth",
        "has_qrels",
        "has_evidence",
        "has_latency",
        "has_tokens",
        "has_answers",
        "tag_keys",
        "content_hash",
    ]
    return {k: getattr(r, k) for k in keys}


def cmd_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        run = store.run(args.run)
    facts = _run_json(run)
    if args.json:
        print(json_text(facts, default=str))
    else:
        width = max(len(k) for k in facts)
        for k, v in facts.items():
            # a list (sources, tag keys) as its items, not as Python's tuple repr
            text = json.dumps(v) if isinstance(v, dict) else v
            if isinstance(v, (list, tuple)):
                text = ", ".join(str(x) for x in v)
            print(f"{k.ljust(width)}  {'' if text is None else text}")
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    with _store(args) as store:
        store.rename(args.run, args.new_name)
    print(f"renamed {args.run} -> {args.new_name}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with _store(args) as store:
        run = store.run(args.run)
        store.delete(run.run_id)
    print(f"deleted {run.name}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from rageval_core.demo import generate

    out = Path(args.out)
    # written into a folder of its own inside out, then moved: never half a run at a run's name
    with cli_paths.write_folder(args.out) as staging:
        written = generate(
            staging,
            n_queries=args.queries,
            seed=args.seed,
            progress=lambda s: print(s.replace(str(staging), str(out)), file=sys.stderr),
        )
    paths = [out / p.name for p in written]
    for p in paths:
        print(f"wrote {p} ({p.stat().st_size / 1e6:.1f} MB)")
    if args.db is None:  # --db given: the new runs go into that store too
        print(f"import them with: rageval import {' '.join(str(p) for p in paths)}")
        return 0
    return _import(args, paths, None, None, True)


#: what `rageval dashboard` needs beyond the core (the `dashboard` extra of pyproject.toml)
DASHBOARD_EXTRA = ("streamlit", "plotly", "pandas")


def missing_dashboard_packages() -> list[str]:
    """The dashboard extra's packages this Python cannot import."""
    import importlib.util

    return [name for name in DASHBOARD_EXTRA if importlib.util.find_spec(name) is None]


def cmd_dashboard(args: argparse.Namespace) -> int:
    missing = missing_dashboard_packages()
    if missing:
        raise UsageError(
            f"the dashboard needs {', '.join(missing)}, which `pip install rageval` leaves out: "
            "pip install 'rageval[dashboard]' (the core and every other command work without it)"
        )
    from rageval_dashboard import server
    from rageval_core.store.store import default_path

    db = Path(args.db or default_path()).expanduser().resolve()
    cli_paths.check_store_path(str(db))
    if not server.is_loopback(args.host):
        print(
            f"rageval: warning: the dashboard listens on {args.host}, not on this machine only: "
            "anyone who can reach this port sees every stored run's queries, chunks and answers",
            file=sys.stderr,
        )
    print(f"rageval: store {db}", file=sys.stderr)
    return server.serve(db, args.port, args.host)


def cmd_evaluate(args: argparse.Namespace) -> int:
    import contextlib

    if args.engine != "local" or args.master:  # Spark (rageval_core.cli_engines)
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
        from rageval_core.direct import trec_report  # a TREC run: no store at all

        direct = trec_report([path, Path(args.qrels)], args.format, metrics, settings, args.by)
        if direct is not None:
            return _print_report(direct, args)
    from rageval_core import api  # after the direct route, which needs none of it

    with contextlib.ExitStack() as stack:
        if path.is_file():
            files = [path, *map(Path, args.companions)] + ([Path(args.qrels)] if args.qrels else [])
            run = stack.enter_context(api.load(files, format=args.format))
        else:
            run = stack.enter_context(api.load(args.run, store=stack.enter_context(_store(args))))
        if args.explain_preset:  # "why do my numbers differ?" (rageval_core.parity)
            fixed = given_values(args)
            return print_explanation(api.explain_preset(run, args.explain_preset, **fixed), args)
        report = api.evaluate(run, metrics, settings=settings, by=args.by)
    return _print_report(report, args)


def _load_numpy_with_one_blas_thread() -> None:
    """Import numpy with OpenBLAS limited to one thread, unless this process has numpy already.

    The direct route multiplies no matrices, and OpenBLAS starting a spinning thread per core
    at import took 0.05-0.08 s of the 2-core bench machine's CPU from the reader (0.49 s to
    0.41 s wall under load). The environment is left as it was for anything started later."""
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
        from rageval_core.report_text import format_report

        print(format_report(report, per_query=args.per_query))
    return 0


def _compare_runs(
    args: argparse.Namespace,
    runs: Sequence[Any],
    metrics: list[str] | None,
    by: Sequence[str] = (),
    n_worst: int = 0,
) -> Any:
    """compare() on stored names (in --db) and/or run files; the store is opened only when needed."""
    import contextlib

    from rageval_core import api
    from rageval_core.compare import StatOptions

    options = StatOptions(
        n_permutations=args.permutations,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        alpha=args.alpha,
    )
    with contextlib.ExitStack() as stack:
        named = [r for r in runs if isinstance(r, str) and not Path(r).is_file()]
        store = stack.enter_context(_store(args)) if named else None
        return api.compare(
            list(runs),
            metrics,
            store=store,
            settings=settings_from_args(args),
            by=by,
            options=options,
            n_worst=n_worst,
        )


def cmd_compare(args: argparse.Namespace) -> int:
    from rageval_core.compare import format_comparison

    metrics = args.metrics.replace(",", " ").split() if args.metrics else None
    if args.json:  # with the diagnosis's transition table
        from rageval_core import cli_diagnose

        print(json_text(cli_diagnose.compare_json(args, metrics)))
        return 0
    comparison = _compare_runs(args, args.runs, metrics, args.by or (), args.worst)
    print(format_comparison(comparison, worst=args.worst))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    """Exit 0 when every rule holds, 1 when one fails, 2 on bad arguments or input."""
    from rageval_core import api
    from rageval_core.compare import format_gate, metrics_of

    try:
        rules = api.rules_of(args.max_drop, args.max_increase)
        if not rules:
            raise UsageError("the gate has no rule: give --max-drop and/or --max-increase")
        comparison = _compare_runs(args, [args.baseline, args.candidate], metrics_of(rules))
        result = api.gate(
            comparison,
            max_drop=args.max_drop,
            max_increase=args.max_increase,
            significant_only=args.significant_only,
        )
    except InputError as e:
        _print_problems(e.problems, e.truncated)
        return 2
    except RagevalError as e:  # a store that cannot be read is bad input too, never "failed"
        print(f"rageval: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json_text(result.to_json()))
    else:
        print(format_gate(result))
    return 0 if result.passed else 1


def build_parser() -> argparse.ArgumentParser:
    from rageval_core.formats.detect import FORMATS

    db_help = "the DuckDB store (default: $RAGEVAL_DB or .rageval/rageval.duckdb)"
    parser = argparse.ArgumentParser(
        prog="rageval", description="Evaluate the retrieval step of RAG systems.", epilog=EXIT_CODES
    )
    parser.add_argument("--db", help=db_help)
    # --db may come before or after the command; SUPPRESS keeps a subcommand from resetting it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("import", parents=[common], help="validate run files and store them")
    add_path_argument(
        p,
        "files",
        kind=INPUT,
        folders=True,  # a BEIR dataset's folder
        nargs="+",
        metavar="FILE",
        help="run files (a TREC run may come with its qrels file)",
    )
    p.add_argument(
        "--name",
        help="name for the run (default: from the file's header or its name); an OpenInference "
        "export's two stages become NAME and NAME@reranker",
    )
    p.add_argument("--format", choices=FORMATS, help="force a format instead of detecting it")
    add_reader_arguments(p)
    p.add_argument(
        "--no-score",
        action="store_true",
        help="do not score evidence pairs now (they are scored on first use)",
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("runs", parents=[common], help="list stored runs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("show", parents=[common], help="show a run's facts")
    p.add_argument("run", help="run name or id")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("rename", parents=[common], help="rename a run")
    p.add_argument("run", help="run name or id")
    p.add_argument("new_name")
    p.set_defaults(func=cmd_rename)

    p = sub.add_parser("delete", parents=[common], help="delete a run and everything stored for it")
    p.add_argument("run", help="run name or id")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser(
        "demo",
        parents=[common],
        help="regenerate the sample runs (and import them into the store given by --db)",
    )
    add_path_argument(
        p,
        "--out",
        kind=OUTPUT_FOLDER,
        default="sample_runs",
        help="output folder (default: sample_runs)",
    )
    p.add_argument("--queries", type=int, default=360, help="queries per run (default: 360)")
    p.add_argument("--seed", type=int, default=7)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "evaluate", parents=[common], help="compute metrics for a run (file or stored name)"
    )
    add_path_argument(p, "run", kind=RUN, folders=on_spark, metavar="RUN_FILE_OR_NAME")
    add_path_argument(
        p,
        "companions",
        kind=INPUT,
        folders=True,  # a BEIR dataset's folder (and Spark's input folders)
        nargs="*",
        metavar="FILE",
        help="the run file's companion (a TAT-RAG gold set, QA pairs, TREC qrels)",
    )
    add_path_argument(p, "--qrels", kind=INPUT, metavar="FILE", help="qrels for a TREC run file")
    p.add_argument("--format", choices=FORMATS, help="force the run file's format")
    add_reader_arguments(p)
    p.add_argument(
        "--metrics",
        help='e.g. "P@5 nDCG@10 judge.faithfulness.supported" (default: a set covering what the '
        "run has; each metric's kind and definition: docs/metrics.md)",
    )
    add_settings_arguments(p)
    p.add_argument("--by", metavar="TAG", help="break every summary down by this tag")
    p.add_argument("--per-query", action="store_true", help="include per-query values")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument(
        "--explain-preset",
        choices=("tat-rag", "eggai"),
        help="the preset's metrics under rageval's defaults, then one rule switched at a time",
    )
    cli_engines.add_arguments(p)  # --engine, --master
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "compare",
        parents=[common],
        help="compare runs on their shared queries: baseline first, then candidates",
    )
    add_path_argument(
        p,
        "runs",
        kind=RUN,
        nargs="+",
        metavar="RUN",
        help="BASELINE CANDIDATE...: 2 to 5 stored run names or run files",
    )
    p.add_argument(
        "--metrics", help='e.g. "nDCG@10 R@10" (default: the default metrics every run has)'
    )
    add_settings_arguments(p)
    p.add_argument(
        "--by",
        action="append",
        metavar="TAG",
        help="also compare inside every value of this tag (repeatable)",
    )
    add_stat_arguments(p)
    p.add_argument(
        "--worst",
        type=int,
        default=10,
        metavar="N",
        help="most regressed queries listed per candidate and metric (default 10)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "gate",
        parents=[common],
        help="exit 1 when the candidate breaks a rule against the baseline (for CI)",
    )
    for flag in ("--baseline", "--candidate"):
        add_path_argument(
            p, flag, kind=RUN, required=True, metavar="RUN", help="stored run name or run file"
        )
    p.add_argument(
        "--max-drop",
        metavar="RULES",
        help='largest allowed metric drops, absolute or relative: "nDCG@10=0.01,R@10=2%%"',
    )
    p.add_argument(
        "--max-increase",
        metavar="RULES",
        help='largest allowed increases: "latency.total.p95=10%%,cost.per_query=5%%" '
        "(latency.<stage>.<mean|p50|p90|p95|p99> in ms or %%, cost.per_query/"
        "cost.total in USD or %%)",
    )
    p.add_argument(
        "--significant-only",
        action="store_true",
        help="a rule fails only when the drop or increase is also significant",
    )
    add_settings_arguments(p)
    add_stat_arguments(p)
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=cmd_gate)

    cli_outputs.add_parser(sub, common)  # fuse, report, export; compare --table
    cli_judge.add_parser(sub, common)  # judge, calibrate
    cli_attach.add_parser(sub, common)  # attach
    cli_diagnose.add_parser(sub, common)  # diagnose
    p = sub.add_parser("dashboard", parents=[common], help="start the dashboard")
    p.add_argument("--port", type=int, default=8501, help="(default: 8501)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only; another "
        "address is warned about)",
    )
    p.set_defaults(func=cmd_dashboard)
    return parser


def main(argv: Sequence[str] | None = None, *, then_ignore_sigint: bool = False) -> int:
    """`rageval ARGS`; returns the exit code (EXIT_CODES). Everything printed passes through
    terminal.shown (control characters escaped); a closed pipe or Ctrl-C ends it quietly.

    then_ignore_sigint (the console script): on return SIGINT is ignored rather than handed back
    to Python's handler, so a Ctrl-C still pending from the step just reported (DuckDB can cut a
    statement short before Python has run its handler) cannot kill the process on its way out."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingWriter(streams[0]), EscapingWriter(streams[1])  # type: ignore[assignment]
    sigint = SigintSeen()
    try:
        return _main(argv, sigint)
    except BrokenPipeError:  # `rageval show RUN | head -1`: the reader has gone, so do we
        silence(streams[0])
        return 141
    except SystemExit:
        raise
    except BaseException as e:
        # DuckDB turns Ctrl-C inside a statement into its own errors (InterruptException,
        # RuntimeError, a failed rollback): the signal, not the error's type, says what happened
        if interrupted(e, sigint):
            sigint.quiet()  # the same Ctrl-C, still pending, must not cut the message short
            print(
                "rageval: interrupted; the step under way was rolled back (nothing of it was "
                "stored)",
                file=sys.stderr,
            )
            return 130
        raise
    finally:
        if then_ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        else:
            sigint.restore()
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None, sigint: SigintSeen) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        # every path the line names, before the store or a file is opened
        cli_paths.check_arguments(args)
        with reader_options(args):
            return int(args.func(args))
    except RagevalError as e:
        if interrupted(e, sigint):  # a statement cut short, surfaced as a store error
            raise
        if isinstance(e, InputError):
            _print_problems(e.problems, e.truncated)
            print("nothing was stored", file=sys.stderr)
        else:
            print(f"rageval: {e}", file=sys.stderr)
        return e.exit_code


def entry() -> None:
    """The `rageval` console script: main(), then exit; a late Ctrl-C no longer fails a finished
    command. Background threads are stopped and waited for first (one ended inside DuckDB or
    Arrow aborts the process: rageval_core.threads), or the process ends at once with the code."""
    code = main(then_ignore_sigint=True)
    threads.finish(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
