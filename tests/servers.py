"""A local server under test: a free port on 127.0.0.1, and waiting until Streamlit answers."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports_in(ports: range, n: int = 1) -> list[int]:
    """n ports of ports that 127.0.0.1 can bind now (a test given a range of its own)."""
    found = []
    for port in ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == n:
            return found
    raise RuntimeError(f"fewer than {n} free ports in {ports}")


def wait_healthy(url: str, proc: subprocess.Popen[Any], timeout_s: float = 60.0) -> None:
    """Until url/_stcore/health answers 200; an error when proc exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not become healthy in {timeout_s} s")
