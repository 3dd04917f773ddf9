"""`rageval collect`: post every question to the user's retrieval endpoint once per grid point
and store one run per point (docs/collect.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rageval_core.cli.common import Bars
from rageval_core.cli.path_args import INPUT, add_path_argument
from rageval_core.terminal import json_text, text_table

_EXAMPLE = (
    "rageval collect --questions qa.jsonl --endpoint http://localhost:8000/search "
    '--grid "search_type=hybrid,keyword,vector" --grid "top_k=1,5,10"'
)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the collect command to the CLI's subparsers."""
    p = sub.add_parser(
        "collect",
        parents=[common],
        help="run your retriever's HTTP endpoint over a parameter grid: one stored run per point",
        description="Post each question to a retrieval endpoint once per grid point (the "
        "cartesian product of the --grid flags) and store one run per point, named by "
        "--name-template, with the grid values as its run settings (Sweeps, Compare and Trends "
        "show them). Each request is bounded by --timeout as a whole, retried with backoff on "
        "429, 5xx and timeouts, never redirected; its wall time is stored as the latency stage "
        "'request'. A grid point is stored only when every question got a valid reply "
        "(--keep-partial: without the failed ones); Ctrl-C keeps the points already stored. "
        f"Example: {_EXAMPLE}. docs/collect.md has the mapping reference.",
        epilog="exit codes: 0 every grid point stored; 2 bad flags, mapping or questions, the "
        "endpoint refused the headers (401/403), or a grid point not stored (its failed "
        "questions listed); 3 store unavailable; 4 the endpoint never answered; 130 interrupted "
        "(the grid points stored before it are kept)",
    )
    add_path_argument(
        p,
        "--questions",
        kind=INPUT,
        folders=True,  # a BEIR dataset's folder
        nargs="+",
        required=True,
        metavar="FILE",
        help="the questions: any file rageval reads that has query texts (native JSONL, any "
        "run file, a QA-pair file, a TAT-RAG golden set, a BEIR dataset folder, each alone or "
        "with its run); their evidence, qrels, reference answers and tags go into every run",
    )
    p.add_argument("--format", help="force the questions' format instead of detecting it")
    p.add_argument(
        "--endpoint", required=True, metavar="URL", help="the retriever's POST URL (http or https)"
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help='a parameter and its values, e.g. "top_k=1,5,10" (repeatable; values typed as '
        "JSON would: 5 int, 0.5 float, true/false bool, else text)",
    )
    p.add_argument(
        "--name-template",
        metavar="TEXT",
        help="each run's name: {endpoint_host}, {questions} (the question file's stem) and the "
        "grid names (default: '{endpoint_host} NAME={NAME} ...' over the grid, e.g. "
        "'localhost:8000 search_type={search_type} top_k={top_k}')",
    )
    add_path_argument(
        p,
        "--mapping",
        kind=INPUT,
        metavar="FILE",
        help="a JSON file: where the query and the grid values go in the request, where the "
        "chunks, their ids, texts, scores (and ranks), timings and tokens are in the reply "
        "(default: docs/collect.md, 'The mapping')",
    )
    p.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="requests at once (default 4)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="the longest one request may take, connect to the reply's last byte (default 30; "
        "replies past 4 MiB are cut and fail)",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=3,
        metavar="N",
        help="retries of a request on 429, 5xx, timeouts and dropped connections (default 3)",
    )
    p.add_argument(
        "--header-env",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="send header NAME with the value of environment variable VAR, e.g. "
        "Authorization=RETRIEVER_AUTH (repeatable; never stored, printed or logged)",
    )
    p.add_argument(
        "--keep-partial",
        action="store_true",
        help="store a grid point whose questions partly failed, without them (the run's "
        "description says how many); by default such a point is not stored",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing, store nothing: list the grid points, their run names, the request "
        "count and the first request's body",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=cmd_collect)


