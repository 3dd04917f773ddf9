"""The `rageval` command: a thin argparse front over the core's verbs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval_core.errors import InputError, ProblemLog, RagevalError, UsageError


def _store(args: argparse.Namespace) -> Any:
    from rageval_core.store import Store

    return Store(args.db)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _print_problems(problems: Sequence[Any], truncated: int = 0) -> None:
    for p in problems:
        print(p, file=sys.stderr)
    if truncated:
        print(f"... and {truncated} more problems", file=sys.stderr)


def _progress(desc: str) -> Any:
    from tqdm import tqdm

    # delay: the bar appears only when an import takes more than a moment
    return tqdm(desc=desc, unit=" queries", delay=0.5, file=sys.stderr, leave=False)


def cmd_import(args: argparse.Namespace) -> int:
    from rageval_core.formats import read_inputs

    paths = [Path(p) for p in args.files]
    log = ProblemLog()
    parsed_runs = read_inputs(paths, args.format, log)
    log.raise_if_errors()
    if args.name and len(parsed_runs) != 1:
        raise UsageError(f"--name needs exactly one run, but the files hold {len(parsed_runs)}")
    status = 0
    with _store(args) as store:
        for i, parsed in enumerate(parsed_runs):
            # the readers' lazy streams all report into `log`: import one run at a time, each
            # with a clean log (the first keeps the warnings found while the files were opened)
            if i:
                log.clear()
            source = ", ".join(parsed.sources)
            bar = _progress(f"importing {source}")
            try:
                result = store.import_run(
                    parsed, log, name=args.name, progress=lambda n, bar=bar: bar.update(n - bar.n)
                )
            except InputError as e:
                bar.close()
                _print_problems(e.problems, e.truncated)
                print(f"{source}: import failed, nothing was stored", file=sys.stderr)
                status = 2
                continue
            bar.close()
            _print_problems(result.warnings)
            run = result.run
            verb = "imported" if result.created else "already stored"
            print(f"{verb}: {run.name} ({run.n_queries} queries, depth {run.max_depth}) from {source}")
    return status


def _run_row(r: Any) -> list[Any]:
    return [r.name, r.format, r.n_queries, r.max_depth, r.created_at or "", str(r.imported_at)[:19]]


def cmd_runs(args: argparse.Namespace) -> int:
    with _store(args) as store:
        runs = store.runs()
    if args.json:
        print(json.dumps([_run_json(r) for r in runs], indent=2, default=str))
    elif not runs:
        print("no runs yet: `rageval import FILE` or `make run` imports the sample runs")
    else:
        print(_table(["name", "format", "queries", "depth", "created_at", "imported"], [_run_row(r) for r in runs]))
    return 0


def _run_json(r: Any) -> dict[str, Any]:
    keys = [
        "run_id", "name", "format", "sources", "created_at", "description", "imported_at",
        "settings", "price_prompt_per_1k", "price_completion_per_1k", "n_queries", "n_chunks",
        "max_depth", "has_qrels", "has_evidence", "has_latency", "has_tokens", "has_answers",
        "tag_keys", "content_hash",
    ]
    return {k: getattr(r, k) for k in keys}


def cmd_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        run = store.run(args.run)
    facts = _run_json(run)
    if args.json:
        print(json.dumps(facts, indent=2, default=str))
    else:
        width = max(len(k) for k in facts)
        for k, v in facts.items():
            shown = json.dumps(v) if isinstance(v, (dict, list)) else v
            print(f"{k.ljust(width)}  {'' if shown is None else shown}")
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


def cmd_export(args: argparse.Namespace) -> int:
    with _store(args) as store:
        n = store.export_native(args.run, Path(args.to))
    print(f"exported {n} queries to {args.to}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from rageval_core.demo import generate

    out = Path(args.out)
    paths = generate(out, n_queries=args.queries, seed=args.seed, progress=lambda s: print(s, file=sys.stderr))
    for p in paths:
        print(f"wrote {p} ({p.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    import dashboard

    app = Path(dashboard.__file__).parent / "app.py"
    env = dict(os.environ)
    if args.db:
        env["RAGEVAL_DB"] = str(Path(args.db).resolve())
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port)]
    return subprocess.call(cmd, env=env)


def build_parser() -> argparse.ArgumentParser:
    from rageval_core.formats.detect import FORMATS

    db_help = "the DuckDB store (default: $RAGEVAL_DB or .rageval/rageval.duckdb)"
    parser = argparse.ArgumentParser(prog="rageval", description="Evaluate the retrieval step of RAG systems.")
    parser.add_argument("--db", help=db_help)
    # --db may come before or after the command; SUPPRESS keeps a subcommand from resetting it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("import", parents=[common], help="validate run files and store them")
    p.add_argument("files", nargs="+", metavar="FILE", help="run files (a TREC run may come with its qrels file)")
    p.add_argument("--name", help="name for the run (default: from the file's header or its name)")
    p.add_argument("--format", choices=FORMATS, help="force a format instead of detecting it")
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

    p = sub.add_parser("export", parents=[common], help="write a run back as native JSONL")
    p.add_argument("run", help="run name or id")
    p.add_argument("--to", required=True, metavar="FILE", help="output .jsonl file")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("demo", parents=[common], help="regenerate the sample runs")
    p.add_argument("--out", default="sample_runs", help="output folder (default: sample_runs)")
    p.add_argument("--queries", type=int, default=360, help="queries per run (default: 360)")
    p.add_argument("--seed", type=int, default=7)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("dashboard", parents=[common], help="start the dashboard")
    p.add_argument("--port", type=int, default=8501)
    p.set_defaults(func=cmd_dashboard)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as e:
        _print_problems(e.problems, e.truncated)
        print("nothing was stored", file=sys.stderr)
        return e.exit_code
    except RagevalError as e:
        print(f"rageval: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
