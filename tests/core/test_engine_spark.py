"""`rageval evaluate FILE_OR_GLOB --engine spark`: Spark in local mode gives the numbers of the
local path (`rageval evaluate FILE`) to 1e-12, on a sample run, a glob of two files and Parquet;
bad input is reported as the native reader reports it; flags it cannot honour are refused.

One SparkSession (local[2]) serves every Spark test of the module: the CLI uses a session the
caller already runs and leaves it running. Without pyspark or Java the Spark tests are skipped
with the reason, and fail in CI (`make test` installs both: the spark extra, `make java`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rageval_core.engines import partition
from rageval_core.errors import ProblemLog
from rageval_core.formats import native
from rageval_core.metrics import registry
from tests.cli import rageval
from tests.paths import REPO, in_ci

SAMPLES = REPO / "sample_runs"
TOLERANCE = 1e-12
#: one pytest-xdist worker runs the module: one SparkSession (one JVM) for the whole run
pytestmark = pytest.mark.xdist_group("spark")


def spark_missing() -> str | None:
    """Why Spark cannot run here (pyspark or Java missing), or None."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install -e '.[spark]')"
    if shutil.which("java") is None:
        return "java is not on the PATH (`make java` installs openjdk-17-jre-headless)"
    return None


@pytest.fixture(scope="module")
def session() -> Iterator[Any]:
    missing = spark_missing()
    if missing is not None:
        if in_ci():
            pytest.fail(f"{missing}; CI installs it with `make test`", pytrace=False)
        pytest.skip(missing)
    from rageval_core.engines import spark

    s = spark.start("local[2]")
    try:
        yield s
    finally:
        spark.stop(s)


def evaluate_json(*args: str) -> dict[str, Any]:
    out = rageval("evaluate", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def assert_same_numbers(spark: dict[str, Any], local: dict[str, Any]) -> None:
    """Every metric Spark computed has the local value (1e-12); the ones it left out are the
    answer metrics; run, size, settings and counts are the same."""
    assert spark["run"] == local["run"]
    assert spark["n_queries"] == local["n_queries"]
    assert spark["settings"] == local["settings"]
    assert spark["counts"] == {k: v for k, v in local["counts"].items() if k != "scored_answers"}
    left_out = {name for name in local["metrics"] if name not in spark["metrics"]}
    assert {registry.parse(n).spec.family for n in left_out} <= {"generation"}
    assert list(spark["metrics"]) == [n for n in local["metrics"] if n not in left_out]
    assert spark["metrics"], "Spark computed no metric"
    for name, value in spark["metrics"].items():
        assert _close(value, local["metrics"][name]), (name, value, local["metrics"][name])
    if "per_query" in spark:
        assert spark["per_query"].keys() == local["per_query"].keys()
        for qid, values in spark["per_query"].items():
            for name, value in values.items():
                expected = local["per_query"][qid][name]
                assert _close(value, expected), (qid, name, value, expected)
    assert spark["ops"] is None
    assert spark["engine"]["name"] == "spark"
    assert "answer (generation) metrics" in spark["engine"]["not_computed"]


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:  # JSON null: NaN, not scored
        return a is b
    return math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE)


