"""`rageval agreement`: how far the annotators of a run's relevance grades agree (Cohen's kappa per
pair, Krippendorff's alpha with a bootstrap interval, the items they disagree on), and
adjudication of one item (docs/labelling.md, docs/metrics.md)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from rageval_core.terminal import json_text, text_table


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the agreement command to the CLI's subparsers."""
    p = sub.add_parser(
        "agreement",
        parents=[common],
        help="agreement between the annotators of a run's relevance grades (kappa, alpha)",
        description="The agreement of the relevance grades given to the documents of a stored "
        "run's queries: Cohen's kappa of each pair of annotators (unweighted and quadratic-"
        "weighted), Krippendorff's ordinal alpha over all of them with a percentile bootstrap "
        "interval, and the items they disagree on. A figure that cannot be computed (fewer than "
        "two annotators on common items, one grade only) is withheld with its reason; exit 1 "
        "when no figure could be computed.",
    )
    p.add_argument("run", help="a stored run (name or id): its query ids choose the items")
    p.add_argument(
        "--raters",
        metavar="NAMES",
        help="comma-separated label sets to compare (a person's name, llm:MODEL, "
        "adjudicated:NAME; default: every person)",
    )
    p.add_argument(
        "--resamples",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples of alpha's 95%% interval (default 1000)",
    )
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    p.add_argument(
        "--adjudicate",
        nargs=3,
        metavar=("QUERY_ID", "DOC_ID", "GRADE"),
        help="keep a final grade of one item (source 'adjudicated', with --annotator; GRADE "
        "'none' takes it back), then show the agreement",
    )
    p.add_argument("--annotator", help="who adjudicates (with --adjudicate)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=cmd_agreement)


def _grade(text: str) -> float | None:
    from rageval_core.errors import UsageError

    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UsageError(f"--adjudicate: GRADE must be a number or none, not {text!r}")
    return value


def cmd_agreement(args: argparse.Namespace) -> int:
    from rageval_core.cli.common import open_store
    from rageval_core.errors import UsageError
    from rageval_core.evaluation.agreement import adjudicate, agreement, agreement_json
    from rageval_core.store.judgements import query_ids

    if args.resamples < 1:
        raise UsageError(f"--resamples must be >= 1, got {args.resamples}")
    if args.adjudicate and not (args.annotator or "").strip():
        raise UsageError("--adjudicate needs --annotator NAME (who gives the final grade)")
    raters = None
    if args.raters is not None:
        raters = [r.strip() for r in args.raters.split(",") if r.strip()]
    with open_store(args) as store:
        run = store.run(args.run)
        qids = query_ids(store, run.run_id)
        if args.adjudicate:
            qid, doc, grade = args.adjudicate
            if qid not in set(qids):
                raise UsageError(f"--adjudicate: run {run.name} has no query {qid!r}")
            adjudicate(store, qid, doc, _grade(grade), annotator=args.annotator)
        result = agreement(store, qids, raters=raters, resamples=args.resamples, seed=args.seed)
    computed = result.alpha is not None or any(p.kappa is not None for p in result.pairs)
    if args.json:
        print(json_text(agreement_json(result)))
    else:
        print(format_agreement(run.name, result))
    return 0 if computed else 1


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_agreement(run: str, a: Any, shown_disagreements: int = 50) -> str:
    """The terminal's view: each pair's kappa, alpha and its interval, the disagreements."""
    out = [
        f"run {run}: {len(a.annotators)} annotators ({', '.join(a.annotators) or 'none'}), "
        f"{a.n_items} items graded by two or more"
    ]
    if a.pairs:
        out += [
            "",
            text_table(
                ["a", "b", "n", "kappa", "weighted kappa", "why withheld"],
                [
                    [p.a, p.b, p.n, _num(p.kappa), _num(p.weighted_kappa), p.reason or ""]
                    for p in a.pairs
                ],
            ),
        ]
    if a.alpha is not None:
        ci = (
            f" (95% bootstrap interval {a.alpha_ci[0]:.3f} to {a.alpha_ci[1]:.3f})"
            if a.alpha_ci is not None
            else ""
        )
        out += ["", f"Krippendorff's alpha (ordinal) {a.alpha:.3f}{ci}"]
    if a.reason:
        # a figure withheld, or (alpha and its interval both there) a note on the interval
        said = "note" if a.alpha is not None and a.alpha_ci is not None else "withheld"
        out.append(f"{said}: {a.reason}")
    if a.disagreements:
        rows = [
            [
                d.query_id,
                d.doc_id,
                ", ".join(f"{k} {g:g}" for k, g in d.grades.items()),
                "" if d.adjudicated is None else f"{d.adjudicated:g}",
            ]
            for d in a.disagreements[:shown_disagreements]
        ]
        out += [
            "",
            f"{len(a.disagreements)} items graded differently"
            + (
                f" (the first {shown_disagreements}; --json has all)"
                if len(a.disagreements) > shown_disagreements
                else ""
            ),
            text_table(["query", "document", "grades", "adjudicated"], rows),
        ]
    elif a.n_items:
        out += ["", "no item was graded differently"]
    return "\n".join(out)
