"""The shared sidebar: the run, and one widget per setting, built from the settings schema.

Each widget's label, default, range, step and help come from rageval_core.settings.schema.SETTINGS;
its key is the setting's URL key, bound to the query parameters (bind="query-params"), so a
view is a link. This module only says where a widget sits and which kind it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from rageval_dashboard import actions, keys, state
from rageval_dashboard.jobs import rescoring
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.keys import View
from rageval_core.errors import RagevalError
from rageval_core.evaluation.report import Settings
from rageval_core.settings.label_sources import labels_text
from rageval_core.settings.presets import PRESET_RELEVANCE, preset_values
from rageval_core.settings.schema import BY_NAME, DEFAULTS, Setting, default_for
from rageval_core.store import RunRecord

#: the settings at the sidebar's top, then those in its "Matching and cut-off" expander; a
#: setting without a URL key (rel_level, complete) has no widget and keeps its default here
TOP = ("k", "threshold", "relevance", "labels")
MATCHING = (
    "scorer",
    "embedder",
    "cross_encoder",
    "strip_punct",
    "strip_articles",
    "numbers_must_match",
    "score_threshold",
    "judged_only",
)
MATCHING_TITLE = "Matching and cut-off"
#: the failure diagnosis's knobs (the Why failing page; no metric reads them)
DIAGNOSIS = ("near_miss_band", "split_min_chars")
DIAGNOSIS_TITLE = "Failure diagnosis"
#: choices shown as a row of radio buttons (few, and worth seeing at once) instead of a select box
RADIO = ("relevance",)
#: choice settings whose None is an option of its own (not "decided by the run", as relevance):
#: setting -> (the option standing for None, its label). A string, not None: a select box shows
#: a clear button on None
NONE_OPTIONS = {"preset": ("rageval", "rageval's own")}
#: choice settings whose box also takes a value typed in (the embedder: onnx:PATH and
#: sentence-transformers:PATH name a model folder, so no list holds them)
TYPED_CHOICES = ("embedder",)
#: int settings whose slider stops at the run's depth, or at the default on a shallower run
DEPTH_BOUNDED = ("k",)
#: the session flag: the link's preset has been read (preset_from_link)
LINK_READ = "sidebar.preset_link_read"
RESCORES_NOTE = "; a new value scores the run's evidence pairs again (once, then cached)"


def widget_help(s: Setting) -> str:
    """The tooltip: the setting's help, and that a new value re-scores when it does."""
    return s.help + (RESCORES_NOTE if s.rescores else "")


def options(s: Setting, run: RunRecord) -> list[str]:
    """The choices of s that run can use (relevance: ids needs qrels, evidence needs gold spans)."""
    if s.name == "relevance":
        usable = {"ids": run.has_qrels, "evidence": run.has_evidence}
        return [c for c in s.choices if usable[c]]
    if s.name == "preset":  # both presets match gold spans (TAT-RAG also FILE gold: qrels)
        return list(s.choices) if run.has_evidence or run.has_qrels else []
    if s.name == "embedder":  # a model on disk (onnx:PATH, sentence-transformers:PATH) from a link
        linked = st.session_state.get(s.url_key, st.query_params.get(s.url_key))
        if isinstance(linked, str) and linked and linked not in s.choices:
            return [*s.choices, linked]
    if s.name == "labels":  # a link may name any valid combination (llm:MODEL): offered too
        linked = st.session_state.get(s.url_key, st.query_params.get(s.url_key))
        if isinstance(linked, str) and linked not in s.choices:
            try:
                if labels_text(linked) == linked:  # written as the CLI and JSON write it
                    return [*s.choices, linked]
            except RagevalError:
                pass  # not a labels value: the default shows
    return list(s.choices)


def _decimals(step: float) -> int:
    text = f"{step:g}"
    return len(text.split(".")[1]) if "." in text else 0


