"""The script `spark-submit` runs: the `rageval` command inside the driver spark-submit starts.

    spark-submit --master spark://host:7077 "$(python -m rageval_core.cli.spark_submit --path)" \
        evaluate 's3a://bucket/run/*.jsonl' --engine spark --json

`--engine spark` then uses the session spark-submit set up (its --master and --conf apply).
docs/scale-out.md.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    # run as a script, this file's folder (rageval_core/) comes first on sys.path, where its
    # numbers.py would stand in for the standard library's numbers module: take it off first
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path.pop(0)
    if sys.argv[1:] == ["--path"]:  # where this script is, for spark-submit's command line
        print(os.path.abspath(__file__))
        return
    from rageval_core.cli.dispatch import entry

    entry()


if __name__ == "__main__":
    main()
