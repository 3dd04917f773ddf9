"""The CLI's part of the seed-parity presets: which settings flags were given, and the
"why do my numbers differ?" table (rageval_core.parity.Explanation)."""

from __future__ import annotations

import argparse
from typing import Any

from rageval_core.terminal import json_text, text_table


class Given(argparse.Action):
    """Stores a setting's value (or True for a switch) and notes that the user gave it, so a
    --preset's values yield only to the flags actually on the command line."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        given = set(getattr(namespace, "given_settings", ()))
        namespace.given_settings = given | {self.dest}


def given_values(args: argparse.Namespace) -> dict[str, Any]:
    """{setting: value} of the settings flags actually on the command line."""
    return {name: getattr(args, name) for name in sorted(getattr(args, "given_settings", ()))}


def print_explanation(explanation: Any, args: argparse.Namespace) -> int:
    if args.json:
        print(json_text(explanation.to_json()))
    else:
        print(f"preset {explanation.preset}: {explanation.project}")
        print("each row switches one more setting from rageval's default to the preset's")
        print(text_table(*explanation.table()))
    return 0
