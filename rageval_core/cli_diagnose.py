"""`rageval diagnose RUN`: why each failing query fails, and what would fix it
(rageval_core.diagnosis; docs/diagnosis.md). The same api.diagnose as rv.diagnose."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    from rageval_core.cli_settings import add_settings_arguments
    from rageval_core.formats.detect import FORMATS

    p = sub.add_parser(
        "diagnose",
        parents=[common],
        help="why each failing query fails (a reason per missed gold span) and what would fix it",
    )
    p.add_argument("run", metavar="RUN", help="stored run name or run file")
    p.add_argument(
        "companions",
        nargs="*",
        metavar="FILE",
        help="the run file's companions (TREC or OpenInference qrels, a TAT-RAG gold set ...)",
    )
    p.add_argument(
        "--first-stage",
        metavar="RUN",
        help="the run RUN reranks (stored name or file): adds the two-stage split (default: "
        "the retriever stage of an OpenInference export's reranker stage)",
    )
    p.add_argument("--format", choices=FORMATS, help="force the run files' format")
    add_settings_arguments(p)
    p.add_argument("--by", metavar="TAG", help="counts inside every value of this tag")
    p.add_argument(
        "--per-query", action="store_true", help="list every failing query's missed spans"
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=cmd_diagnose)


def cmd_diagnose(args: argparse.Namespace) -> int:
    from rageval_core import api
    from rageval_core.cli import _store
    from rageval_core.cli_settings import settings_from_args
    from rageval_core.diagnosis import diagnose
    from rageval_core.terminal import json_text

    settings = settings_from_args(args)
    names = [r for r in (args.run, args.first_stage) if r is not None and not Path(r).is_file()]
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(_store(args)) if names else None
        run, first = api.load_stages(
            args.run, companions=args.companions, store=store, format=args.format
        )
        stack.enter_context(run)
        if first is not None:
            stack.enter_context(first)
        if args.first_stage is not None:
            if Path(args.first_stage).is_file():
                first = stack.enter_context(api.load(args.first_stage, format=args.format))
            else:
                first = stack.enter_context(api.load(args.first_stage, store=store))
        diagnosis = diagnose(
            run.store,
            run.data,
            settings,
            first_stage=None if first is None else (first.store, first.data),
            by=args.by,
        )
    if args.json:
        print(json_text(diagnosis.to_json(per_query=args.per_query)))
    else:
        from rageval_core.diagnosis.text import format_diagnosis

        print(format_diagnosis(diagnosis, per_query=args.per_query))
    return 0


def compare_json(args: argparse.Namespace, metrics: list[str] | None) -> dict[str, Any]:
    """`rageval compare --json`'s object, with "diagnosis_transitions": for each candidate, the
    baseline's and its status of every shared query (passing, no_gold or the primary reason),
    tabulated (rageval_core.diagnosis.transitions), at the comparison's settings."""
    import dataclasses

    from rageval_core import api
    from rageval_core.cli import _compare_runs, _store
    from rageval_core.cli_settings import settings_from_args
    from rageval_core.diagnosis import diagnose, transitions

    names = [r for r in args.runs if not Path(r).is_file()]
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(_store(args)) if names else None
        loaded = [
            stack.enter_context(api.load(r, store=None if Path(r).is_file() else store))
            for r in args.runs
        ]
        comparison = _compare_runs(args, loaded, metrics, args.by or (), args.worst)
        settings = settings_from_args(args)
        if comparison.relevance is not None:  # the mode the comparison resolved for every run
            settings = dataclasses.replace(settings, relevance=comparison.relevance)
        # a preset's rules change what covers, which the diagnosis does not read: no table
        diagnoses = [] if settings.preset else [diagnose(r.store, r.data, settings) for r in loaded]
    out: dict[str, Any] = comparison.to_json()
    if diagnoses:
        out["diagnosis_transitions"] = [
            transitions(diagnoses[0], candidate).to_json() for candidate in diagnoses[1:]
        ]
    return out
