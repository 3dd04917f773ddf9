"""Every key the dashboard keeps state under: URL keys, session keys, and the settings' cache key.

The settings' URL keys and the cache key come from the settings schema
(rageval_core.settings.schema.SETTINGS), so a new setting reaches the sidebar's link and every cached
result without a list here to update. Session keys are namespaced by page ("queries.selected").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rageval_core.evaluation.report import Settings
from rageval_core.settings.schema import BY_NAME, SETTINGS
from rageval_core.store import RunRecord

# --- URL keys: the sidebar widgets' keys are the query parameters of a shared link --------------

#: the sidebar's run (not a setting: the run every page shows)
RUN = "run"
#: the sidebar's stage of a traced run (a session key: the run in the URL names the stage)
STAGE = "sidebar.stage"
#: setting name -> its query parameter (only the settings the sidebar shows)
URL_KEYS = {s.name: s.url_key for s in SETTINGS if s.url_key is not None}
K, THRESHOLD, SCORER = URL_KEYS["k"], URL_KEYS["threshold"], URL_KEYS["scorer"]
PUNCT, ARTICLES = URL_KEYS["strip_punct"], URL_KEYS["strip_articles"]
RELEVANCE = URL_KEYS["relevance"]
CUT = URL_KEYS["score_threshold"]
CUT_ON = BY_NAME["score_threshold"].url_switch
NUMBERS = URL_KEYS["numbers_must_match"]
#: the sidebar's "Metrics as": a seed-parity preset (rageval_core.settings.presets), none for rageval's
PRESET = URL_KEYS["preset"]
#: the settings a preset may set that have a sidebar widget (the others come with the preset;
#: a preset reads no labels: it keeps the imported ones)
PRESET_SETTINGS = tuple(
    s.name
    for s in SETTINGS
    if s.url_key is not None and s.name not in ("k", "preset", "relevance", "labels")
)
JUDGED_ONLY = URL_KEYS["judged_only"]
#: which relevance labels the ranking metrics read (?labels=people,imported; issue 31)
LABELS = URL_KEYS["labels"]
#: the sidebar's relevance radio under a preset: the preset's mode, shown, not movable
PRESET_RELEVANCE = "sidebar.preset_relevance"
EMBEDDER = URL_KEYS["embedder"]
#: the sidebar's cross-encoder model folder (a PATH on the dashboard's machine)
CROSS_ENCODER = URL_KEYS["cross_encoder"]
#: the failure diagnosis's band and split minimum (the sidebar's "Failure diagnosis")
NEAR_MISS_BAND, SPLIT_MIN_CHARS = URL_KEYS["near_miss_band"], URL_KEYS["split_min_chars"]
#: session key: the scorer the sidebar last showed (a threshold left at that scorer's default
#: follows a new scorer to its own default)
SCORER_SEEN = "sidebar.scorer_seen"
#: the sidebar's judge result set (?judge=<id>, "newest" or "none"; shown when the run has any)
JUDGE = "judge"
#: the query opened on the Queries page (?q=<query_id>)
QUERY_PARAM = "q"
#: the sidebar's annotator name: every grade and gold span given in the app is stored under it
ANNOTATOR = "annotator"


# --- pages: their url paths are the other half of a shared link ---------------------------------


@dataclass(frozen=True)
class Page:
    """One page of the app: its file under app_pages/, its title and icon, and its url path,
    which a shared link holds (/queries?run=bm25&k=5): a file may be renamed, its url path never
    (tests/dashboard/test_shared_links.py)."""

    file: str
    title: str
    icon: str
    url_path: str


#: the app's pages in the sidebar's order; the first is the default (served at / too)
PAGES = (
    Page("overview.py", "Overview", ":material/dashboard:", "overview"),
    Page("queries.py", "Queries", ":material/manage_search:", "queries"),
    Page("why.py", "Why failing", ":material/troubleshoot:", "why"),
    Page("threshold.py", "Threshold tuning", ":material/tune:", "threshold"),
    Page("compare.py", "Compare", ":material/compare_arrows:", "compare"),
    Page("latency.py", "Latency & cost", ":material/speed:", "latency"),
    Page("judge.py", "Judge", ":material/gavel:", "judge"),
    Page("calibration.py", "Judge calibration", ":material/balance:", "calibration"),
    Page("sweeps.py", "Sweeps", ":material/stacked_line_chart:", "sweeps"),
    Page("labelling.py", "Labelling", ":material/label:", "labelling"),
    Page("runs.py", "Runs", ":material/folder_open:", "runs"),
)


@dataclass(frozen=True)
class View:
    """What the sidebar selected: a run and the settings every page evaluates it with."""

    run: RunRecord
    settings: Settings


# --- the settings' cache key ----------------------------------------------------------------


def settings_key(s: Settings) -> tuple[Any, ...]:
    """Every setting's value in schema order: hashable, and a part of every cached result's key."""
    return tuple(s.values().values())


def settings_from_key(key: tuple[Any, ...]) -> Settings:
    return Settings.from_values(dict(zip((s.name for s in SETTINGS), key, strict=True)))


# --- session keys, by page --------------------------------------------------------------------

#: the sidebar's View (set by app.py before the page runs)
VIEW = "app.view"

SELECTED_QUERY = "queries.selected"
QUERIES_FAILING, QUERIES_TAG, QUERIES_TAG_VALUES = (
    "queries.failing",
    "queries.tag",
    "queries.tag_values",
)
QUERIES_SEARCH, QUERIES_SORT, QUERIES_TABLE = "queries.search", "queries.sort", "queries.table"
QUERIES_NO_GOLD = "queries.no_gold"
QUERIES_SEARCH_ALL = "queries.search_all"
#: the note box of a query (suffixed with run id and query id) and the last save's error
QUERIES_NOTE, QUERIES_NOTE_ERROR = "queries.note", "queries.note_error"
#: the drilldown's "Answer and reference answer" expander, open or not (in the URL)
QUERIES_ANSWER_OPEN = "queries.answer_open"
#: the table selection last acted on (a new one opens its query) and the "q" last mirrored to the URL
QUERIES_SEEN_ROWS, QUERIES_MIRRORED = "queries.seen_rows", "queries.mirrored"
#: the table shows this many rows at a time (a page); filters and sorts act on every row, and
#: the downloads hold every filtered row: a 100,000-query run never ships 100,000 rows per rerun.
#: 200 rows are about 80 KB to the browser on every rerun (a slider move included); 1,000 were 400
QUERIES_PAGE, QUERIES_PAGE_ROWS = "queries.page", 200

LATENCY_METRIC, LATENCY_TAG, LATENCY_BY = "latency.metric", "latency.tag", "latency.by"
LATENCY_BY_STAGE = "latency.by_stage"
LATENCY_LOG_X, LATENCY_DIST = "latency.log_x", "latency.dist"
#: the per-query table's page
LATENCY_PAGE, LATENCY_PAGE_ROWS = "latency.page", 1000

TUNING_BAND, TUNING_PAGE, TUNING_HIDE = (
    "threshold.band",
    "threshold.page",
    "threshold.hide_labelled",
)

OVERVIEW_TAG = "overview.tag"

RUNS_UPLOAD, RUNS_PATHS, RUNS_FLASH = "runs.upload", "runs.paths", "runs.flash"
#: the Runs page's import tab (upload or path), in the URL
RUNS_TAB = "runs.tab"
#: imports whose run name was taken: [(stored as, the name it clashed with)], to be decided
RUNS_CLASHES = "runs.clashes"
#: the "Attach facts" form: the run, its date, prices and tags (key=value lines)
RUNS_FACT_TARGET, RUNS_FACT_DATE = "runs.fact_target", "runs.fact_date"
RUNS_FACT_PROMPT, RUNS_FACT_COMPLETION = "runs.fact_prompt", "runs.fact_completion"
RUNS_FACT_TAGS = "runs.fact_tags"
RUNS_FACT_QRELS = "runs.fact_qrels"
RUNS_TARGET, RUNS_NEW_NAME, RUNS_CONFIRM = "runs.target", "runs.new_name", "runs.confirm_delete"
#: the sidebar's run as the Runs page last saw it: its two Run selects follow it when it moves
RUNS_SIDEBAR_RUN = "runs.sidebar_run"

COMPARE_BASELINE, COMPARE_CANDIDATES = "compare.baseline", "compare.candidates"
#: the sidebar run the baseline last followed, and the baseline before the current one
COMPARE_SIDEBAR_RUN, COMPARE_PREV_BASELINE = "compare.sidebar_run", "compare.prev_baseline"
#: the candidate and metric of the per-query views (scatter, regressed queries, drilldown)
COMPARE_FOCUS, COMPARE_METRIC = "compare.focus", "compare.metric"
#: the query opened side by side; the scatter's widget key and its selection last acted on
COMPARE_QUERY, COMPARE_REGRESSED = "compare.query", "compare.regressed"
COMPARE_SCATTER, COMPARE_SEEN_POINTS = "compare.scatter", "compare.seen_points"
#: the comparison whose p-values note was last shown (its tests start from the next poll)
COMPARE_POLLED = "compare.polled"
#: the side-by-side query last mirrored to the URL (?compare.query=<query_id>)
COMPARE_QUERY_MIRRORED = "compare.query_mirrored"
COMPARE_TAG, COMPARE_TREND_METRICS, COMPARE_TREND_STAGE = (
    "compare.tag",
    "compare.trend_metrics",
    "compare.trend_stage",
)
#: what one trend line follows: a run tag (experiment ...) or the run name's stem
COMPARE_TREND_BY = "compare.trend_by"
COMPARE_MAX_CANDIDATES = 4
#: the comparison's sections, one tab each (only the open one runs); the open one is in the URL
COMPARE_SECTION = "compare.section"
COMPARE_SECTIONS = ("Metrics", "Per query", "Why failing", "Segments", "Latency & cost", "Trends")

#: the form's values; the judge job this session has redrawn the whole page for since it ended
JUDGE_FORM, JUDGE_SHOWN = "judge.form", "judge.shown"
JUDGE_ESTIMATE = "judge.estimate"
CALIBRATION_LABEL, CALIBRATION_GIVE = "calibration.label", "calibration.give"
SWEEP_Y, SWEEP_SETTINGS = "sweep.y", "sweep.settings"
SWEEP_BUDGET_ON, SWEEP_BUDGET = "sweep.budget_on", "sweep.budget"
#: the chart's widget key, and the run a click picked (opened with a button)
SWEEP_CHART, SWEEP_PICKED = "sweep.chart", "sweep.picked"

#: the failure diagnosis (issue 30): the Why failing page's first stage (a run name, in the URL)
#: and its bar chart; the Queries page's reason filter (in the URL: a bar's click sets it);
#: Compare's transition cell opened
WHY_FIRST_STAGE, WHY_CHART = "why.first_stage", "why.chart"
QUERIES_REASON = "queries.reason"
COMPARE_CELL, COMPARE_CELL_QUERY = "compare.cell", "compare.cell_query"

#: labelling (issue 31): the chunk a label key acts on (an index into the labeller's list, and
#: the list it indexes: a new list starts at its first chunk); the gold-span picker; the
#: queue's first item shown
LABEL_FOCUS, LABEL_LIST, LABEL_SPAN = "labels.focus", "labels.list", "labels.span"
QUEUE_POS = "labelling.pos"
#: the last label given (announced once, for a screen reader and the eye)
LABEL_SAID = "labels.said"
