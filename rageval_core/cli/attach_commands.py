"""`rageval attach`: what the import did not bring, added to a stored run later (qrels, a date,
prices, run tags): the Runs page's "Attach" in the terminal (rageval_core.annotate)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rageval_core.cli.path_args import INPUT, add_path_argument
from rageval_core.errors import UsageError


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the attach command to the CLI's subparsers."""
    p = sub.add_parser(
        "attach",
        parents=[common],
        help="attach qrels, a date, prices or run tags to a stored run",
        description="Add to a stored run what its import did not bring. --qrels replaces the "
        "run's relevance labels with the file's (TREC qrels, BEIR's qrels TSV or ranx's JSON): "
        "the run then holds what importing it together with that file would, and keeps its "
        "scores, judge results and notes. A malformed file changes nothing.",
    )
    p.add_argument("run", help="a stored run (name or id)")
    add_path_argument(
        p, "--qrels", kind=INPUT, metavar="FILE", help="relevance labels for the run's queries"
    )
    add_path_argument(
        p,
        "--labels",
        kind=INPUT,
        metavar="FILE",
        help="relevance grades made elsewhere (TREC qrels, BEIR's TSV or ranx's JSON), kept as "
        "--annotator's grades (source people) beside the run's own qrels, which stay as they are",
    )
    p.add_argument(
        "--annotator", metavar="NAME", help="whose grades --labels are (required with --labels)"
    )
    p.add_argument("--date", metavar="ISO", help="the run's created_at, e.g. 2026-05-01")
    p.add_argument("--prompt-price", type=float, metavar="USD", help="USD per 1K prompt tokens")
    p.add_argument(
        "--completion-price", type=float, metavar="USD", help="USD per 1K completion tokens"
    )
    p.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a run tag (repeatable); KEY= removes that tag",
    )
    p.set_defaults(func=cmd_attach)


def cmd_attach(args: argparse.Namespace) -> int:
    from rageval_core.annotate import attach_facts, attach_grades, attach_qrels, check_facts
    from rageval_core.cli.common import open_store
    from rageval_core.terminal import shown

    tags: dict[str, str] = {}
    for item in args.tag:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--tag {item!r}: expected KEY=VALUE (KEY= removes the tag)")
        tags[key.strip()] = value.strip()
    prices = (args.prompt_price, args.completion_price)
    has_prices = prices != (None, None)
    if (
        args.qrels is None
        and args.labels is None
        and not (args.date is not None or has_prices or tags)
    ):
        raise UsageError("nothing to attach: give --qrels, --labels, --date, a price or --tag")
    if (args.labels is None) != (args.annotator is None):
        raise UsageError("--labels FILE and --annotator NAME go together: whose grades they are")
    facts = args.date is not None or has_prices or tags
    # every fact checked before anything is stored: a bad date must not follow attached qrels
    check_facts(created_at=args.date, prices=prices if has_prices else None, tags=tags or None)
    with open_store(args) as store:
        record = store.run(args.run)
        if args.qrels is not None:
            before = record.run_id
            record = attach_qrels(store, record.run_id, Path(args.qrels))
            if record.run_id == before:
                print(f"{shown(record.name)} already has these qrels")
            else:
                print(f"{shown(record.name)}: qrels attached from {shown(args.qrels)}")
        if args.labels is not None:
            n, on_run = attach_grades(store, record.run_id, Path(args.labels), args.annotator)
            print(
                f"{shown(record.name)}: {n} grades by {shown(args.annotator)} kept from "
                f"{shown(args.labels)} ({on_run} on its queries)"
            )
        if facts:
            record = attach_facts(
                store,
                record.run_id,
                created_at=args.date,
                prices=prices if has_prices else None,
                tags=tags or None,
            )
            print(f"{shown(record.name)}: facts saved")
    return 0
