"""`rageval dashboard` started from any folder: its own Streamlit options, loopback only by default,
the store as an absolute path, and SIGTERM/SIGINT that free the port at once."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard import server
from tests.cli import rageval
from tests.paths import REPO
from tests.servers import free_port, wait_healthy


def test_the_repository_config_says_what_the_command_passes() -> None:
    """`streamlit run rageval_dashboard/app.py` from the repo and `rageval dashboard` anywhere
    agree."""
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))

    def flat(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in table.items():
            if isinstance(value, dict):  # [theme.light] is a table inside [theme]
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[f"{prefix}{key}"] = value
        return out

    assert flat(config) == server.OPTIONS
    # no base theme: the page follows the system's light/dark setting
    assert "theme.base" not in server.OPTIONS
    assert {"theme.light.primaryColor", "theme.dark.primaryColor"} <= set(server.OPTIONS)


def test_command_carries_every_option_and_the_address() -> None:
    cmd = server.command(8999, "127.0.0.1")
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and Path(cmd[4]) == server.APP
    flags = dict(f[2:].split("=", 1) for f in cmd[5:])
    assert flags["server.address"] == "127.0.0.1" and flags["server.port"] == "8999"
    assert flags["browser.gatherUsageStats"] == "false" and flags["server.headless"] == "true"
    assert flags["client.toolbarMode"] == "viewer"
    assert set(flags) == {*server.OPTIONS, "server.port"}
    assert (
        dict(f[2:].split("=", 1) for f in server.command(1, "0.0.0.0")[5:])["server.address"]
        == "0.0.0.0"
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert server.is_loopback(host) is loopback


def test_the_sidebar_shows_the_store_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(
        "RAGEVAL_DB", "runs/my.duckdb"
    )  # relative: resolved against the start folder
    at = AppTest.from_file(str(REPO / "rageval_dashboard" / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert str(tmp_path / "runs" / "my.duckdb") in [t.value for t in at.sidebar.text]


def _listeners(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} write them) listening on port."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def _rageval_command() -> list[str]:
    script = shutil.which("rageval", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "rageval_core.cli"]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_started_from_another_folder_it_is_private_and_stops_at_once(
    stop: signal.Signals, tmp_path: Path
) -> None:
    """From a folder with no .streamlit/: 127.0.0.1 only, no usage-statistics talk, the store
    resolved against that folder, and the port free within 2 s of the signal."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "RAGEVAL_"))}
    env["HOME"] = str(tmp_path)  # no ~/.streamlit of the machine's user either
    proc = subprocess.Popen(
        [*_rageval_command(), "--db", "here.duckdb", "dashboard", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        assert _listeners(port) == ["0100007F"]  # 127.0.0.1, and nothing on IPv6
        proc.send_signal(stop)
        stopped = time.monotonic()
        while _listeners(port) and time.monotonic() - stopped < 5:
            time.sleep(0.05)
        freed_s = time.monotonic() - stopped
        assert not _listeners(port) and freed_s < 2.0, (
            f"port still held {freed_s:.2f} s after {stop.name}"
        )
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    said = (out + err).lower()
    assert "usage statistics" not in said and "gatherusagestats" not in said
    assert f"store {tmp_path / 'here.duckdb'}" in err
    with socket.socket() as s:  # a new server can take the port again (as Tornado binds it)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()


def test_another_host_is_warned_about(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Path, int, str]] = []
    monkeypatch.setattr(server, "serve", lambda db, port, host: seen.append((db, port, host)) or 0)
    monkeypatch.chdir(tmp_path)
    r = rageval("dashboard", "--host", "0.0.0.0", "--port", "8600")
    assert r.returncode == 0 and "warning: the dashboard listens on 0.0.0.0" in r.stderr
    assert seen == [(tmp_path / ".rageval" / "rageval.duckdb", 8600, "0.0.0.0")]
    quiet = rageval("dashboard", db=tmp_path / "x.duckdb")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr
    assert seen[-1] == (tmp_path / "x.duckdb", 8501, "127.0.0.1")


def test_a_taken_port_is_refused_before_streamlit_with_what_to_do(tmp_path: Path) -> None:
    """A second `rageval dashboard` (a second `make run`) on a port another program holds: exit
    2 at once with the next free port, not Streamlit's bare "Port 8501 is not available"."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run(
            [
                *_rageval_command(),
                "--db",
                str(tmp_path / "s.duckdb"),
                "dashboard",
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "is not available" not in r.stderr
    assert f"rageval: port {port} on 127.0.0.1 is in use by another program" in r.stderr
    assert "start on a free port: rageval dashboard --port " in r.stderr


def test_a_second_dashboard_on_the_port_points_at_the_running_one(tmp_path: Path) -> None:
    port = free_port()
    command = [*_rageval_command(), "--db", str(tmp_path / "s.duckdb"), "dashboard"]
    first = subprocess.Popen(
        [*command, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", first)
        second = subprocess.run(
            [*command, "--port", str(port)], capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2 and "Traceback" not in second.stderr
        assert (
            f"port {port} is in use: a dashboard already runs on http://127.0.0.1:{port} "
            "(open it, or stop it" in second.stderr
        )
        assert "to start another one: rageval dashboard --port " in second.stderr
        assert first.poll() is None  # the running one is left alone
    finally:
        first.terminate()
        first.communicate(timeout=10)
    assert server.port_problem("127.0.0.1", port) is None  # once stopped, the port is free again
