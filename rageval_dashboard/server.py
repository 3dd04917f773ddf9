"""How `rageval dashboard` starts Streamlit: its own options, an absolute store path, signals passed on.

Streamlit reads `.streamlit/config.toml` only from the folder it is started in, so an installed
`rageval dashboard` started anywhere else would listen on every interface, send usage statistics
and show the Deploy button. The options below go on Streamlit's command line instead, which wins
over any config file; `.streamlit/config.toml` repeats them for
`streamlit run rageval_dashboard/app.py` from the repository (a test keeps the two equal). This
module does not import Streamlit.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any

from rageval_core.errors import UsageError

APP = Path(__file__).resolve().parent / "app.py"
DEFAULT_HOST = "127.0.0.1"
DB_ENV = "RAGEVAL_DB"
#: after SIGTERM/SIGINT, how long Streamlit gets to stop before it is killed (the port is then free)
STOP_GRACE_S = 1.5

#: Streamlit's options for this app (`section.key`: value)
OPTIONS: dict[str, Any] = {
    # local only: the app shows users' run data; an address also skips Streamlit's external-IP
    # lookup (no network at run time)
    "server.address": DEFAULT_HOST,
    "server.headless": True,
    # uploads larger than this get Streamlit's own clear message
    "server.maxUploadSize": 200,
    "server.runOnSave": False,
    "server.fileWatcherType": "none",
    # no full garbage collection after every script run: with a large run's caches in memory it
    # held the interpreter for ~0.2 s after the page was built, and the page's last elements
    # waited for it on their way to the browser (a slider move took that much longer); Python's
    # own generational collector still runs
    "runner.postScriptGC": False,
    "browser.gatherUsageStats": False,
    # no Deploy button, no developer menu
    "client.toolbarMode": "viewer",
    # a light and a dark theme and no base: the page follows the system's light/dark setting
    # (and the app menu can switch it)
    "theme.light.primaryColor": "#2563eb",
    "theme.dark.primaryColor": "#60a5fa",
}


def is_loopback(host: str) -> bool:
    """Whether host names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _flag_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def command(
    port: int, host: str = DEFAULT_HOST, overrides: dict[str, Any] | None = None
) -> list[str]:
    """`python -m streamlit run app.py` with every option of OPTIONS (overrides win), the port
    and the host."""
    options = {**OPTIONS, **(overrides or {}), "server.address": host, "server.port": port}
    flags = [f"--{name}={_flag_value(value)}" for name, value in options.items()]
    return [sys.executable, "-m", "streamlit", "run", str(APP), *flags]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGTERM when `rageval dashboard` dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _port_taken(host: str, port: int) -> bool:
    """Whether something listens on host:port (as Streamlit binds it: SO_REUSEADDR, so a port
    a stopped server left in TIME_WAIT counts as free)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(address)
    except OSError:
        return True
    return False


def _url(host: str, port: int) -> str:
    shown = "localhost" if host in ("0.0.0.0", "::") else host
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def _is_streamlit(url: str) -> bool:
    """Whether a Streamlit app answers at url (its health check; this machine or the given host)."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
            return bool(r.status == 200 and r.read(16).strip() == b"ok")
    except (OSError, ValueError):
        return False


def port_problem(host: str, port: int) -> str | None:
    """What to do when host:port is taken (Streamlit would only say "Port 8501 is not
    available"): open the dashboard already running there, or take the next free port."""
    if not _port_taken(host, port):
        return None
    url = _url(host, port)
    free = next((p for p in range(port + 1, port + 20) if not _port_taken(host, p)), None)
    other = f"rageval dashboard --port {free}" if free else "rageval dashboard --port N"
    if _is_streamlit(url):
        return (
            f"port {port} is in use: a dashboard already runs on {url} (open it, or stop it "
            f"with Ctrl-C in its terminal); to start another one: {other}"
        )
    return f"port {port} on {host} is in use by another program; start on a free port: {other}"


def serve(db: Path, port: int, host: str = DEFAULT_HOST) -> int:
    """Run Streamlit on db until it exits or this process gets SIGTERM/SIGINT/SIGHUP (passed on;
    Streamlit is killed if it has not stopped STOP_GRACE_S later). Returns its exit code; a
    UsageError (exit 2) before Streamlit starts when the port is taken."""
    problem = port_problem(host, port)
    if problem is not None:
        raise UsageError(problem)
    env = {**os.environ, DB_ENV: str(db)}
    proc = subprocess.Popen(
        command(port, host),
        env=env,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    stop_at: list[float] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if not stop_at:
            stop_at.append(time.monotonic() + STOP_GRACE_S)
        if proc.poll() is None:
            proc.send_signal(signum)

    caught = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in caught}
    try:
        while True:
            try:
                code = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if stop_at and time.monotonic() > stop_at[0]:
                    proc.kill()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if stop_at:  # stopped on request: that is a normal end
        return 0
    return code if code >= 0 else 128 - code
