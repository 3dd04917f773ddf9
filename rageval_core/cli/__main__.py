"""`python -m rageval_core.cli ARGS`: the `rageval` command."""

from rageval_core.cli.dispatch import entry

entry()
