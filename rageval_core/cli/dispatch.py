"""The `rageval` command: its parser (build_parser), main and entry. The commands live with their
family (run_commands.py, evaluate_commands.py, output_commands.py, judge_commands.py,
attach_commands.py, diagnose_commands.py); what they share is public in common.py."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

import rageval_core.cli.agreement_commands as cli_agreement
import rageval_core.cli.attach_commands as cli_attach
import rageval_core.cli.collect_commands as cli_collect
import rageval_core.cli.diagnose_commands as cli_diagnose
import rageval_core.cli.engine_flags as cli_engines
import rageval_core.cli.judge_commands as cli_judge
import rageval_core.cli.output_commands as cli_outputs
import rageval_core.cli.path_args as cli_paths
from rageval_core import threads
from rageval_core.cli.common import print_problems
from rageval_core.cli.evaluate_commands import cmd_compare, cmd_evaluate, cmd_gate
from rageval_core.cli.path_args import INPUT, OUTPUT_FOLDER, RUN, add_path_argument, on_spark
from rageval_core.cli.reader_flags import add_reader_arguments, reader_options
from rageval_core.cli.run_commands import (
    cmd_dashboard,
    cmd_delete,
    cmd_demo,
    cmd_import,
    cmd_rename,
    cmd_runs,
    cmd_show,
)
from rageval_core.cli.settings_flags import (
    add_settings_arguments,
    add_stat_arguments,
)
from rageval_core.cli.signals import SigintSeen, interrupted, silence
from rageval_core.errors import EXIT_CODES, InputError, RagevalError
from rageval_core.terminal import EscapingWriter


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
    cli_collect.add_parser(sub, common)  # collect
    cli_agreement.add_parser(sub, common)  # agreement
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
            print_problems(e.problems, e.truncated)
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
