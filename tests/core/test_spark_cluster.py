"""`rageval evaluate FILE --engine spark --master spark://127.0.0.1:PORT` on a standalone cluster:
a master and two workers, each its own JVM, started here with the daemon script pyspark ships
($SPARK_HOME/sbin/spark-daemon.sh: pyspark's wheel has no start-master.sh, which is that script's
one call), their logs, pids and work folders under the test's tmp folder, stopped by the test.

The run values equal the local path's to 1e-12, and the input file is opened once (the kernel's
count, tests/file_opens.py) across the three jobs of the command (counts, metrics, per-query).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.core.test_engine_spark import SAMPLES, assert_same_numbers, evaluate_json, spark_missing
from tests.file_opens import FileOpens
from tests.paths import in_ci
from tests.servers import free_ports_in

pytestmark = pytest.mark.slow
#: the ports this project's Spark tests may take (the master, its UI, two workers and their UIs)
PORTS = range(7070, 7100)
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


@dataclass
class Cluster:
    url: str
    ui: str
    root: Path
    env: dict[str, str]
    daemons: list[int] = field(default_factory=list)
    leftovers: list[int] = field(default_factory=list)

    def status(self) -> dict[str, object]:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as r:  # the master's own state
            return json.loads(r.read())  # type: ignore[no-any-return]


def _daemon(env: dict[str, str], *args: str) -> None:
    sbin = Path(env["SPARK_HOME"]) / "sbin" / "spark-daemon.sh"
    subprocess.run(
        ["bash", str(sbin), *args], env=env, check=True, capture_output=True, timeout=120
    )


def _ours(root: Path) -> list[int]:
    """Every process whose command line or working folder is under root: the daemons, the
    executors the workers started and their Python workers."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if str(root) in cmdline or cwd.startswith(str(root)):
            pids.append(int(proc.name))
    return pids


@contextlib.contextmanager
def standalone_cluster(root: Path) -> Iterator[Cluster]:
    """A master and two workers (one core each) on 127.0.0.1; stopped with the same script on
    the way out, and any process of theirs still alive then is killed and listed in leftovers."""
    import pyspark

    master_port, master_ui, *worker_ports = free_ports_in(PORTS, 6)
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_MASTER_HOST": "127.0.0.1",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(root / "logs"),
        "SPARK_PID_DIR": str(root / "pids"),
        "SPARK_IDENT_STRING": "rageval-test",
        # a marker on the daemons' command lines: the finalizer finds every JVM of this cluster
        "SPARK_DAEMON_JAVA_OPTS": f"-Drageval.test.cluster={root}",
        "PYSPARK_PYTHON": sys.executable,
    }
    found = Cluster(f"spark://127.0.0.1:{master_port}", f"http://127.0.0.1:{master_ui}", root, env)
    try:
        _daemon(
            env,
            "start",
            MASTER,
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            str(master_port),
            "--webui-port",
            str(master_ui),
        )
        for instance in (1, 2):
            work = root / f"worker-{instance}"
            work.mkdir()
            port, ui = worker_ports[2 * (instance - 1) : 2 * instance]
            _daemon(
                {**env, "SPARK_WORKER_DIR": str(work)},
                "start",
                WORKER,
                str(instance),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(work),
                found.url,
            )
        deadline = time.monotonic() + 120
        while True:
            try:
                if found.status().get("aliveworkers") == 2:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-1500:] for p in (root / "logs").glob("*.out"))
                raise AssertionError(f"the two workers did not register with {found.url}:\n{logs}")
            time.sleep(0.2)
        found.daemons = [pid for pid in _ours(root) if b"rageval.test.cluster" in _cmdline(pid)]
        yield found
    finally:
        for instance in (1, 2):
            _daemon(env, "stop", WORKER, str(instance))
        _daemon(env, "stop", MASTER, "1")
        deadline = time.monotonic() + 30
        while _ours(root) and time.monotonic() < deadline:  # the JVMs take a moment to exit
            time.sleep(0.2)
        found.leftovers = _ours(root)
        for pid in found.leftovers:  # an executor or JVM the scripts left behind is ended
            os.kill(pid, signal.SIGKILL)


def test_a_run_on_two_workers_gives_the_local_numbers_reading_the_input_once(
    tmp_path: Path,
) -> None:
    missing = spark_missing()
    if missing is not None:
        if in_ci():
            pytest.fail(f"{missing}; CI installs it with `make test`", pytrace=False)
        pytest.skip(missing)
    run = tmp_path / "bm25.jsonl"  # a copy: only this command opens it
    run.write_bytes((SAMPLES / "bm25.jsonl").read_bytes())
    (tmp_path / "cluster").mkdir()
    with standalone_cluster(tmp_path / "cluster") as cluster, FileOpens(run) as opens:
        assert len(cluster.daemons) == 3, cluster.daemons  # a master and two workers: three JVMs
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "rageval_core.cli",
                "evaluate",
                str(run),
                "--engine",
                "spark",
                "--master",
                cluster.url,
                "--per-query",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=cluster.env,
            cwd=tmp_path,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        # the executors ran on the workers: the master lists the application, finished
        apps = cluster.status()["completedapps"]
        assert [app["name"] for app in apps] == ["rageval"]  # type: ignore[index]
        executors = list((tmp_path / "cluster").glob("worker-*/app-*/*/stderr"))
        assert len(executors) == 2, executors  # one executor on each worker
    # three jobs (counts, run values, per-query values) over one read of the file
    assert opens.count == 1
    spark = json.loads(out.stdout)
    assert spark["engine"]["master"] == cluster.url
    assert_same_numbers(spark, evaluate_json(str(run), "--per-query"))
    # the stop scripts ended every JVM of the cluster, the workers' executors with them
    assert cluster.leftovers == []


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
