"""Every extra of pyproject.toml installed ALONE into an empty venv, from uv.lock, runs its command;
the bare install (`pip install rageval`) runs the core, and every command that needs an extra
says which one in one line (exit 2), never a traceback.

What the suite's own venv cannot show: it has every extra at once (the spark extra lacked pandas
for a year because the dashboard's pandas was always there). The venvs are made as a user's would
be, but from the lock: `uv export --frozen --extra X --no-dev` then `uv pip install --no-deps -r`,
and the project's wheel (built once) `--no-deps`. uv's cache makes each install seconds; the
index is reached only to install.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tomllib
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paths import REPO, in_ci
from tests.servers import free_ports_in, wait_healthy

RUN = REPO / "sample_runs" / "bm25.jsonl"
#: extras that are the project's own tooling, not a feature a user installs
TOOLING = frozenset({"test", "bench", "dev"})
#: the ports the dashboard's test may take
DASHBOARD_PORTS = range(8660, 8670)


def _uv() -> str:
    for uv in (REPO / ".tools" / "bin" / "uv", shutil.which("uv")):
        if uv and Path(uv).exists():
            return str(uv)
    message = "uv is not installed (`make setup-test` puts it in .tools/bin)"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def feature_extras() -> list[str]:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    return sorted(set(extras) - TOOLING)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once for every venv of the module."""
    out = tmp_path_factory.mktemp("wheel")
    _run([_uv(), "build", "--wheel", "--quiet", "--out-dir", str(out), str(REPO)])
    (found,) = out.glob("rageval-*.whl")
    return found


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kwargs)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{argv}: {out.stderr[-3000:]}"
    return out  # type: ignore[no-any-return]


def make_venv(folder: Path, wheel: Path, extra: str | None) -> Path:
    """A venv with rageval and the locked packages of extra (None: the core alone); its bin/."""
    uv = _uv()
    venv = folder / "venv"
    _run([uv, "venv", "--quiet", str(venv)], env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})
    requirements = folder / "requirements.txt"
    _run(
        [
            uv,
            "export",
            "--frozen",
            "--no-dev",
            "--no-emit-project",
            "--quiet",
            "-o",
            str(requirements),
        ]
        + (["--extra", extra] if extra else []),
        cwd=REPO,
    )
    python = str(venv / "bin" / "python")
    _run(
        [uv, "pip", "install", "--quiet", "--python", python, "--no-deps", "-r", str(requirements)]
    )
    _run([uv, "pip", "install", "--quiet", "--python", python, "--no-deps", str(wheel)])
    return venv / "bin"


def _env(folder: Path) -> dict[str, str]:
    # nothing of the suite's own venv: PATH has the new venv's bin first, no PYTHONPATH
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "RAGEVAL_DB": str(folder / "store.duckdb"), "HOME": str(folder)}


def rageval(bin_dir: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "rageval"), *args],
        capture_output=True,
        text=True,
        cwd=folder,
        env=_env(folder),
        timeout=900,
    )


