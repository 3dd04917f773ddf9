"""The CLI's settings flags: one per entry of the settings schema, read back into Settings (a
--preset's values under the flags given beside it), and the statistics' flags of compare and
gate. Nothing heavy is imported here: `rageval --help` builds every parser."""

from __future__ import annotations

import argparse
from typing import Any


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


def add_settings_arguments(p: argparse.ArgumentParser) -> None:
    """The evaluation settings' flags, one per entry of rageval_core.settings.schema.SETTINGS (evaluate,
    compare and gate call this, so the flags cannot drift from each other or from the schema)."""
    from rageval_core.settings.schema import SETTINGS

    for s in SETTINGS:
        kwargs: dict[str, Any] = {"dest": s.name, "help": s.flag_help(), "action": Given}
        if s.type is bool:
            kwargs.update(nargs=0, const=True, default=s.default)
        else:
            kwargs["default"] = s.default
            if s.type is not str:
                kwargs["type"] = s.type
            if s.choices and s.choices_in_flag:
                kwargs["choices"] = s.choices
            if s.metavar:
                kwargs["metavar"] = s.metavar
        p.add_argument(s.flag, **kwargs)
        if s.off_flag:  # on by default: --no-flag turns it off
            p.add_argument(s.off_flag, **{**kwargs, "const": False, "help": f"turn {s.flag} off"})


def settings_from_args(args: argparse.Namespace) -> Any:
    """The Settings the flags of add_settings_arguments describe (a --preset's values under the
    flags given beside it)."""
    from rageval_core.evaluation.report import Settings
    from rageval_core.settings.presets import preset_values
    from rageval_core.settings.schema import SETTINGS

    # a default that follows the scorer (the threshold) is Settings' to choose unless given
    follows = {s.name for s in SETTINGS if s.default_by_scorer} - set(given_values(args))
    values = {s.name: getattr(args, s.name) for s in SETTINGS if s.name not in follows}
    if values.get("preset"):
        values = {**values, **preset_values(values["preset"], given_values(args))}
    return Settings.from_values(values)


def add_stat_arguments(p: argparse.ArgumentParser) -> None:
    from rageval_core.settings import stat_defaults as c  # not compare: --help must not load numpy

    p.add_argument(
        "--alpha",
        type=float,
        default=c.DEFAULT_ALPHA,
        help=f"significance level; intervals are 1 - alpha (default {c.DEFAULT_ALPHA})",
    )
    p.add_argument(
        "--permutations",
        type=int,
        default=c.DEFAULT_PERMUTATIONS,
        metavar="N",
        help=f"sign flips of the randomisation test (default {c.DEFAULT_PERMUTATIONS})",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=c.DEFAULT_BOOTSTRAP,
        metavar="N",
        help=f"bootstrap resamples of the intervals (default {c.DEFAULT_BOOTSTRAP})",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=c.DEFAULT_SEED,
        help=f"seed of the permutations and resamples (default {c.DEFAULT_SEED})",
    )
