"""Every front end agrees with the settings schema: Settings, the CLI, the sidebar, the docs.

The schema (rageval_core.settings.schema.SETTINGS) is the only place a default, a range or a URL key is
written; each test here reads one front end as a user meets it (parsed flags, rendered widgets,
the docs file) and compares it with the schema.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any, get_args

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.cli import dispatch as cli
from rageval_core.cli.settings_flags import settings_from_args
from rageval_core.matching import scorers as matching
from rageval_core.evaluation.report import Relevance, Settings
from rageval_core.matching.scorers import Normalisation
from rageval_core.metrics import evidence
from rageval_core.matching.keys import SCORER_KINDS
from rageval_core.settings.schema import (
    BY_NAME,
    DEFAULTS,
    DOCS_BEGIN,
    DOCS_END,
    RELEVANCE_MODES,
    SCORER_NAMES,
    SETTINGS,
    docs_with_table,
    settings_table_markdown,
)
from tests.paths import REPO

#: the shortest command line of each subcommand that takes the settings
MINIMAL_ARGV = {
    "evaluate": ["evaluate", "run.jsonl"],
    "compare": ["compare", "a", "b"],
    "gate": ["gate", "--baseline", "a", "--candidate", "b"],
    "report": ["report", "a", "--out", "r.html"],
    "export": ["export", "a", "--to", "mlflow"],
    "calibrate": ["calibrate", "a"],
    "diagnose": ["diagnose", "run.jsonl"],
}
#: flags a subcommand spells like a setting but which mean something else there (the issue's
#: `fuse --k 60`: reciprocal rank fusion's constant, not a cut-off; issue 31's `attach RUN --labels
#: FILE --annotator NAME`: a qrels file of one annotator's grades, not the labels setting; `judge
#: RUN --metrics relevance --labels`: the labels setting alone, which documents it leaves alone)
OWN_FLAGS = {"fuse": {"--k"}, "attach": {"--labels"}, "judge": {"--labels"}}
#: the flags as users' scripts call them today: (flag, argparse type, choices, metavar)
FLAGS = {
    "--k": (int, None, None),
    "--threshold": (float, None, None),
    "--scorer": (None, None, None),
    "--strip-punct": (None, None, None),
    "--strip-articles": (None, None, None),
    "--relevance": (None, ("ids", "evidence"), None),
    "--score-threshold": (float, None, "X"),
    "--rel-level": (int, None, None),
    "--complete": (None, None, None),
    "--numbers-must-match": (None, None, None),
    # the seed-parity presets and the rules they flip (rageval_core.settings.presets)
    "--preset": (None, ("tat-rag", "eggai"), None),
    "--chunk-inside-span-covers": (None, None, None),
    "--one-chunk-one-span": (None, None, None),
    "--file-gold-by-metadata": (None, None, None),
    "--precision-divisor": (None, ("k", "retrieved"), None),
    "--ap-per-gold-item": (None, None, None),
    "--keep-whitespace": (None, None, None),
    "--plain-similarity": (None, None, None),
    "--no-gold-scores-zero": (None, None, None),
    "--judged-only": (None, None, None),
    # which LLM judge result set the judge.* metrics read (rageval_core.judging)
    "--judge": (None, None, "NAME_OR_ID"),
    "--embedder": (None, None, "NAME"),
    "--labels": (None, None, "SOURCES"),
    # the failure diagnosis's knobs (rageval_core.diagnosis)
    "--near-miss-band": (float, None, None),
    "--split-min-chars": (int, None, None),
    # a local cross-encoder model folder (rageval_core.matching.onnx_models)
    "--cross-encoder": (None, None, "PATH"),
}
#: the query parameters of shared links: never renamed
URL_KEYS = {
    "k", "threshold", "scorer", "punct", "articles", "cut_on", "cut", "relevance", "numbers",
    "preset", "judged", "embedder", "near_miss_band", "split_min_chars", "labels",
    "cross_encoder",
}  # fmt: skip


def nested_value(s: Settings, name: str) -> Any:
    """A setting's value read from the Settings object itself (not through Settings.values)."""
    return (
        getattr(s.norm, name)
        if name in {f.name for f in dataclasses.fields(Normalisation)}
        else getattr(s, name)
    )


# --- the schema covers Settings -------------------------------------------------------------


