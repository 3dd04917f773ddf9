"""The CLI's "why do my numbers differ?" table (rageval_core.evaluation.preset_parity.Explanation)."""

from __future__ import annotations

import argparse
from typing import Any

from rageval_core.terminal import json_text, text_table


def print_explanation(explanation: Any, args: argparse.Namespace) -> int:
    if args.json:
        print(json_text(explanation.to_json()))
    else:
        print(f"preset {explanation.preset}: {explanation.project}")
        print("each row switches one more setting from rageval's default to the preset's")
        print(text_table(*explanation.table()))
    return 0
