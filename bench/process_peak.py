"""Run a command and print its wall time, CPU time, own peak RSS and output, as one JSON line.

    python -m bench.process_peak CMD [ARG ...]

Standard library only, so this Python stays small: the peak is read with os.wait4 for that
one child, and a child started from a large parent could otherwise be charged with the
parent's pages (the bench module imports rageval, about 100 MB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": usage.ru_maxrss / 1024,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "returncode": code,
                "stdout": out,
                "stderr": err[-2000:],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