def follow_scorer() -> str:
    """The scorer the sidebar shows; a threshold still at the last scorer's default moves to the
    new one's (the semantic scorers' cosine is not on the fuzzy scores' scale)."""
    ss = st.session_state
    scorer = ss.get(keys.SCORER, DEFAULTS["scorer"])
    seen = ss.get(keys.SCORER_SEEN)
    if seen is not None and seen != scorer:
        before, after = default_for("threshold", seen), default_for("threshold", scorer)
        if ss.get(keys.THRESHOLD, before) == before:
            ss[keys.THRESHOLD] = after
    ss[keys.SCORER_SEEN] = scorer
    return str(scorer)


def setting_widget(s: Setting, run: RunRecord, default: Any = None) -> Any:
    """Draw the widget of s (in the current container) and return the value it shows; default:
    the widget's first value when not s.default (the threshold's follows the scorer).

    A setting with nothing to choose (no usable relevance mode; k on a run of one-chunk lists)
    shows no widget and keeps its default (k: 1).
    """
    common: dict[str, Any] = {"key": s.url_key, "bind": "query-params", "help": widget_help(s)}
    ss = st.session_state
    if s.type is bool:
        return st.checkbox(s.label, value=s.default, **common)
    if s.choices:
        found: list[Any] = options(s, run)
        if not found:
            return s.default
        if s.name in NONE_OPTIONS:
            none, label = NONE_OPTIONS[s.name]
            found = [none, *found]
            if ss.get(s.url_key) not in found:  # a preset this run cannot use (or unknown)
                ss[s.url_key] = none
            value = st.selectbox(
                s.label,
                found,
                format_func=lambda c: label if c == none else c,
                on_change=actions.apply_preset if s.name == "preset" else None,
                **common,
            )
            return None if value == none else value
        index = found.index(s.default) if s.default in found else 0
        if s.name in RADIO:
            return st.radio(s.label, found, index=index, horizontal=True, **common)
        # the embedder box also takes a model on disk typed in (onnx:PATH), as --embedder does
        typed = {"accept_new_options": True} if s.name in TYPED_CHOICES else {}
        return st.selectbox(s.label, found, index=index, **typed, **common)
    if s.type is str:  # free text (a model folder's path): empty is the default, None
        text = st.text_input(s.label, value=None, placeholder=s.metavar, **common)
        return (text or "").strip() or None
    if s.default is None:  # an optional number: a switch, then its value
        on = st.checkbox(
            s.switch_label or s.label, key=s.url_switch, bind="query-params", help=widget_help(s)
        )
        if not on:
            return None
        return s.type(st.number_input(s.label, value=s.start, step=s.step, **common))
    lo, hi = s.bounds()
    if s.name in DEPTH_BOUNDED:
        # up to the run's depth, and to the default on a shallower run: the same default k and
        # numbers as the CLI (the report's warning says when k exceeds the depth)
        hi = max(run.max_depth, s.default)
        if ss.get(s.url_key, lo) > hi:  # another run may be shallower than the last
            ss[s.url_key] = hi
    # the widget's default must stay the schema's: a bound widget leaves its default out of the
    # URL, and a link without the key must open on the same value
    first = s.default if default is None else default
    if hi == float("inf"):  # no upper bound (split_min_chars): a number box, not a slider
        box = st.number_input(s.label, s.type(lo), None, first, s.type(s.step), **common)
        return s.type(box)
    value = st.slider(
        s.label, s.type(lo), s.type(hi), min(first, s.type(hi)), s.type(s.step), **common
    )
    return round(float(value), _decimals(s.step)) if s.type is float else s.type(value)


