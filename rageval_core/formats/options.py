"""Reader options that change what a run holds, set by the command (or API call) that reads it.

ignore_identical_ids: drop from each query's ranking the document whose id equals the query id
(BEIR's evaluate(ignore_identical_ids=True), for datasets whose corpus holds the queries, such
as ArguAna and Quora). stage: keep only the runs of one pipeline stage (an OpenInference export
reads as one run per stage). They are reader options, not evaluation settings: they change the
stored run, so a run imported with them keeps the change.

The options travel in a context variable (reading_with) so the verbs between the CLI and the
readers (import_paths, api.load, evaluate's scratch store) need no new parameter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from rageval_core.errors import UsageError
from rageval_core.model import ParsedRun, Query

#: the stages an OpenInference export reads as (formats/openinference.py)
STAGES = ("retriever", "reranker")
#: RunInfo.settings keys that an OpenInference run carries: its stage and the name its sibling
#: stages share
STAGE_KEY = "stage"
GROUP_KEY = "trace_group"


@dataclass(frozen=True, slots=True)
class ReadOptions:
    ignore_identical_ids: bool = False
    stage: str | None = None


_CURRENT: ContextVar[ReadOptions | None] = ContextVar("rageval_read_options", default=None)


@contextmanager
def reading_with(options: ReadOptions) -> Iterator[None]:
    """Every read_inputs() inside the block applies options."""
    if options.stage is not None and options.stage not in STAGES:
        raise UsageError(f"unknown stage {options.stage!r} (expected one of: {', '.join(STAGES)})")
    token = _CURRENT.set(options)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_options() -> ReadOptions:
    return _CURRENT.get() or ReadOptions()


def apply_options(runs: list[ParsedRun], options: ReadOptions | None = None) -> list[ParsedRun]:
    """The runs with the options applied (the current ones when options is None)."""
    options = options or current_options()
    if options.stage is not None:
        staged = [r for r in runs if STAGE_KEY in r.info.settings]
        if not staged:
            raise UsageError(
                "--stage applies to OpenInference trace exports only (their runs have stages)"
            )
        runs = [r for r in runs if r.info.settings.get(STAGE_KEY) == options.stage]
        if not runs:
            raise UsageError(f"the trace export has no {options.stage} spans")
    if options.ignore_identical_ids:
        runs = [
            # columns=None: the bulk route would bypass the filter, so the queries are read
            dataclasses.replace(r, queries=_without_identical_ids(r.queries), columns=None)
            for r in runs
        ]
    return runs


def named(runs: list[ParsedRun], name: str) -> list[ParsedRun] | None:
    """The runs named name, or None when they are several runs that are not the stages of one
    trace export: one run is name; a trace export's stages are name and name@reranker (each
    keeps its suffix after the name the export gave them all)."""
    if len(runs) == 1:
        return [dataclasses.replace(runs[0], info=dataclasses.replace(runs[0].info, name=name))]
    groups = {r.info.settings.get(GROUP_KEY) for r in runs}
    group = groups.pop() if len(groups) == 1 else None
    if not isinstance(group, str) or not all((r.info.name or "").startswith(group) for r in runs):
        return None
    return [
        dataclasses.replace(
            r,
            info=dataclasses.replace(
                r.info,
                name=name + (r.info.name or "")[len(group) :],
                settings={**r.info.settings, GROUP_KEY: name},
            ),
        )
        for r in runs
    ]


def _without_identical_ids(queries: Iterable[Query]) -> Iterator[Query]:
    for query in queries:
        if query.retrieved and any(c.doc_id == query.query_id for c in query.retrieved):
            kept = tuple(c for c in query.retrieved if c.doc_id != query.query_id)
            query = dataclasses.replace(query, retrieved=kept)
        yield query
