"""The import and export verbs: files -> validated runs -> store (+ scores), and a run -> a file.

Each run is its own transaction: a run with errors stores nothing, and the others are still
judged on their own problems. Runs with gold evidence are scored with the default scorer right
away, so the first evaluation needs no scoring.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rageval_core.errors import InputError, Problem, ProblemLog, UsageError

# path checks every importer of user-named files needs (the dashboard's Runs page too)
from rageval_core.formats.base import (
    SIDECAR_SUFFIX,
    Confinement,
    confined,
    file_problem,
    is_file,
    path_problem,
    printable_path,
)
from rageval_core.model import Query
from rageval_core.store import RunRecord, Store
from rageval_core.store.scores import Scoring, ensure_scored
from rageval_core.store.store import RunRef

__all__ = [
    "SIDECAR_SUFFIX",
    "Confinement",
    "ImportOutcome",
    "Progress",
    "confined",
    "export_native",
    "file_problem",
    "import_paths",
    "is_file",
    "path_problem",
    "printable_path",
]

#: progress(stage, label, done, total): stage "import" (queries read; total: the reader's
#: estimate, or None) or "score"
Progress = Callable[[str, str, int, int | None], None]


@dataclass
class ImportOutcome:
    """What an import did: new runs, runs already stored, problems, and the scorings done."""

    imported: list[RunRecord] = field(default_factory=list)
    existing: list[RunRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    truncated: int = 0  # problems past each file's cap, counted only
    failed: list[str] = field(default_factory=list)  # sources of the runs that stored nothing
    scorings: list[Scoring] = field(default_factory=list)


def import_paths(
    store: Store,
    paths: Sequence[Path],
    fmt: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    score: bool = True,
    show_source: Callable[[str], str] = str,
) -> ImportOutcome:
    """Detect, validate and store every run the files hold.

    Problems that stop the files being read at all (missing, empty, binary, unknown format) fail
    the whole import; otherwise each run stands alone. show_source maps a recorded source path
    (e.g. a temporary upload folder) to the name the user knows.
    """
    from rageval_core.formats import read_inputs
    from rageval_core.formats.options import named

    log = ProblemLog()
    out = ImportOutcome()
    try:
        parsed_runs = read_inputs(list(paths), fmt, log)
        log.raise_if_errors()
    except InputError as e:
        out.problems.extend(e.problems)
        out.truncated += e.truncated
        out.failed.append(", ".join(show_source(printable_path(str(p))) for p in paths))
        return out
    if name:
        renamed = named(parsed_runs, name)
        if renamed is None:
            raise UsageError(
                f"--name needs exactly one run (or one trace export's stages), but the files "
                f"hold {len(parsed_runs)}"
            )
        parsed_runs = renamed
    for i, parsed in enumerate(parsed_runs):
        if i:
            log.clear()  # the readers' lazy streams share the log: judge each run on its own
        parsed = dataclasses.replace(parsed, sources=tuple(show_source(s) for s in parsed.sources))
        label = ", ".join(parsed.sources)
        try:
            result = store.import_run(
                parsed,
                log,
                name=parsed.info.name if name else None,
                progress=_stage(progress, "import", label),
            )
        except InputError as e:
            out.problems.extend(e.problems)
            out.truncated += e.truncated
            out.failed.append(label)
            continue
        out.problems.extend(result.warnings)
        (out.imported if result.created else out.existing).append(result.run)
        if score and result.run.has_evidence:
            run = result.run
            scored = _stage(progress, "score", run.name)
            out.scorings.append(
                ensure_scored(
                    store,
                    run.run_id,
                    progress=scored,
                )
            )
        if score and result.run.has_answers:
            # answer metrics read texts only: computed once here, read back by every evaluate()
            from rageval_core.evaluation.evaluate import ensure_answer_scores

            ensure_answer_scores(store, result.run.run_id)
    return out


def export_native(store: Store, ref: RunRef, path: str | Path) -> int:
    """Write the run as native JSONL (header record included); returns the queries written.

    The gold spans added in rageval (store.ground_truth) follow each query's own in its
    `evidence`, as plain spans: read back, the file is the run with those spans in it.
    Here, not in the store: the store reads rows, the native format's writer spells them.
    """
    from rageval_core.formats.native import write_native
    from rageval_core.store.ground_truth import added_spans

    record = store.run(ref)
    added: dict[str, list[str]] = {}
    for span in added_spans(store):
        added.setdefault(span.query_id, []).append(span.text)

    def queries() -> Iterator[Query]:
        for q in store.iter_queries(record.run_id):
            extra = [t for t in added.get(q.query_id, ()) if t not in q.evidence]
            yield dataclasses.replace(q, evidence=(*q.evidence, *extra)) if extra else q

    target = Path(path)
    # Write beside the target and rename, so a failed export never leaves half a file.
    partial = target.with_name(target.name + ".partial")
    try:
        n = write_native(record.info, queries(), partial)
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return n


def _stage(progress: Progress | None, stage: str, label: str) -> Callable[..., None] | None:
    """progress bound to one stage and label: f(done) or f(done, total)."""
    if progress is None:
        return None

    def report(done: int, total: int | None = None) -> None:
        progress(stage, label, done, total)

    return report