def settings_widgets(run: RunRecord) -> Settings:
    """The settings' widgets in the sidebar for run, and the Settings they show.

    Under a preset ("Metrics as"), the preset's values come first and the widgets' on top: the
    widgets took the preset's values when it was chosen (actions.apply_preset), so a widget
    moved since then overrides the preset, as a flag beside --preset does.
    """
    values: dict[str, Any] = {}
    scorer = follow_scorer()
    with st.sidebar:
        preset = setting_widget(BY_NAME["preset"], run)
        if preset is not None:
            st.caption(
                f"{preset}'s own metrics, names and rules; k and relevance do not change them "
                "(its cut-offs are fixed). Moving a setting below overrides the preset's value."
            )
        for name in TOP:
            if name == "relevance" and preset is not None:
                preset_relevance()
                continue
            values[name] = setting_widget(BY_NAME[name], run, default_for(name, scorer))
        with st.expander(MATCHING_TITLE):
            for name in MATCHING:
                values[name] = setting_widget(BY_NAME[name], run)
        with st.expander(DIAGNOSIS_TITLE):
            for name in DIAGNOSIS:
                values[name] = setting_widget(BY_NAME[name], run)
    settings = (
        Settings.from_values(values)
        if preset is None
        else Settings.from_values({**preset_values(preset), **values})
    )
    try:  # a scorer's model (the cross-encoder's folder) missing or unreadable: said, then stop
        _ = settings.scorer_key
    except RagevalError as e:
        st.error("The scorer cannot be used with these settings:")
        st.code(str(e), language=None)  # may hold a path: shown as typed, never as Markdown
        st.stop()
    return settings


def preset_relevance() -> None:
    """Under a preset, the relevance mode it scores in (a chunk is relevant when it covers a gold
    item), shown but not movable; rageval's own under "Metrics as" brings the radio back."""
    s = BY_NAME["relevance"]
    st.radio(
        s.label,
        [PRESET_RELEVANCE],
        horizontal=True,
        disabled=True,
        key=keys.PRESET_RELEVANCE,
        help="A preset scores as its script does: a chunk is relevant when it covers a gold "
        "item. Choose rageval's own under Metrics as to pick ids or evidence.",
    )


def preset_from_link() -> None:
    """A link naming a preset (?preset=eggai) opens with the preset's values in the widgets the
    link does not set, once per session: the link means "that script's numbers"."""
    ss = st.session_state
    if ss.get(LINK_READ):
        return
    ss[LINK_READ] = True
    name = st.query_params.get(keys.PRESET)
    if name not in BY_NAME["preset"].choices:
        return
    given = set(st.query_params)
    for setting, value in preset_values(name).items():
        s = BY_NAME[setting]
        if s.url_key is None or setting not in keys.PRESET_SETTINGS:
            continue
        if s.url_key in given or (s.url_switch and s.url_switch in given):
            continue
        # before the widget first exists: Streamlit logs that the widget has a default too,
        # and shows the session's value (the widget's default stays the schema's, for the URL)
        actions.set_widget(s, value)


#: the judge select's options besides the result sets' ids
NEWEST, NO_JUDGE = "newest", "none"


def judge_widget(run: RunRecord) -> str | None:
    """The judge result set the judge.* metrics read, when the run has any: None (the newest),
    a set's id, or "none" (only the scores imported with the run)."""
    sets = state.judge_sets(run)
    if not sets:
        return None
    labels = {
        str(j.judge_id): f"#{j.judge_id} {j.name} · {j.model} · {j.created_at[:16]}"
        + ("" if j.usable else f" · {j.status}, {j.verdicts} verdicts")
        for j in reversed(sets)
    }
    found = [NEWEST, *labels, NO_JUDGE]
    ss = st.session_state
    if ss.get(keys.JUDGE) not in found:  # a link to a set of another run, or one deleted
        ss[keys.JUDGE] = NEWEST
    value = st.sidebar.selectbox(
        "Judge",
        found,
        key=keys.JUDGE,
        bind="query-params",
        format_func=lambda c: {
            NEWEST: "newest with verdicts",
            NO_JUDGE: "none: imported judge scores only",
        }.get(c, labels.get(c, c)),
        help=BY_NAME["judge"].help,
    )
    return None if value == NEWEST else value