def _config(args: argparse.Namespace) -> Any:
    from rageval_core.collect import CollectConfig, load_mapping, parse_grid
    from rageval_core.errors import UsageError

    axes = parse_grid(args.grid)
    headers = {}
    for spec in args.header_env:
        name, sep, var = spec.partition("=")
        if not sep or not name.strip() or not var.strip():
            raise UsageError(
                f"--header-env {spec!r}: expected NAME=VAR, e.g. Authorization=API_KEY"
            )
        headers[name.strip()] = var.strip()
    mapping = load_mapping(Path(args.mapping) if args.mapping else None, [a.name for a in axes])
    return CollectConfig(
        endpoint=args.endpoint,
        axes=tuple(axes),
        mapping=mapping,
        name_template=args.name_template,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        retries=args.retries,
        header_envs=headers,
        keep_partial=args.keep_partial,
        questions_name=Path(args.questions[0]).stem,
    )


def cmd_collect(args: argparse.Namespace) -> int:
    from rageval_core.cli.common import open_store
    from rageval_core.collect import collect, plan, read_questions

    config = _config(args)
    questions = read_questions([Path(p) for p in args.questions], args.format)
    summary = plan(config, questions)
    if args.dry_run:
        return _dry_run(args, config, questions, summary)
    config.headers()  # an unset variable is exit 2 before the store is opened
    bars = Bars(" questions")
    try:
        collect(
            lambda: open_store(args),
            questions,
            config,
            summary,
            progress=lambda name, done, total: bars.update(name, f"collecting {name}", done, total),
        )
    except BaseException:
        if summary.stored:  # stopped in the store's own step: what was stored before it stays
            kept = ", ".join(p.name for p in summary.stored)
            print(f"rageval: the grid points stored before it stay: {kept}", file=sys.stderr)
        raise
    finally:
        bars.close()
    if args.json:
        print(json_text(summary.to_json()))
    else:
        _print_summary(summary)
    if summary.status == "interrupted":
        return 130
    if summary.cause_exit is not None:
        return int(summary.cause_exit)
    # every grid point stored (--keep-partial: some without their failed questions): 0
    return 0 if len(summary.stored) == len(summary.points) else 2


def _dry_run(args: argparse.Namespace, config: Any, questions: Any, summary: Any) -> int:
    first = questions[0]
    body = config.mapping.request(first.query_id, first.query, summary.points[0].params)
    out = {
        "dry_run": True,
        "endpoint_host": summary.endpoint_host,
        "questions": len(questions),
        "grid_points": len(summary.points),
        "requests": len(questions) * len(summary.points),
        "runs": [{"name": p.name, "params": p.params} for p in summary.points],
        "first_request": body,
        "mapping": config.mapping.to_json(),
    }
    if args.json:
        print(json_text(out))
        return 0
    print(
        f"dry run: {len(questions)} questions x {len(summary.points)} grid points = "
        f"{out['requests']} requests to {summary.endpoint_host} (nothing sent, nothing stored)"
    )
    names = sorted({k for p in summary.points for k in p.params})
    print(
        text_table(
            ["run", *names], [[p.name, *(p.params[n] for n in names)] for p in summary.points]
        )
    )
    print(f"first request body: {json_text(body)}")
    return 0


def _print_summary(s: Any) -> None:
    for p in s.points:
        for failure in p.failures[:20]:
            print(f"{p.name}: {failure}", file=sys.stderr)
        if len(p.failures) > 20:
            print(
                f"{p.name}: ... and {len(p.failures) - 20} more failed questions", file=sys.stderr
            )
        for problem in p.problems:
            print(problem, file=sys.stderr)
    rows = [
        [
            p.name,
            p.status,
            f"{p.answered}/{s.questions}",
            "" if p.latency_p50_ms is None else f"{p.latency_p50_ms:.1f}",
        ]
        for p in s.points
    ]
    print(text_table(["run", "status", "answered", "request p50 ms"], rows))
    print(
        f"{len(s.stored)} of {len(s.points)} grid points stored; {s.requests} questions sent "
        f"to {s.endpoint_host} (retried {s.retries})"
    )
    if s.cause is not None:
        print(f"failed: {s.cause}", file=sys.stderr)
    elif s.status == "interrupted":
        kept = ", ".join(p.name for p in s.stored) or "none"
        print(
            f"interrupted: the grid points stored before it are kept ({kept}); the one under "
            "way stored nothing",
            file=sys.stderr,
        )
    elif len(s.stored) < len(s.points):
        print(
            f"{s.status}: {len(s.points) - len(s.stored)} grid points not stored (their failed "
            "questions are listed above; --keep-partial stores them without those)",
            file=sys.stderr,
        )