def test_every_settings_field_is_in_the_schema() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)} - {"norm"}
    norm_fields = {f.name for f in dataclasses.fields(Normalisation)}
    assert {s.name for s in SETTINGS} == fields | norm_fields
    assert {s.name for s in SETTINGS if s.part_of == "norm"} == norm_fields
    assert {s.part_of for s in SETTINGS} <= {None, "norm"}
    assert len({s.name for s in SETTINGS}) == len(SETTINGS)
    assert len({s.flag for s in SETTINGS}) == len(SETTINGS)


def test_settings_defaults_are_the_schema_defaults() -> None:
    made = Settings()
    for s in SETTINGS:
        assert nested_value(made, s.name) == s.default, s.name
    assert DEFAULTS["threshold"] == evidence.DEFAULT_THRESHOLD


def test_choices_match_the_core() -> None:
    assert tuple(matching.SCORERS) == SCORER_NAMES
    assert tuple(SCORER_KINDS) == SCORER_NAMES  # the keys' registry (matching/keys.py)
    assert get_args(Relevance) == RELEVANCE_MODES
    assert BY_NAME["scorer"].choices == SCORER_NAMES
    assert BY_NAME["relevance"].choices == RELEVANCE_MODES


def test_validation_reads_the_schema_bounds() -> None:
    for name in ("k", "threshold"):
        lo, hi = BY_NAME[name].bounds()
        step = 1 if BY_NAME[name].type is int else 0.01
        Settings(**{name: BY_NAME[name].type(lo)}).check()
        with pytest.raises(Exception, match=f"{name} must"):
            Settings(**{name: BY_NAME[name].type(lo - step)}).check()
        if math.isfinite(hi):
            Settings(**{name: hi}).check()
            with pytest.raises(Exception, match=f"{name} must"):
                Settings(**{name: hi + step}).check()


def test_values_round_trip() -> None:
    s = Settings(
        k=3,
        threshold=0.55,
        scorer="ratio",
        norm=Normalisation(True, False),
        relevance="evidence",
        score_threshold=0.25,
        rel_level=2,
        complete=True,
    )
    assert Settings.from_values(s.values()) == s
    assert list(s.values()) == [x.name for x in SETTINGS]
    assert Settings.from_values({}) == Settings()
    with pytest.raises(Exception, match="unknown settings: nope"):
        Settings.from_values({"nope": 1})


# --- the CLI --------------------------------------------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_subcommand_with_settings_takes_all_of_them() -> None:
    flags = {s.flag for s in SETTINGS}
    with_settings = {}
    for name, p in subcommands().items():
        found = {o for a in p._actions for o in a.option_strings} & flags - OWN_FLAGS.get(
            name, set()
        )
        assert found in (set(), flags), f"{name} takes only some settings: {sorted(found)}"
        if found:
            with_settings[name] = p
    assert set(with_settings) == set(MINIMAL_ARGV)


@pytest.mark.parametrize("command", sorted(MINIMAL_ARGV))
def test_cli_defaults_are_the_schema_defaults(command: str) -> None:
    args = cli.build_parser().parse_args(MINIMAL_ARGV[command])
    for s in SETTINGS:
        assert getattr(args, s.name) == s.default, (command, s.name)
    assert settings_from_args(args) == Settings()


@pytest.mark.parametrize("command", sorted(MINIMAL_ARGV))
def test_cli_flags_are_unchanged(command: str) -> None:
    actions = {a.option_strings[0]: a for a in subcommands()[command]._actions if a.option_strings}
    for flag, (kind, choices, metavar) in FLAGS.items():
        action = actions[flag]
        assert action.type is kind, flag
        assert action.choices == choices and action.metavar == metavar, flag
        setting = next(s for s in SETTINGS if s.flag == flag)
        assert action.dest == setting.name
        assert (action.nargs == 0) == (setting.type is bool), flag  # a switch takes no value
    assert {s.flag for s in SETTINGS} == set(FLAGS)


def test_cli_flags_reach_settings() -> None:
    args = cli.build_parser().parse_args(
        [
            *MINIMAL_ARGV["evaluate"],
            "--k",
            "3",
            "--threshold",
            "0.55",
            "--scorer",
            "ratio",
            "--strip-punct",
            "--relevance",
            "evidence",
            "--score-threshold",
            "0.25",
            "--rel-level",
            "2",
            "--complete",
        ]
    )
    assert settings_from_args(args) == Settings(
        k=3,
        threshold=0.55,
        scorer="ratio",
        norm=Normalisation(strip_punct=True),
        relevance="evidence",
        score_threshold=0.25,
        rel_level=2,
        complete=True,
    )