def _ok(out: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out


# --- each extra's command --------------------------------------------------------------------


def serves_the_dashboard(bin_dir: Path, folder: Path) -> None:
    _ok(rageval(bin_dir, folder, "import", str(RUN)))
    (port,) = free_ports_in(DASHBOARD_PORTS)
    proc = subprocess.Popen(
        [str(bin_dir / "rageval"), "dashboard", "--port", str(port)],
        cwd=folder,
        env=_env(folder),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # Streamlit's own children end with it
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout_s=120)
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200
            assert '<div id="root">' in r.read().decode()  # Streamlit's page, served
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read().decode()


def evaluates_with_the_semantic_scorer(bin_dir: Path, folder: Path) -> None:
    out = _ok(rageval(bin_dir, folder, *SEMANTIC, "--metrics", "EvidenceRecall@10", "--json"))
    assert 0 < json.loads(out.stdout)["metrics"]["EvidenceRecall@10"] <= 1


def evaluates_with_an_onnx_embedder(bin_dir: Path, folder: Path) -> None:
    from tests.onnx_models import write_embedder  # built here: onnx is the suite's, not the extra's

    write_embedder(folder / "model")
    out = _ok(rageval(bin_dir, folder, *MODELS, "--metrics", "EvidenceRecall@10", "--json"))
    assert 0 <= json.loads(out.stdout)["metrics"]["EvidenceRecall@10"] <= 1


def exports_to_mlflow(bin_dir: Path, folder: Path) -> None:
    _ok(rageval(bin_dir, folder, "import", str(RUN)))
    uri = (folder / "mlruns").as_uri()
    _ok(rageval(bin_dir, folder, "export", "bm25", "--to", "mlflow", "--tracking-uri", uri))
    assert list((folder / "mlruns").rglob("nDCG_at_10")), "no metric written to the file store"


def evaluates_on_spark(bin_dir: Path, folder: Path) -> None:
    if shutil.which("java") is None:
        message = "java is not on the PATH (`make java` installs openjdk-17-jre-headless)"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    metrics = ["--metrics", "nDCG@10 EvidenceRecall@10", "--json"]
    run = folder / "head.jsonl"  # the sample's first 60 queries: the JVM's start is the test
    run.write_text("".join(RUN.read_text(encoding="utf-8").splitlines(True)[:61]), encoding="utf-8")
    spark = json.loads(
        _ok(rageval(bin_dir, folder, "evaluate", str(run), "--engine", "spark", *metrics)).stdout
    )
    local = json.loads(_ok(rageval(bin_dir, folder, "evaluate", str(run), *metrics)).stdout)
    assert spark["engine"]["name"] == "spark" and spark["n_queries"] == 60
    for name, value in local["metrics"].items():
        assert abs(spark["metrics"][name] - value) <= 1e-12, name


SEMANTIC = ["evaluate", str(RUN), "--scorer", "semantic", "--embedder", "wordllama"]
MODELS = ["evaluate", str(RUN), "--scorer", "semantic", "--embedder", "onnx:model"]
#: extra -> (what its command proves, the command; the argv that needs it, for the others' venvs)
COMMANDS: dict[str, tuple[Callable[[Path, Path], None], list[str]]] = {
    "dashboard": (serves_the_dashboard, ["dashboard", "--port", "8669"]),
    "semantic": (evaluates_with_the_semantic_scorer, SEMANTIC),
    "models": (evaluates_with_an_onnx_embedder, MODELS),
    "mlflow": (exports_to_mlflow, ["export", "bm25", "--to", "mlflow"]),
    "spark": (evaluates_on_spark, ["evaluate", str(RUN), "--engine", "spark"]),
}


def says_which_extra(bin_dir: Path, folder: Path, extra: str) -> None:
    """The command that needs extra, where it is not installed: one line naming it, exit 2."""
    if "bm25" in COMMANDS[extra][1] and not (folder / "store.duckdb").exists():
        _ok(rageval(bin_dir, folder, "import", str(RUN)))
    if extra == "models" and not (folder / "model").exists():  # the folder is there: the
        from tests.onnx_models import write_embedder  # package is what is missing

        write_embedder(folder / "model")
    out = rageval(bin_dir, folder, *COMMANDS[extra][1])
    assert out.returncode == 2, (extra, out.returncode, out.stderr[-3000:])
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, (extra, out.stderr[-3000:])
    assert f"pip install 'rageval[{extra}]'" in lines[0], lines[0]


def test_every_extra_of_pyproject_has_its_command_here() -> None:
    """A new extra (e.g. `models`) needs its line in COMMANDS: what it installs must be run."""
    assert sorted(COMMANDS) == feature_extras(), "add the new extra's command to COMMANDS"


@pytest.fixture(params=feature_extras())
def extra(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_an_extra_installed_alone_runs_its_command(extra: str, wheel: Path, tmp_path: Path) -> None:
    bin_dir = make_venv(tmp_path, wheel, extra)
    if extra not in COMMANDS:
        pytest.fail(f"extra {extra!r} has no command in COMMANDS", pytrace=False)
    COMMANDS[extra][0](bin_dir, tmp_path)
    for other in sorted(set(COMMANDS) - {extra}):  # the others' commands say what is missing
        says_which_extra(bin_dir, tmp_path, other)


def test_the_bare_install_runs_the_core_and_names_each_missing_extra(
    wheel: Path, tmp_path: Path
) -> None:
    bin_dir = make_venv(tmp_path, wheel, None)
    report = json.loads(_ok(rageval(bin_dir, tmp_path, "evaluate", str(RUN), "--json")).stdout)
    assert report["n_queries"] == 360
    for extra in COMMANDS:
        says_which_extra(bin_dir, tmp_path, extra)
