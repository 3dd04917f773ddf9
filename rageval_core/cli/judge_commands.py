"""`rageval judge` and `rageval calibrate`: an LLM judge over a stored run, and its agreement
with people (docs/judging.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rageval_core.cli.path_args import RUN, add_path_argument
from rageval_core.terminal import json_text, shown, text_table

_METRICS = "faithfulness,retrieval_quality,answer_quality"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the judge and calibrate commands to the CLI's subparsers."""
    from rageval_core.cli.settings_flags import add_settings_arguments

    p = sub.add_parser(
        "judge",
        parents=[common],
        help="judge a stored run with an LLM on an OpenAI-compatible endpoint",
        description="Judge every query of a stored run with an LLM (POST {base_url}/chat/"
        "completions) and keep the verdicts as a result set beside the run; evaluate then "
        "shows them as judge.* metrics. A run file is read as evaluate reads it: its replies "
        "go to the store's cache (importing the file and judging it then sends nothing), its "
        "verdicts are not kept. The key is read from an environment variable and never "
        "stored, logged or cached. docs/judging.md has the prompts.",
    )
    add_path_argument(p, "run", kind=RUN, help="a stored run (name or id) or a run file")
    p.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1")
    p.add_argument("--model", required=True, help="the judge model, e.g. gpt-4o-mini")
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the key (default OPENAI_API_KEY; unset: no key sent)",
    )
    p.add_argument(
        "--metrics",
        default=_METRICS,
        help=f"prompts to run, comma-separated (default {_METRICS}); `relevance` grades each "
        "top --contexts chunk nobody labelled 0-3 (UMBRELA), kept as llm:MODEL labels",
    )
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="(default 4)")
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="a hard budget: a request is sent only when its worst case (prompt bytes + "
        "--max-tokens at the prices) fits beside what was spent and what is in flight; "
        "keeps what finished",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=512,
        metavar="N",
        help="the most tokens a reply may have, sent with every request (default 512)",
    )
    p.add_argument(
        "--price-in", type=float, metavar="P", help="the judge's USD per 1K prompt tokens"
    )
    p.add_argument(
        "--price-out",
        type=float,
        metavar="P",
        help="the judge's USD per 1K completion tokens (without both: the cost is unknown)",
    )
    p.add_argument(
        "--repeats", type=int, default=1, metavar="N", help="judge each item N times (default 1)"
    )
    p.add_argument("--name", help="the result set's name (default: the model)")
    p.add_argument(
        "--contexts",
        type=int,
        default=10,
        metavar="N",
        help="top chunks shown (relevance: the top chunks graded; default 10)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="the longest one request may take, connect to the reply's last byte (default 60; "
        "replies past 4 MiB are cut and are judge errors)",
    )
    p.add_argument(
        "--labels",
        default="imported",
        metavar="SOURCES",
        help="with --metrics relevance: the documents labelled under these label sources "
        "(the labels setting: imported, adjudicated, people, llm[:MODEL]) are not graded "
        "(default imported: the run's qrels; imported,people also leaves the people's grades)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing: print the requests a run would send and their estimated cost",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser(
        "calibrate",
        parents=[common],
        help="agreement of a judge with the run's human labels (Cohen's kappa)",
    )
    p.add_argument("run", help="a stored run (name or id) with human labels")
    p.add_argument(
        "--label",
        default="faithfulness",
        help="the label compared (default faithfulness)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    # --judge picks the result set; k, threshold-free scorer and normalisation shape the sweep
    add_settings_arguments(p)
    p.set_defaults(func=cmd_calibrate)


def _config(args: argparse.Namespace) -> Any:
    from rageval_core.judging import JudgeConfig

    return JudgeConfig(
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        metrics=tuple(m.strip() for m in args.metrics.split(",") if m.strip()),
        concurrency=args.concurrency,
        max_cost_usd=args.max_cost,
        price_in_per_1k=args.price_in,
        price_out_per_1k=args.price_out,
        repeats=args.repeats,
        name=args.name,
        contexts=args.contexts,
        timeout_s=args.timeout,
        max_tokens=args.max_tokens,
    )


def _labelled(store: Any, ref: int, config: Any, labels: str) -> set[tuple[str, str]] | None:
    """The (query_id, doc_id) labelled under --labels, which relevance leaves alone (None: the
    default, the run's imported qrels, which the runner reads itself)."""
    from rageval_core.settings.label_sources import IMPORTED, parse_labels

    if parse_labels(labels) == (IMPORTED,) or "relevance" not in config.metrics:
        return None
    from rageval_core.evaluation.labels import resolved_qrels

    rows, _ = resolved_qrels(store, ref, labels)
    return {(q, d) for q, d, _ in rows}


class _Bar:
    """A tqdm bar with ETA on stderr (the raw stream: tqdm redraws with \\r)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(
                desc=shown(f"judging {self.label}"),
                unit=" items",
                total=total,
                file=getattr(sys.stderr, "raw", sys.stderr),
                leave=False,
            )
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_judge(args: argparse.Namespace) -> int:
    import os

    from rageval_core import api
    from rageval_core.cli.common import open_store
    from rageval_core.judging import estimate_judge, repeatability, run_judge

    config = _config(args)
    config.check()
    with open_store(args) as store, api.load(args.run, store=store) as run:
        # a file lives in a scratch store of its own; its replies go to (and come from) --db's
        ref, cache = run.data.run.run_id, store
        labelled = _labelled(run.store, ref, config, args.labels)
        if args.dry_run:
            summary = estimate_judge(run.store, ref, config, cache=cache, labelled=labelled)
        else:
            if not os.environ.get(config.api_key_env):
                print(
                    f"rageval: note: ${config.api_key_env} is not set: no key is sent "
                    "(fine for a local server)",
                    file=sys.stderr,
                )
            bar = _Bar(args.run)
            try:
                summary = run_judge(
                    run.store, ref, config, progress=bar, cache=cache, labelled=labelled
                )
            finally:
                bar.close()
        rep = (
            repeatability(run.store, ref, str(summary.judge.judge_id))
            if summary.judge is not None and config.repeats > 1
            else None
        )
        from_file = run.store is not store
        if from_file:
            summary.judge = None  # it lived in the file's scratch store: gone with it
    if args.json:
        out = summary.to_json()
        if from_file:
            out["file"] = args.run
        if rep is not None:
            out["repeatability"] = rep.to_json()
        print(json_text(out))
    else:
        _print_summary(summary, rep, args.run if from_file else None)
    if summary.status == "failed":
        from rageval_core.judging import JudgeUnreachableError

        return JudgeUnreachableError.exit_code
    return 130 if summary.status == "interrupted" else 0


def _money(value: float | None) -> str:
    return (
        "unknown (the judge's prices: --price-in/--price-out)" if value is None else f"${value:.4f}"
    )


def _print_summary(s: Any, rep: Any, file: str | None = None) -> None:
    from rageval_core.judging.client import FAST_STOP_AFTER

    if s.status == "dry-run":
        print(
            f"dry run of {s.run} with {s.model}: {s.tasks} judgments, {s.requests} requests to "
            f"send ({s.cache_hits} answered from the cache), ~{s.prompt_tokens} prompt + "
            f"~{s.completion_tokens} completion tokens, estimated cost "
            f"{_money(s.estimated_cost_usd)}"
            + (
                f" (worst case ${s.worst_case_usd:.4f}: what --max-cost reserves)"
                if s.worst_case_usd is not None
                else ""
            )
        )
        return
    print(
        f"{'tried to judge' if s.status == 'failed' else 'judged'} {s.run} with {s.model}: "
        f"{s.done} of {s.tasks} judgments "
        f"({s.skipped_queries} queries had nothing to judge)"
    )
    causes = {k: v for k, v in s.errors.items() if k != s.cause}  # the cause is said below
    print(
        f"requests {s.requests} (retried {s.retries}), cache hits {s.cache_hits}, "
        f"judge errors {s.judge_errors}"
        + (" (" + ", ".join(f"{k}: {v}" for k, v in causes.items()) + ")" if causes else "")
    )
    print(
        f"tokens {s.prompt_tokens} prompt + {s.completion_tokens} completion, cost "
        f"{_money(s.cost_usd if s.priced else None)}"
    )
    if s.ledger is not None:
        b = s.ledger
        print(
            f"budget ${b.limit_usd:.4f}: spent ${b.spent_usd:.4f}, reserved at most "
            f"${b.peak_reserved_usd:.4f} at once for requests in flight (their worst case), "
            f"${max(0.0, b.limit_usd - b.spent_usd):.4f} left"
            + (
                f"; {b.overruns} replies reported more tokens than their worst case"
                if b.overruns
                else ""
            )
        )
    if s.status == "budget":
        refused = s.ledger.refused_worst_case_usd if s.ledger is not None else None
        print(
            "stopped: the next request's worst case"
            + (f" (${refused:.4f})" if refused is not None else "")
            + " did not fit in --max-cost (finished results kept)"
        )
    elif s.status in ("interrupted", "cancelled"):
        print(f"{s.status}: finished results kept")
    if s.cause is not None:
        print(
            f"{s.status}: the judge endpoint gave no answer: {s.cause}; stopped after its "
            f"first {FAST_STOP_AFTER} attempts all failed this way"
        )
    elif s.status == "failed":
        print("failed: no judgment succeeded (the judge errors above say why)")
    elif s.status == "partial":
        print(f"partial: {s.judge_errors} of {s.done} judgments are judge errors (not scored)")
    if file is not None and s.done:
        print(
            f"verdicts not kept: {file} is a file, not a stored run; its replies are in the "
            f"store's cache: `rageval import {file}`, then `rageval judge` with the same flags on the "
            "stored run answers them from the cache (nothing sent, nothing paid)"
        )
    if s.judge is not None and not s.judge.usable:
        print(
            f"kept as judge {s.judge.judge_id} ({s.judge.name}), status {s.judge.status}: "
            f"never read by default (`--judge {s.judge.judge_id}` reads it)"
        )
    elif s.judge is not None:
        print(
            f"kept as judge {s.judge.judge_id} ({s.judge.name}); "
            f"`rageval evaluate {s.run}` shows its judge.* metrics"
        )
    if s.relevance_labels is not None:
        print(
            f"relevance: {s.relevance_labels} documents graded 0-3, kept as llm:{s.model} labels "
            f"beside the people's (`rageval agreement {s.run} --raters NAME,llm:{s.model}` "
            "compares them)"
        )
    if rep is not None:
        rows = [
            [key, f"{rep.agreement[key]:.3f}", f"{rep.spread[key]:.3f}"] for key in rep.agreement
        ]
        print(f"\nrepeatability over {rep.repeats} repeats")
        print(text_table(["verdict", "agreement", "spread"], rows))
        if rep.disagreements:
            print(f"{len(rep.disagreements)} items where the judge disagrees with itself:")
            for d in rep.disagreements[:20]:
                print(f"  query {d.query_id} {d.key}: {', '.join(map(str, d.values))}")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from rageval_core.evaluation.calibration import calibrate, format_calibration
    from rageval_core.cli.common import open_store
    from rageval_core.cli.settings_flags import settings_from_args

    settings = settings_from_args(args)
    with open_store(args) as store:
        result = calibrate(store, args.run, label=args.label, settings=settings)
    if args.json:
        print(json_text(result.to_json()))
    else:
        print(format_calibration(result))
    return 0
