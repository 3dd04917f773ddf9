"""The `rageval` command: one module per command family (`*_commands.py`), the flag tables
(`*_flags.py`), the helpers they share (common.py) and the parser and dispatch (dispatch.py).

`rageval_core.cli:entry` is the console script (pyproject.toml); `main` runs it in a process.
"""

from rageval_core.cli.dispatch import entry
from rageval_core.cli.spark_submit import main

__all__ = ["entry", "main"]
