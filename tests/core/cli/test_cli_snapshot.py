"""tests/cli_snapshot.py (`make cli-snapshot`), the script whose outputs are diffed before and after
a restructure, calls every command: a command added to the parser and not to the script fails here.

The script itself runs ~80 processes (two minutes): it is a tool run by hand, not a test."""

from __future__ import annotations

import argparse

from rageval_core.cli.dispatch import build_parser
from tests import cli_snapshot


def commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_the_snapshot_script_asks_every_command_for_its_help() -> None:
    assert set(cli_snapshot.COMMANDS) == commands()
    helped = {argv[0] for _, argv in cli_snapshot.CALLS if argv[1:] == ("--help",)}
    assert helped == commands()


def test_the_snapshot_script_runs_every_command_but_the_server() -> None:
    """Each command is called for real at least once (`dashboard` serves until stopped)."""
    run = {argv[0] for _, argv in cli_snapshot.CALLS if argv and "--help" not in argv}
    assert commands() - run == {"dashboard"}
    labels = [label for label, _ in cli_snapshot.CALLS]
    assert len(labels) == len(set(labels)), "two calls write to the same files"