def annotator_widget() -> None:
    """Who labels: set once, kept in the URL (?annotator=), stored with every grade and span."""
    st.sidebar.text_input(
        "Annotator",
        key=keys.ANNOTATOR,
        bind="query-params",
        max_chars=80,
        placeholder="your name, to label chunks",
        help="Grades and gold spans you give (Queries drilldown, Labelling page) are stored "
        "under this name, beside the imported qrels and other people's labels",
    )


def show_store_path() -> None:
    """The store file, at the foot of the sidebar: which file the dashboard shows is no guess."""
    st.sidebar.caption("Store file")
    st.sidebar.text(state.store_path())  # st.text: a path is shown as typed, never as Markdown


def sidebar() -> View | None:
    """The shared controls; None (with a message on the page) when there is no run yet."""
    try:
        all_runs = state.runs_when_free()
    except RagevalError as e:
        st.error("The store cannot be read:")
        st.code(str(e), language=None)  # may hold a path: shown as typed, never as Markdown
        return None
    if all_runs is None:  # still busy: the message and a Try again button are on the page
        st.stop()
    if not all_runs:
        show_store_path()
        return None
    by_name = {r.name: r for r in all_runs}
    linked = st.query_params.get(keys.RUN)
    if linked is not None and linked not in by_name:
        # a link to a run this store does not hold: said, not silently replaced
        st.warning(
            f"The link names the run **{escape_text(linked, one_line=True)}**, which this store "
            f"does not hold; showing **{escape_text(all_runs[0].name, one_line=True)}** instead "
            "(the Runs page lists the stored runs).",
            icon="⚠️",
        )
        st.session_state[keys.RUN] = all_runs[0].name
    if st.session_state.get(keys.RUN) not in by_name:
        st.session_state[keys.RUN] = all_runs[0].name
    name = st.sidebar.selectbox("Run", list(by_name), key=keys.RUN, bind="query-params")
    run = by_name[name]
    stage_picker(run, all_runs)
    preset_from_link()
    settings = settings_widgets(run)
    settings = dataclasses.replace(settings, judge=judge_widget(run))
    annotator_widget()
    show_store_path()
    return View(run=run, settings=settings)


def stage_siblings(run: RunRecord, all_runs: list[RunRecord]) -> dict[str, str]:
    """{stage: run name} of the runs one trace export became (an OpenInference file imports as
    NAME and NAME@reranker, whose settings carry stage and trace_group); {} for other runs."""
    group = run.settings.get("trace_group")
    if not group:
        return {}
    found = {
        str(r.settings.get("stage") or r.name): r.name
        for r in all_runs
        if r.settings.get("trace_group") == group
    }
    return found if len(found) > 1 else {}


def _to_stage(siblings: dict[str, str]) -> None:
    st.session_state[keys.RUN] = siblings[st.session_state[keys.STAGE]]


def stage_picker(run: RunRecord, all_runs: list[RunRecord]) -> None:
    """A "Stage" select under the run when it is one stage of a trace: picking another stage
    opens that stage's run (the run, and so the stage, is in the URL as ?run=)."""
    siblings = stage_siblings(run, all_runs)
    if not siblings:
        return
    st.session_state[keys.STAGE] = next(s for s, n in siblings.items() if n == run.name)
    st.sidebar.selectbox(
        "Stage",
        list(siblings),
        key=keys.STAGE,
        on_change=_to_stage,
        args=(siblings,),
        help="the runs one trace export became, one per stage (retriever, reranker ...): "
        "the same queries, each stage's ranked list",
    )


def view() -> View | None:
    """The sidebar's current selection (set by app.py before the page runs)."""
    return st.session_state.get(keys.VIEW)


def require_view() -> View:
    """The current view, or a clear message and a stop when there is no run to show."""
    current = view()
    if current is None:
        st.info(
            "No runs yet. Import one on the **Runs** page or with `rageval import FILE` "
            "(`make run` imports the sample runs)."
        )
        st.stop()
    rescoring.gate(current)  # new pair scores needed: a progress bar, not a greyed page
    return current
