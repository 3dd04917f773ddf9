"""A run's report where other tools read it: a Parquet per-query table, an MLflow run.

MLflow (the optional ``rageval[mlflow]`` extra, mlflow-skinny) gets one MLflow run per export:
every run value as a metric (its name made MLflow-safe: mlflow_name), the latency percentiles,
token totals and cost as metrics too (ops_metrics), every setting and the
run's own retriever settings as params, and as artifacts the per-query table (per_query.csv) and
the whole report (report.json, as ``rageval evaluate --json --per-query`` prints it). Nothing is
sent anywhere but the tracking URI the user names (or MLflow's own default).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval_core.errors import UsageError
from rageval_core.terminal import strict_json

#: the characters MLflow allows in a metric or param name; others become "_", "@" becomes "_at_"
_MLFLOW_UNSAFE = re.compile(r"[^\w\-. /]")
#: MLflow's limit on a param value's length
MLFLOW_PARAM_MAX = 6000


def mlflow_name(name: str) -> str:
    """A metric name MLflow accepts: nDCG@10 -> nDCG_at_10, P(rel=2)@5 -> P_rel_2__at_5."""
    return _MLFLOW_UNSAFE.sub("_", name.replace("@", "_at_"))


def per_query_rows(report: Any) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows) of the per-query table: query_id, then one column per metric (None: the
    query is not scored on it)."""
    names = list(report.per_query)
    columns = ["query_id", *names]
    rows = []
    for i, qid in enumerate(report.query_ids):
        values = [float(report.per_query[n][i]) for n in names]
        rows.append([str(qid), *(None if math.isnan(v) else v for v in values)])
    return columns, rows


def write_per_query_parquet(report: Any, path: Path) -> int:
    """The per-query table as Parquet (string query_id, float64 metrics, null = not scored)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, rows = per_query_rows(report)
    arrays = [pa.array([r[0] for r in rows], type=pa.string())]
    arrays += [pa.array([r[j] for r in rows], type=pa.float64()) for j in range(1, len(columns))]
    table = pa.Table.from_arrays(arrays, names=columns)
    table = table.replace_schema_metadata(
        {"rageval.run": report.run, "rageval.settings": strict_json(report.settings)}
    )
    partial = path.with_name(path.name + ".partial")
    try:
        pq.write_table(table, partial)
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return len(rows)


def per_query_csv(report: Any) -> str:
    columns, rows = per_query_rows(report)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(
            ["" if v is None else (repr(v) if isinstance(v, float) else v) for v in row]
        )
    return out.getvalue()


def ops_metrics(ops: Mapping[str, Any]) -> dict[str, float]:
    """The report's latency percentiles, token counts and cost as flat metric names:
    latency_ms.<stage>.<p50|p90|p95|p99|mean>, tokens.<kind>.total, cost_usd.total|per_query."""
    out: dict[str, float] = {}
    for stage, stats in (ops.get("latency_ms") or {}).items():
        for key in ("mean", "p50", "p90", "p95", "p99"):
            if stats.get(key) is not None:
                out[f"latency_ms.{stage}.{key}"] = float(stats[key])
    for kind, stats in (ops.get("tokens") or {}).items():
        if stats.get("total") is not None:
            out[f"tokens.{kind}.total"] = float(stats["total"])
    cost = ops.get("cost_usd") or {}
    for key in ("total", "per_query"):
        if cost.get(key) is not None:
            out[f"cost_usd.{key}"] = float(cost[key])
    return out


def mlflow_params(report: Any, run_settings: Mapping[str, Any]) -> dict[str, str]:
    """The params of an MLflow export: the evaluation settings, then the run's own settings
    (prefixed run.), each as text cut to MLflow's limit."""
    params: dict[str, str] = {}
    for key, value in report.settings.items():
        params[mlflow_name(key)] = _param_text(value)
    for key, value in run_settings.items():
        params[mlflow_name(f"run.{key}")] = _param_text(value)
    return params


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else strict_json(value)
    return text[:MLFLOW_PARAM_MAX]


def export_mlflow(
    report: Any,
    run_settings: Mapping[str, Any],
    tracking_uri: str | None = None,
    experiment: str | None = None,
) -> tuple[str, str]:
    """Log the report as one MLflow run; returns (experiment id, MLflow run id)."""
    try:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient
    except ImportError as e:
        raise UsageError(
            "export --to mlflow needs MLflow's client: pip install 'rageval[mlflow]'"
        ) from e
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if uri is not None and (uri.startswith("file:") or "://" not in uri):
        # MLflow 3 keeps its local file store only on request; a user naming one requests it
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    import time

    from mlflow.exceptions import MlflowException

    try:
        client = MlflowClient(tracking_uri=uri)
        name = experiment or "rageval"
        found = client.get_experiment_by_name(name)
        exp_id = found.experiment_id if found is not None else client.create_experiment(name)
        run = client.create_run(
            exp_id,
            run_name=report.run,
            tags={"rageval.run": report.run, "rageval.source": "rageval"},
        )
        run_id = run.info.run_id
        now = int(time.time() * 1000)
        values = {k: v for k, v in report.metrics.items() if not math.isnan(v)}
        values.update(ops_metrics(report.ops))
        metrics = [Metric(mlflow_name(k), float(v), now, 0) for k, v in values.items()]
        params = [Param(k, v) for k, v in mlflow_params(report, run_settings).items()]
        tags = [RunTag("rageval.metric_names", strict_json(list(report.metrics)))]
        for start in range(0, max(len(metrics), len(params), 1), 100):  # log_batch's limits
            client.log_batch(
                run_id,
                metrics=metrics[start : start + 100],
                params=params[start : start + 100],
                tags=tags if start == 0 else [],
            )
        client.log_text(run_id, per_query_csv(report), "per_query.csv")
        report_json = strict_json(report.to_json(per_query=True), indent=1)
        client.log_text(run_id, report_json, "report.json")
        client.set_terminated(run_id)
    except MlflowException as e:
        raise UsageError(f"MLflow refused the export: {e.message}") from e
    return str(exp_id), str(run_id)


def write_trec_qrels(rows: list[tuple[str, str, float]], path: Path) -> int:
    """rows (query_id, doc_id, grade) as TREC qrels (`qid 0 docno rel`, an integral grade as an
    integer); an id with whitespace cannot be one field of a line: UsageError before writing."""
    for q, d, _ in rows:
        for what, value in (("query id", q), ("document id", d)):
            if not value or any(c.isspace() for c in value):
                raise UsageError(f"{what} {value!r} holds whitespace: TREC qrels cannot carry it")
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for q, d, grade in rows:
            shown = str(int(grade)) if float(grade).is_integer() else repr(float(grade))
            fh.write(f"{q} 0 {d} {shown}\n")
    return len(rows)