def test_cli_help_says_each_default() -> None:
    text = subcommands()["evaluate"].format_help()
    for s in SETTINGS:
        assert s.flag in text
        if s.default is True:  # a switch on by default: said, with the flag that turns it off
            assert f"(default on; --no-{s.flag[2:]} turns it off)" in " ".join(text.split())
            assert s.off_flag is not None and s.off_flag in text
        elif s.default not in (None, False):
            assert f"(default {s.default})" in " ".join(text.split()), s.name


# --- the dashboard's sidebar and keys -------------------------------------------------------


def sidebar_script() -> None:
    """A page that draws only the settings' widgets, for a run with qrels and evidence."""
    from types import SimpleNamespace

    import streamlit as st

    from rageval_dashboard.sidebar import settings_widgets

    run = SimpleNamespace(max_depth=20, has_qrels=True, has_evidence=True)
    st.session_state["test.settings"] = settings_widgets(run)  # type: ignore[arg-type]


def widgets(at: AppTest) -> dict[str, Any]:
    """Every sidebar widget by key."""
    found: dict[str, Any] = {}
    for kind in ("slider", "selectbox", "radio", "checkbox", "number_input", "text_input"):
        for w in at.sidebar.get(kind):
            found[w.key] = w
    return found


def test_sidebar_widgets_show_the_schema() -> None:
    from rageval_dashboard.sidebar import NONE_OPTIONS, widget_help

    at = AppTest.from_function(sidebar_script, default_timeout=30).run()
    assert not at.exception
    shown = widgets(at)
    drawn = {s.url_key for s in SETTINGS if s.url_key} | {
        s.url_switch for s in SETTINGS if s.url_switch
    }
    assert drawn == URL_KEYS  # links shared before the schema still open the same view
    assert set(shown) == URL_KEYS - {BY_NAME["score_threshold"].url_key}  # cut: only when on
    for s in SETTINGS:
        if s.url_key is None:
            continue
        w = shown[s.url_switch or s.url_key]
        assert w.help == widget_help(s), s.name
        if s.url_switch:
            assert w.label == s.switch_label and w.value is False
            continue
        assert w.label == s.label, s.name
        # relevance None: decided by the run (the first usable mode shows); preset None: none
        auto = s.default is None and s.choices and s.name not in NONE_OPTIONS
        expected = RELEVANCE_MODES[0] if auto else NONE_OPTIONS.get(s.name, (s.default,))[0]
        assert w.value == expected, s.name
        if s.choices:
            shown_choices = (
                [NONE_OPTIONS[s.name][1], *s.choices] if s.name in NONE_OPTIONS else s.choices
            )
            assert list(w.options) == list(shown_choices), s.name
        if w.type == "slider" and s.name != "k":
            assert (w.min, w.max, w.step) == (s.minimum, s.maximum, s.step), s.name
    assert (shown["k"].min, shown["k"].max) == (BY_NAME["k"].minimum, 20)  # k stops at depth
    # rel_level and complete have no widget: the sidebar's Settings keep their defaults
    assert at.session_state["test.settings"] == Settings(relevance="ids")


def test_sidebar_reads_the_url() -> None:
    at = AppTest.from_function(sidebar_script, default_timeout=30)
    for key, value in {
        "k": "5",
        "threshold": "0.55",
        "scorer": "ratio",
        "punct": "true",
        "relevance": "evidence",
        "cut_on": "true",
        "cut": "0.25",
    }.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    cut = widgets(at)["cut"]
    assert cut.value == 0.25 and cut.step == BY_NAME["score_threshold"].step
    assert at.session_state["test.settings"] == Settings(
        k=5,
        threshold=0.55,
        scorer="ratio",
        norm=Normalisation(strip_punct=True),
        relevance="evidence",
        score_threshold=0.25,
    )
    # switched on without a value: the cut-off starts at the schema's start
    at = AppTest.from_function(sidebar_script, default_timeout=30)
    at.query_params["cut_on"] = "true"
    at.run()
    start = BY_NAME["score_threshold"].start
    assert widgets(at)["cut"].value == start
    assert at.session_state["test.settings"] == Settings(relevance="ids", score_threshold=start)


