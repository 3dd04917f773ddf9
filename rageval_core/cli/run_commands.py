"""The commands over stored runs: `import`, `runs`, `show`, `rename`, `delete`, `demo` and
`dashboard` (which starts the app over the store)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import rageval_core.cli.path_args as cli_paths
from rageval_core.cli.common import Bars, open_store, print_problems
from rageval_core.errors import UsageError
from rageval_core.terminal import json_text, text_table


class _Bars(Bars):
    """A bar per (stage, label) of an import: queries read, then evidence scored."""

    def __init__(self) -> None:
        super().__init__(" queries")

    def __call__(self, stage: str, label: str, done: int, total: int | None) -> None:
        desc = f"importing {label}" if stage == "import" else f"scoring evidence of {label}"
        self.update((stage, label), desc, done, total)


def cmd_import(args: argparse.Namespace) -> int:
    return _import(args, [Path(p) for p in args.files], args.format, args.name, not args.no_score)


def _import(
    args: argparse.Namespace, paths: list[Path], fmt: str | None, name: str | None, score: bool
) -> int:
    """Import paths into the store of args (--db), printing what happened; the exit code."""
    from rageval_core.importing import import_paths

    bars = _Bars()
    with open_store(args) as store:
        try:
            out = import_paths(store, paths, fmt, name, progress=bars, score=score)
        finally:
            bars.close()
    print_problems(out.problems, out.truncated)
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
    with open_store(args) as store:
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
    with open_store(args) as store:
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
    with open_store(args) as store:
        store.rename(args.run, args.new_name)
    print(f"renamed {args.run} -> {args.new_name}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with open_store(args) as store:
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
