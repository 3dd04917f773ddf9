"""`rageval evaluate RUN --qrels QRELS` for a TREC run, straight from the files to the metrics.

A run that is evaluated and not imported needs no store: the files go into the arrays the
ranking metrics read (trec_eval's selection and labels) by the first route that vouches for
them: the numpy reader (formats/trec_columns.py: printable ASCII, one separator between fields),
then DuckDB's CSV reader (formats/trec.py, for non-ASCII files and CRLF line ends), each with
every check the line reader makes. Only numpy is imported on this path (rageval_core.evaluation.report
holds Settings and Report apart from rageval_core.evaluation.evaluate, which loads DuckDB and the store).
The report is the one the store route gives, key for key (tests hold the two equal).

Only what the arrays answer takes this route: ranking metrics in ids mode on the run's own qrels
(`--labels imported`), without a score cut-off, a preset or a breakdown, and no sidecar naming the run. trec_report returns None for
anything else, and for files neither route vouches for (a quirk the line reader must report as
file:line: field: problem): the caller then takes the store route, which says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.evaluation.report import RANKING_DEFAULTS, Report, Settings, depth_warning
from rageval_core.formats import trec_columns
from rageval_core.formats.base import GZIP_ERRORS, HEAD_BYTES, SIDECAR_SUFFIX, open_bytes
from rageval_core.metrics import registry
from rageval_core.settings.label_sources import IMPORTED, parse_labels
from rageval_core.metrics.arrays import (
    QuerySelection,
    RankedLabels,
    check_rel_level,
    judged_only,
    ranked_labels_from_rows,
)


def trec_report(
    paths: Sequence[Path],
    fmt: str | None,
    metrics: Sequence[str] | None,
    settings: Settings,
    by: str | None,
) -> Report | None:
    """The report of a TREC run and its qrels read straight into arrays; None when the request
    or the files need the store route (see the module's docstring)."""
    if by is not None or fmt not in (None, trec_columns.FORMAT) or len(paths) != 2:
        return None
    if (
        settings.preset is not None
        or parse_labels(settings.labels) != (IMPORTED,)  # grades made in rageval: the store's
        or settings.score_threshold is not None
        or settings.relevance == "evidence"
    ):
        return None
    roles = {_role(p): p for p in paths}
    run, qrels = roles.get(trec_columns.PRIMARY), roles.get(trec_columns.COMPANION)
    if run is None or qrels is None:
        return None
    if run.with_name(run.name + SIDECAR_SUFFIX).exists():  # run facts (a name) come with it
        return None
    names = list(metrics) if metrics else [m.format(k=settings.k) for m in RANKING_DEFAULTS]
    measures = registry.parse_all(names)
    if any(m.spec.family != "ranking" for m in measures):
        return None
    got = _arrays(run, qrels, settings.rel_level, settings.complete, settings.judged_only)
    if got is None:
        return None
    query_ids, tag, arrays, selection, rows, depth = got
    # the measures scored on every judged query (Judged@k) read them all, as evaluate.py does
    every = None
    if not settings.complete and any(m.spec.every_judged_query for m in measures):
        every = _arrays(run, qrels, settings.rel_level, True, settings.judged_only)
    n = len(query_ids)
    per_query: dict[str, np.ndarray] = {}
    run_values: dict[str, float] = {}
    for m in measures:
        name = str(m)
        m_arrays, m_rows = (arrays, rows)
        if every is not None and m.spec.every_judged_query:
            m_arrays, m_rows = every[2], every[4]
        values = registry.compute([m], m_arrays)[name]
        full = np.full(n, np.nan)
        full[m_rows] = values
        per_query[name] = full
        run_values[name] = registry.aggregate(m, values, None)
    # no query has token counts: what ops.cost_per_query gives for all-NaN counts, built here
    # because reading the counts loads numpy.ma (its cost: docs/benchmarks.md)
    no_costs = ops.QueryCosts(
        cost_usd=np.full(n, np.nan), has_tokens=np.zeros(n, dtype=bool), price_missing=()
    )
    return Report(
        run=tag or run.stem or "run",
        settings=settings.to_json("ids"),
        relevance="ids",
        metrics=run_values,
        query_ids=np.asarray(query_ids, dtype=object),
        per_query=per_query,
        counts={
            "queries": n,
            "scored_ids": int(rows.size),
            "skipped_no_qrels": selection.n_skipped_no_qrels,
            "missing_from_run": selection.n_missing_from_run,
        },
        ops={  # a TREC run carries no latency or tokens
            "latency_ms": {},
            "tokens": {},
            "cost_usd": ops.cost_summary(no_costs),
        },
        warnings=depth_warning(depth, [m.cutoff for m in measures]),
    )


def trec_arrays(
    run: Path, qrels: Path, rel_level: int = 1, complete: bool = False
) -> tuple[RankedLabels, QuerySelection] | None:
    """trec_eval's selection and labels of a clean run and qrels (the route trec_report takes);
    None when the files need the line reader."""
    got = _arrays(run, qrels, rel_level, complete, False)
    return None if got is None else (got[2], got[3])


def _arrays(
    run: Path, qrels: Path, rel_level: int, complete: bool, unjudged_out: bool
) -> tuple[list[str], str, RankedLabels, QuerySelection, NDArray[np.int64], int] | None:
    """Every query id, the run tag, trec_eval's selection and labels (unjudged documents taken
    out of the rankings when unjudged_out: trec_eval -J, as evaluate.py does), and the selected
    queries' rows among all, and the run's depth (its longest list, every query counted, as the
    store's max_depth); None when neither bulk route vouches for the files."""
    got = _bulk_arrays(run, qrels, rel_level, complete)
    if got is None or not unjudged_out:
        return got
    return got[0], got[1], judged_only(got[2]), got[3], got[4], got[5]


def _bulk_arrays(
    run: Path, qrels: Path, rel_level: int, complete: bool
) -> tuple[list[str], str, RankedLabels, QuerySelection, NDArray[np.int64], int] | None:
    """_arrays from the first bulk route that vouches for the files."""
    check_rel_level(rel_level)
    got = trec_columns.read_pair(run, qrels)
    if got is None:
        return _arrays_by_duckdb(run, qrels, rel_level, complete)
    selected = got.has_qrels & (got.in_run | complete)
    rows = np.flatnonzero(selected)
    new_index = np.cumsum(selected) - 1
    kept = selected[got.ret_query]
    ret_query = new_index[got.ret_query[kept]]
    judged = selected[got.judged_query]
    arrays = ranked_labels_from_rows(
        [got.query_ids[i] for i in rows.tolist()],
        ret_query,
        got.ret_rank[kept],
        got.ret_label[kept],
        new_index[got.judged_query[judged]],
        got.judged_label[judged],
        rel_level=rel_level,
        ret_judged=got.ret_judged[kept],
    )
    selection = QuerySelection(
        int(np.count_nonzero(~got.has_qrels)), int(np.count_nonzero(~got.in_run)), complete
    )
    depth = int(got.ret_rank.max()) if got.ret_rank.size else 0
    return got.query_ids, got.tag, arrays, selection, rows, depth


def _arrays_by_duckdb(
    run: Path, qrels: Path, rel_level: int, complete: bool
) -> tuple[list[str], str, RankedLabels, QuerySelection, NDArray[np.int64], int] | None:
    """The same from DuckDB's CSV reader, which also takes non-ASCII files and long fields."""
    from rageval_core.formats import trec

    staged = trec._Staged.load(run, qrels)
    if staged is None:
        return None
    try:
        query_ids = staged.query_ids()
        arrays, selection = staged.ranked_labels(rel_level, complete)
        (depth,) = staged.con.execute(
            "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM run GROUP BY qid)"
        ).fetchone() or (0,)
    finally:
        staged.con.close()
    position = {qid: i for i, qid in enumerate(query_ids)}
    rows = np.asarray([position[q] for q in arrays.query_ids], dtype=np.int64)
    return query_ids, staged.tag, arrays, selection, rows, int(depth)


def _role(path: Path) -> str | None:
    """'run' or 'qrels' as the TREC reader sniffs the file's head; None for anything else."""
    try:
        with open_bytes(path) as fh:  # a .gz file by what it holds
            head = fh.read(HEAD_BYTES)
    except GZIP_ERRORS:
        return None
    return trec_columns.sniff(path, head)