def split_run(source: Path, folder: Path, at: int) -> None:
    """source's lines as two files: the header and the first queries, then the rest."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    folder.mkdir()
    (folder / "part-1.jsonl").write_text("".join(lines[:at]), encoding="utf-8")
    (folder / "part-2.jsonl").write_text("".join(lines[at:]), encoding="utf-8")


@pytest.mark.slow
def test_a_sample_run_gives_the_local_numbers(session: Any) -> None:
    run = str(SAMPLES / "bm25.jsonl")
    spark = evaluate_json(run, "--engine", "spark")
    local = evaluate_json(run)
    assert_same_numbers(spark, local)
    assert local["counts"]["scored_evidence"] > 0 and local["counts"]["scored_ids"] > 0
    assert spark["engine"]["master"] == "local[2]"


@pytest.mark.slow
def test_a_glob_of_two_files_is_one_run_with_the_local_numbers(
    session: Any, tmp_path: Path
) -> None:
    """Per-query values too, at other settings: evidence relevance, k 5, a stricter threshold."""
    source = SAMPLES / "hybrid_rerank.jsonl"
    split_run(source, tmp_path / "parts", at=120)
    settings = ["--relevance", "evidence", "--k", "5", "--threshold", "0.8", "--per-query"]
    spark = evaluate_json(str(tmp_path / "parts" / "part-*.jsonl"), "--engine", "spark", *settings)
    local = evaluate_json(str(source), *settings)
    assert spark["settings"]["relevance"] == "evidence"
    assert_same_numbers(spark, local)
    # the glob expanded by a shell: the files one by one are the same run
    files = sorted(str(p) for p in (tmp_path / "parts").iterdir())
    assert evaluate_json(*files, "--engine", "spark", *settings) == spark


@pytest.mark.slow
def test_spark_submit_runs_the_command_with_its_own_session(session: Any, tmp_path: Path) -> None:
    """docs/scale-out.md's spark-submit command, in local mode: spark-submit starts the JVM and
    the driver, `--engine spark` uses that session (master local[1], from spark-submit)."""
    bin_dir = Path(sys.executable).parent
    script = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli.spark_submit", "--path"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    run = str(SAMPLES / "bm25.jsonl")
    metrics = ["--metrics", "nDCG@10 EvidenceRecall@10 RR"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    out = subprocess.run(
        [
            str(bin_dir / "spark-submit"),
            "--master",
            "local[1]",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.driver.bindAddress=127.0.0.1",
            script,
            "evaluate",
            run,
            "--engine",
            "spark",
            "--json",
            *metrics,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    spark = json.loads(out.stdout)
    assert spark["engine"]["master"] == "local[1]"
    assert_same_numbers(spark, evaluate_json(run, *metrics))


@pytest.mark.slow
def test_parquet_gives_the_local_numbers_and_text_says_what_is_left_out(
    session: Any, tmp_path: Path
) -> None:
    source = SAMPLES / "tfidf_char.jsonl"
    parsed = native.read(source, None, ProblemLog())
    path = tmp_path / "tfidf_char.parquet"  # no header: the run is named after the file
    pq.write_table(partition.to_arrow(parsed.queries), path)
    metrics = ["P@5", "nDCG@10", "AP", "EvidenceRecall@10", "BestRank", "NumRelRet"]
    args = ["--metrics", " ".join(metrics), "--scorer", "token_set"]
    spark = evaluate_json(str(path), "--engine", "spark", *args)
    local = evaluate_json(str(source), *args)
    assert list(spark["metrics"]) == metrics
    assert_same_numbers(spark, local)

    text = rageval("evaluate", str(path), "--engine", "spark", *args)
    assert text.returncode == 0, text.stderr
    assert "run tfidf_char: 360 queries" in text.stdout
    assert "not computed: answer (generation) metrics" in text.stdout
    assert f"{local['metrics']['nDCG@10']:.4f}" in text.stdout


BAD_LINES = [
    '{"rageval_run": {"name": "bad"}}',
    '{"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "a b"}], "relevance": {"d1": 1}}',
    '{"query_id": "q2", "retrieved": [{"doc_id": "d1", "score": "high"}]}',
    '{"query_id": "q3", "retrieved": [{"doc_id": "d2"}], "relevance": {"d2": 1.5}}',
    '{"query_id": "q4", "retrieved": [',
    '{"retrieved": []}',
    '{"query_id": "q1", "retrieved": []}',
    '{"query_id": "q5", "retrieved": [{"doc_id": ""}]}',
]


@pytest.mark.slow
def test_bad_lines_are_reported_as_the_native_reader_reports_them(
    session: Any, tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_LINES) + "\n", encoding="utf-8")
    spark = rageval("evaluate", str(path), "--engine", "spark", "--json", cwd=tmp_path)
    local = rageval("evaluate", str(path), "--json", cwd=tmp_path)
    assert spark.returncode == local.returncode == 2
    assert spark.stdout == ""
    problems = [line for line in spark.stderr.splitlines() if line.startswith("bad.jsonl:")]
    expected = [line for line in local.stderr.splitlines() if line.startswith("bad.jsonl:")]
    assert len(expected) >= 5, local.stderr
    assert sorted(problems) == sorted(expected)
    assert "Traceback" not in spark.stderr


@pytest.mark.slow
def test_a_row_only_the_partition_rejects_is_reported_by_line(session: Any, tmp_path: Path) -> None:
    """Spark reads these lines fine; the partition's checks fail the job, and the report still
    names the file's lines, as the local reader does."""
    lines = [
        '{"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "a"}], "evidence": ["a"]}',
        '{"query_id": "q2", "retrieved": [{"doc_id": "d1"}, {"doc_id": ""}], "evidence": ["a"]}',
        '{"query_id": "q3", "retrieved": [], "evidence": ["a", ""]}',
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spark = rageval("evaluate", str(path), "--engine", "spark", cwd=tmp_path)
    local = rageval("evaluate", str(path), cwd=tmp_path)
    assert spark.returncode == local.returncode == 2
    problems = [line for line in spark.stderr.splitlines() if line.startswith("rows.jsonl:")]
    expected = [line for line in local.stderr.splitlines() if line.startswith("rows.jsonl:")]
    assert [p.split(":")[1] for p in expected] == ["2", "3"], local.stderr
    assert problems == expected


@pytest.mark.slow
def test_a_run_without_queries_is_refused_as_the_native_reader_refuses_it(
    session: Any, tmp_path: Path
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text('{"rageval_run": {"name": "empty"}}\n', encoding="utf-8")
    spark = rageval("evaluate", str(path), "--engine", "spark", cwd=tmp_path)
    local = rageval("evaluate", str(path), cwd=tmp_path)
    assert spark.returncode == local.returncode == 2
    assert "empty.jsonl:0: file: no queries" in local.stderr
    assert spark.stderr == local.stderr


@pytest.mark.slow
def test_the_json_array_form_is_refused_with_what_to_do(session: Any, tmp_path: Path) -> None:
    """The native format's JSON-array form is valid locally; Spark reads lines, so it is refused
    (rather than reported as broken lines)."""
    path = tmp_path / "array.json"
    queries = [{"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "a"}]}]
    path.write_text("[\n" + json.dumps(queries[0]) + "\n]\n", encoding="utf-8")
    assert rageval("evaluate", str(path), "--json", cwd=tmp_path).returncode == 0
    out = rageval("evaluate", str(path), "--engine", "spark", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.splitlines()[0].startswith("array.json:1: file: a JSON array:")
    assert "rageval export RUN --to jsonl" in out.stderr


@pytest.mark.slow
def test_a_missing_input_is_one_line_and_exit_2(session: Any, tmp_path: Path) -> None:
    for path in (tmp_path / "nothere.jsonl", tmp_path / "none-*.jsonl"):
        out = rageval("evaluate", str(path), "--engine", "spark")
        assert out.returncode == 2
        assert out.stderr.strip().count("\n") == 0, out.stderr
        assert str(path) in out.stderr
    url = f"file://{tmp_path}/nothere.jsonl"  # a URL is checked by Spark, not beforehand
    out = rageval("evaluate", url, "--engine", "spark")
    assert out.returncode == 2
    assert out.stderr.strip() == f"rageval: {url}: no such file or folder"


# --- refused before Spark starts: no session needed ------------------------------------------


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--qrels", "x.qrels"], "--qrels"),
        (["--format", "trec"], "--format trec"),
        (["--preset", "tat-rag"], "--preset"),
        (["--scorer", "semantic"], "--scorer semantic"),
        (["--by", "topic"], "--by"),
        (["--explain-preset", "eggai"], "--explain-preset"),
        (["--ignore-identical-ids"], "--ignore-identical-ids"),
    ],
)
def test_flags_the_spark_path_cannot_honour_are_refused(flags: list[str], named: str) -> None:
    run = str(SAMPLES / "bm25.jsonl")
    out = rageval("evaluate", run, "--engine", "spark", *flags)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.strip().count("\n") == 0, out.stderr
    assert named in out.stderr and "--engine spark" in out.stderr


def test_master_without_the_spark_engine_is_refused() -> None:
    out = rageval("evaluate", str(SAMPLES / "bm25.jsonl"), "--master", "local[2]")
    assert out.returncode == 2
    assert "--master applies with --engine spark only" in out.stderr


def test_neither_the_parser_nor_the_engine_module_imports_pyspark() -> None:
    code = (
        "import sys\n"
        "from rageval_core.cli.dispatch import build_parser\n"
        "build_parser().format_help()\n"
        "import rageval_core.engines.spark\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
