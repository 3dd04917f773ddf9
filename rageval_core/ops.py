"""Latency percentiles, token counts and cost per query, from flat arrays (one row per fact).

Inputs come as columns of a DuckDB query (long form: one row per query and stage, or per query
and token kind), so nothing here builds a Python object per query. Every result is a plain dict
of Python floats/ints/str, ready for json.dumps: NaN never appears, a value that cannot be
computed is None, and zero rows give an empty result rather than an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: The stage holding a query's end-to-end latency; when a query records none, it is derived
#: (derive_total) as the sum of the query's top-level stages.
TOTAL = "total"
#: Token kinds reported first, in this order; any other kind follows, sorted by name.
TOKEN_ORDER = ("prompt", "completion", "total")
#: Percentiles of latency_summary, numpy.percentile's default (linear, Hyndman & Fan type 7).
PERCENTILES = (50, 90, 95, 99)
#: The group of a query that lacks the tag being broken down by.
NO_TAG = "(none)"

Summary = dict[str, float | int | None]


def latency_summary(
    stage: ArrayLike,
    ms: ArrayLike,
    groups: ArrayLike | None = None,
    order: Iterable[str] = (),
    derived: ArrayLike | None = None,
) -> dict[str, Summary] | dict[str, dict[str, Summary]]:
    """Per stage: count, mean, p50, p90, p95, p99 of latency in ms (per group when groups given).

    stage, ms (and groups) are parallel arrays, one row per (query, stage) that was recorded;
    count is the number of queries that have the stage. Rows with a non-finite ms are dropped
    (missing). Stages come in order (pipeline_order), any other in the order the rows first
    hold them. derived (parallel, bool) marks the rows derive_total added: the total stage then
    also counts them ("derived", 0 when every total was recorded). Without groups:
    {stage: stats}; with groups: {group: {stage: stats}}, groups sorted with NO_TAG last.
    """
    names = _labels(stage)
    seen = names[np.sort(np.unique(names, return_index=True)[1])].tolist()
    first = (*order, *seen)
    flags = None if derived is None else np.asarray(derived, dtype=bool).reshape(-1)
    return _long_summary(names, ms, groups, first, _latency_stats, flags)


def pipeline_order(q: ArrayLike, stage: ArrayLike) -> tuple[str, ...]:
    """The stages in pipeline order: each query's stages in the order its record lists them,
    merged over the queries (rows sorted by query, then by position in the record).

    A stage that only some queries have goes after the stage it follows in them (a rerank
    recorded by a few queries still sits between retrieval and generation); stages no query
    orders among themselves keep the order the rows first hold them. TOTAL, not a step of the
    pipeline, comes last wherever the records put it.
    """
    rows = np.asarray(q, dtype=np.int64).reshape(-1)
    names = _labels(stage)
    has_total = bool((names == TOTAL).any())
    rows, names = rows[names != TOTAL], names[names != TOTAL]
    if names.size == 0:
        return (TOTAL,) if has_total else ()
    uniq, first, codes = np.unique(names, return_index=True, return_inverse=True)
    same = rows[1:] == rows[:-1]
    # every (stage, stage right after it in one query) pair, once
    pairs = np.unique(codes[:-1][same] * uniq.size + codes[1:][same])
    before: list[set[int]] = [set() for _ in range(uniq.size)]
    for a, b in zip(*np.divmod(pairs, uniq.size), strict=True):
        if a != b:
            before[int(b)].add(int(a))
    left = [int(i) for i in np.argsort(first, kind="stable")]  # first-seen order
    out: list[int] = []
    while left:  # Kahn's sort over a handful of stages; a cycle yields to first-seen order
        ready = next((i for i in left if not before[i].difference(out)), left[0])
        out.append(ready)
        left.remove(ready)
    return tuple(str(uniq[i]) for i in out) + ((TOTAL,) if has_total else ())


def derive_total(
    q: ArrayLike, stage: ArrayLike, ms: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.str_], NDArray[np.float64], NDArray[np.bool_]]:
    """The rows with a TOTAL row added for every query that has stages but no total: the sum
    of its top-level stages. Returns (q, stage, ms, derived), derived marking the added rows.

    A stage named parent.child (retrieval.embed) is part of parent when the query records
    parent, so it is not added again; otherwise it is top-level. The sum assumes the stages
    run one after another, as a pipeline that records no total usually does; a recorded total
    is kept as it is (stages may overlap or leave gaps).
    """
    rows = np.asarray(q, dtype=np.int64).reshape(-1)
    names = _labels(stage)
    values = _floats(ms)
    if not (rows.size == names.size == values.size):
        raise ValueError(f"{rows.size} query indices, {names.size} stages and {values.size} ms")
    none = np.zeros(rows.size, dtype=bool)
    if rows.size == 0:
        return rows, names, values, none
    n = int(rows.max()) + 1
    uniq, codes = np.unique(names, return_inverse=True)
    index = {str(name): i for i, name in enumerate(uniq)}
    present = rows * uniq.size + codes
    nested = np.zeros(rows.size, dtype=bool)
    for i, name in enumerate(uniq.tolist()):
        parts = name.split(".")
        parents = [index.get(".".join(parts[:j])) for j in range(1, len(parts))]
        for p in (p for p in parents if p is not None):
            sel = codes == i
            nested[sel] |= np.isin(rows[sel] * uniq.size + p, present)
    has_total = np.zeros(n, dtype=bool)
    has_total[rows[names == TOTAL]] = True
    top = ~nested & (names != TOTAL) & np.isfinite(values)
    summed = np.bincount(rows[top], weights=values[top], minlength=n)
    need = np.flatnonzero((np.bincount(rows[top], minlength=n) > 0) & ~has_total)
    return (
        np.concatenate([rows, need]),
        np.concatenate([names, np.full(need.size, TOTAL)]),
        np.concatenate([values, summed[need]]),
        np.concatenate([none, np.ones(need.size, dtype=bool)]),
    )


def stage_label(stage: str, stats: Mapping[str, Any]) -> str:
    """The stage as shown: "total (derived)" when no query recorded its total (each is the sum
    of its stages), "total (3 derived)" when some did not."""
    derived = stats.get("derived") or 0
    if not derived:
        return stage
    return (
        f"{stage} (derived)"
        if derived >= (stats.get("count") or 0)
        else f"{stage} ({derived} derived)"
    )


def ms_decimals(ms: float | None) -> int:
    """Decimals that show a latency to about 3 significant digits: 534.0, 2.76, 0.488 (1 to 3)."""
    size = abs(ms) if ms is not None and math.isfinite(ms) else 10.0
    return 1 if size >= 10 or size == 0 else 2 if size >= 1 else 3


def ms_decimals_of(values: ArrayLike) -> int:
    """The decimals a column of latencies needs: ms_decimals of its smallest value but 0."""
    v = np.abs(_floats(values))
    v = v[np.isfinite(v) & (v > 0)]
    return ms_decimals(float(v.min()) if v.size else None)


def format_ms(ms: float | None) -> str:
    """A latency in ms as printed (ms_decimals); "-" when unknown."""
    if ms is None or not math.isfinite(ms):
        return "-"
    if abs(ms) >= 1e15:  # a 16-digit latency and beyond: its exponent, not 300 digits
        return f"{ms:.4g}"
    return f"{ms:.{ms_decimals(ms)}f}"


def token_summary(
    kind: ArrayLike, tokens: ArrayLike, groups: ArrayLike | None = None
) -> dict[str, Summary] | dict[str, dict[str, Summary]]:
    """Per token kind (prompt, completion, total, others): count, mean and total tokens.

    Same long form as latency_summary: one row per (query, kind) that was recorded, so count is
    the number of queries with that kind and mean = total / count.
    """
    return _long_summary(kind, tokens, groups, TOKEN_ORDER, _token_stats)


@dataclass(frozen=True, slots=True)
class QueryCosts:
    """Cost of each query in USD, with the facts cost_summary needs to be honest about gaps."""

    #: USD per query; NaN when the query has no token counts or a price it needs is missing.
    cost_usd: NDArray[np.float64]
    #: True where the query has a prompt or a completion token count.
    has_tokens: NDArray[np.bool_]
    #: Token kinds ("prompt", "completion") that some query used but that have no price.
    price_missing: tuple[str, ...]


def cost_per_query(
    prompt_tokens: ArrayLike,
    completion_tokens: ArrayLike,
    price_prompt_per_1k: float | None,
    price_completion_per_1k: float | None,
) -> QueryCosts:
    """USD per query = prompt_tokens/1000 * prompt price + completion_tokens/1000 * its price.

    Token arrays are parallel, one value per query, NaN where the count is unknown; an unknown
    count adds nothing, and a query with neither count costs NaN. A kind whose price is None
    makes the cost NaN for every query that used that kind (count > 0) and is named in
    price_missing. A single price for both kinds is the caller passing it twice.
    """
    prompt = _floats(prompt_tokens)
    completion = _floats(completion_tokens)
    if prompt.shape != completion.shape:
        raise ValueError(
            f"prompt_tokens has {prompt.size} values, completion_tokens {completion.size}"
        )
    cost = np.zeros(prompt.shape, dtype=np.float64)
    missing: list[str] = []
    for name, counts, price in (
        ("prompt", prompt, price_prompt_per_1k),
        ("completion", completion, price_completion_per_1k),
    ):
        known = np.isfinite(counts)
        if price is None:
            # A zero count needs no price; a positive one does, and its cost is unknown.
            used = known & (counts > 0)
            if used.any():
                missing.append(name)
            cost[used] = np.nan
        else:
            with np.errstate(over="ignore", invalid="ignore"):  # inf: too large (cost_gap)
                cost[known] += counts[known] / 1000.0 * float(price)
    has_tokens = np.isfinite(prompt) | np.isfinite(completion)
    cost[~has_tokens] = np.nan
    return QueryCosts(cost_usd=cost, has_tokens=has_tokens, price_missing=tuple(missing))


def cost_summary(costs: QueryCosts) -> dict[str, Any]:
    """{total, per_query (mean over queries with tokens), n_queries_with_tokens, price_missing}.

    total and per_query are None when no query has tokens, or when a price is missing: summing
    only the priced queries would understate the cost without saying so.
    """
    n_with = int(np.count_nonzero(costs.has_tokens))
    out: dict[str, Any] = {
        "total": None,
        "per_query": None,
        "n_queries_with_tokens": n_with,
        "price_missing": list(costs.price_missing),
    }
    if n_with and not costs.price_missing:
        priced = costs.cost_usd[costs.has_tokens]
        with np.errstate(over="ignore", invalid="ignore"):  # beyond a float: None (cost_gap)
            out["total"] = _num(priced.sum())
            out["per_query"] = _num(priced.mean())
    return out


def cost_gap(cost: Mapping[str, Any]) -> str:
    """Why cost_summary's total is unknown though queries have tokens: the prices missing, or
    (a store written before import bounded prices and token counts) a sum beyond a float."""
    missing = cost.get("price_missing") or []
    if missing:
        return "missing price for " + ", ".join(str(m) for m in missing)
    return "too large for a float"


def breakdown(
    values: Mapping[str, ArrayLike], groups: ArrayLike
) -> dict[str, dict[str, float | int | None]]:
    """{group: {metric: mean, ..., "n": queries in the group}} for a per-query table split by a tag.

    values holds parallel per-query arrays (NaN = not scored, left out of that metric's mean;
    a metric with no scored query in a group is None). groups is the tag value of each query;
    None/NaN becomes NO_TAG. Groups are sorted by name with NO_TAG last.
    """
    labels = _labels(groups)
    if "n" in values:
        raise ValueError('"n" is reserved for the group size; rename that metric')
    columns = {name: _floats(v) for name, v in values.items()}
    for name, col in columns.items():
        if col.shape != labels.shape:
            raise ValueError(f"{name} has {col.size} values, groups has {labels.size}")
    if labels.size == 0:
        return {}
    names, inverse = np.unique(labels, return_inverse=True)
    sizes = np.bincount(inverse, minlength=names.size)
    means: dict[str, NDArray[np.float64]] = {}
    for name, col in columns.items():
        scored = np.isfinite(col)
        n = np.bincount(inverse[scored], minlength=names.size)
        s = np.bincount(inverse[scored], weights=col[scored], minlength=names.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[name] = s / n
    out: dict[str, dict[str, float | int | None]] = {}
    for g in _group_order(names):
        i = int(np.searchsorted(names, g))
        row: dict[str, float | int | None] = {name: _num(m[i]) for name, m in means.items()}
        row["n"] = int(sizes[i])
        out[str(g)] = row
    return out


def to_json_value(value: Any) -> Any:
    """value with numpy scalars made Python numbers and NaN/inf made None (recursively)."""
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _num(value)
    return value


# --- internals ---------------------------------------------------------------------------


def _long_summary(
    key: ArrayLike,
    value: ArrayLike,
    groups: ArrayLike | None,
    first: tuple[str, ...],
    stats: Any,
    derived: NDArray[np.bool_] | None = None,
) -> Any:
    keys = _labels(key)
    values = _floats(value)
    if keys.shape != values.shape:
        raise ValueError(f"{keys.size} keys but {values.size} values")
    group_labels = None if groups is None else _labels(groups)
    if group_labels is not None and group_labels.shape != keys.shape:
        raise ValueError(f"{keys.size} keys but {group_labels.size} groups")
    if derived is not None and derived.shape != keys.shape:
        raise ValueError(f"{keys.size} keys but {derived.size} derived flags")
    keep = np.isfinite(values)
    keys, values = keys[keep], values[keep]
    if group_labels is not None:
        group_labels = group_labels[keep]
    if keys.size == 0:
        return {}
    key_names, key_codes = np.unique(keys, return_inverse=True)
    if group_labels is None:
        group_names = np.array([""])
        group_codes = np.zeros(keys.size, dtype=np.intp)
    else:
        group_names, group_codes = np.unique(group_labels, return_inverse=True)
    segment = group_codes * key_names.size + key_codes
    seg_ids, columns = stats(segment, values)
    if derived is not None:
        counts = np.bincount(segment[derived[keep]], minlength=group_names.size * key_names.size)
        columns["derived"] = counts[seg_ids].tolist()
    # seg_ids are the (group, key) segments present; a loop per segment only assembles dicts.
    by_group: dict[str, dict[str, Summary]] = {}
    for j, seg in enumerate(seg_ids.tolist()):
        g, k = divmod(seg, key_names.size)
        row = {
            name: col[j]
            for name, col in columns.items()
            if name != "derived" or key_names[k] == TOTAL
        }
        by_group.setdefault(str(group_names[g]), {})[str(key_names[k])] = row
    ordered = {
        g: {k: by_group[g][k] for k in _key_order(by_group[g], first)}
        for g in _group_order(by_group)
    }
    return ordered[""] if group_labels is None else ordered


def _segments(
    segment: NDArray[np.intp], values: NDArray[np.float64]
) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.intp], NDArray[np.intp]]:
    """Sort once by (segment, value); return segment ids, sorted values, starts and counts."""
    order = np.lexsort((values, segment))
    seg_sorted = segment[order]
    v = values[order]
    starts = np.flatnonzero(np.r_[True, seg_sorted[1:] != seg_sorted[:-1]])
    counts = np.diff(np.r_[starts, seg_sorted.size])
    return seg_sorted[starts], v, starts, counts


def _latency_stats(
    segment: NDArray[np.intp], values: NDArray[np.float64]
) -> tuple[NDArray[np.intp], dict[str, list[Any]]]:
    seg_ids, v, starts, counts = _segments(segment, values)
    # a sum beyond a float (only in a store written before import bounded latencies) is None
    with np.errstate(over="ignore", invalid="ignore"):
        columns: dict[str, list[Any]] = {
            "count": counts.tolist(),
            "mean": _nums(np.add.reduceat(v, starts) / counts),
        }
        for p in PERCENTILES:
            columns[f"p{p}"] = _nums(_segment_percentile(v, starts, counts, p))
    return seg_ids, columns


def _token_stats(
    segment: NDArray[np.intp], values: NDArray[np.float64]
) -> tuple[NDArray[np.intp], dict[str, list[Any]]]:
    seg_ids, v, starts, counts = _segments(segment, values)
    with np.errstate(over="ignore", invalid="ignore"):
        totals = np.add.reduceat(v, starts)
        return seg_ids, {
            "count": counts.tolist(),
            "mean": _nums(totals / counts),
            "total": _nums(totals),
        }


def _segment_percentile(
    v: NDArray[np.float64], starts: NDArray[np.intp], counts: NDArray[np.intp], p: float
) -> NDArray[np.float64]:
    """numpy.percentile(method="linear") of every sorted segment at once.

    The virtual index (n - 1) * p / 100 and the two-sided lerp are numpy's own, so the result
    equals np.percentile on each segment bit for bit, not just approximately.
    """
    q = np.true_divide(p, 100)
    virtual = (counts - 1) * q
    prev = np.floor(virtual)
    gamma = virtual - prev
    lo = prev.astype(np.intp)
    hi = np.minimum(lo + 1, counts - 1)
    a = v[starts + lo]
    b = v[starts + hi]
    diff = b - a
    out = a + diff * gamma
    # numpy interpolates from the upper neighbour when gamma >= 0.5 (better rounding).
    upper = gamma >= 0.5
    out[upper] = (b - diff * (1 - gamma))[upper]
    return out


def _labels(values: ArrayLike) -> NDArray[np.str_]:
    """values as a str array, None, NaN and masked (a missing tag) mapped to NO_TAG."""
    masked = np.ma.getmaskarray(values).reshape(-1) if np.ma.isMaskedArray(values) else None
    arr = np.asarray(np.ma.getdata(values)).reshape(-1)
    if masked is None and arr.dtype.kind in "US":
        return arr.astype(str)
    arr = arr.astype(object)
    missing = _missing_ufunc(arr).astype(bool)
    if masked is not None:
        missing |= masked
    arr[missing] = NO_TAG
    return arr.astype(str)


def _is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


_missing_ufunc = np.frompyfunc(_is_missing, 1, 1)


def _floats(values: ArrayLike) -> NDArray[np.float64]:
    """values as float64, None and masked entries (DuckDB's NULL in fetchnumpy) becoming NaN."""
    if np.ma.isMaskedArray(values):
        filled = np.ma.filled(np.ma.asarray(values).astype(np.float64), np.nan)
        return np.asarray(filled, dtype=np.float64).reshape(-1)
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = np.where(_missing_ufunc(arr).astype(bool), np.nan, arr)
    return np.asarray(arr, dtype=np.float64).reshape(-1)


def _key_order(present: Iterable[str], first: tuple[str, ...]) -> list[str]:
    present = set(present)
    return list(dict.fromkeys(str(k) for k in first if k in present)) + sorted(
        present.difference(first)
    )


def _group_order(present: Iterable[Any]) -> list[str]:
    seen = {str(g) for g in present}
    names = sorted(seen - {NO_TAG})
    return [*names, NO_TAG] if NO_TAG in seen else names


def _num(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _nums(arr: NDArray[np.float64]) -> list[float | None]:
    return [_num(x) for x in arr.tolist()]