def test_sidebar_reads_judged_only_from_the_url() -> None:
    at = AppTest.from_function(sidebar_script, default_timeout=30)
    at.query_params["judged"] = "true"
    at.run()
    assert not at.exception
    assert widgets(at)["judged"].value is True
    assert at.session_state["test.settings"] == Settings(relevance="ids", judged_only=True)


@pytest.mark.parametrize(
    ("linked", "shown"),
    [
        ("people,imported", "people,imported"),  # one the sidebar offers
        ("llm:gpt-4o,people", "llm:gpt-4o,people"),  # any valid one a link names
        ("people,peeple", "imported"),  # not a labels value: the default
    ],
)
def test_sidebar_reads_the_labels_from_the_url(linked: str, shown: str) -> None:
    at = AppTest.from_function(sidebar_script, default_timeout=30)
    at.query_params["labels"] = linked
    at.run()
    assert not at.exception
    assert widgets(at)["labels"].value == shown
    assert at.session_state["test.settings"] == Settings(relevance="ids", labels=shown)


def test_sidebar_reads_the_cross_encoder_folder_from_the_url() -> None:
    at = AppTest.from_function(sidebar_script, default_timeout=30)
    at.query_params["cross_encoder"] = " /models/ms-marco "
    at.run()
    assert not at.exception
    assert widgets(at)["cross_encoder"].label == "Cross-encoder model folder"
    assert at.session_state["test.settings"] == Settings(
        relevance="ids", cross_encoder="/models/ms-marco"
    )
    widgets(at)["cross_encoder"].set_value("  ").run()  # cleared: no model
    assert at.session_state["test.settings"] == Settings(relevance="ids")


def test_cache_key_keeps_its_shape() -> None:
    from rageval_dashboard import keys

    # (k, threshold, scorer, punct, articles, relevance, cut, rel_level, complete): the order
    # every cached result was keyed by before the schema; then the numbers guard, the preset and
    # its rules (the guard on by default)
    assert keys.settings_key(Settings())[:9] == (
        10, 0.7, "partial", False, False, None, None, 1, False
    )  # fmt: skip
    assert keys.settings_key(Settings())[9:-7] == (
        True, None, False, False, False, "k", *[False] * 4
    )  # fmt: skip
    # judged_only, judge and embedder: added after them
    assert keys.settings_key(Settings())[-7:-4] == (False, None, "wordllama")
    # the diagnosis's near-miss band and split minimum, then the labels
    assert keys.settings_key(Settings())[-4:-1] == (0.1, 30, "imported")
    # the cross-encoder's model folder: added last
    assert keys.settings_key(Settings())[-1] is None
    s = Settings(
        k=3,
        threshold=0.55,
        scorer="ratio",
        norm=Normalisation(False, True),
        relevance="ids",
        score_threshold=-1.5,
        rel_level=2,
        complete=True,
    )
    assert keys.settings_from_key(keys.settings_key(s)) == s
    assert keys.settings_key(s) == tuple(nested_value(s, x.name) for x in SETTINGS)
    assert {
        keys.K,
        keys.THRESHOLD,
        keys.SCORER,
        keys.PUNCT,
        keys.ARTICLES,
        keys.RELEVANCE,
        keys.CUT,
        keys.CUT_ON,
        keys.NUMBERS,
        keys.PRESET,
        keys.JUDGED_ONLY,
        keys.EMBEDDER,
        keys.NEAR_MISS_BAND,
        keys.SPLIT_MIN_CHARS,
        keys.LABELS,
        keys.CROSS_ENCODER,
    } == URL_KEYS
    assert keys.RUN == "run"


# --- the docs -------------------------------------------------------------------------------


def test_docs_table_is_the_schema() -> None:
    doc = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert doc.count(DOCS_BEGIN) == 1 and doc.count(DOCS_END) == 1
    assert docs_with_table(doc) == doc, (
        "docs/metrics.md's settings table is out of date: "
        "python -m rageval_core.settings docs/metrics.md"
    )
    table = settings_table_markdown()
    for s in SETTINGS:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{s.name}` |"))
        assert f"`{s.flag}`" in row and s.help in row
        assert (f"`{s.url_key}`" in row) == (s.url_key is not None)
