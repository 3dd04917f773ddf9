"""One rule for user text in the app: escape_text (components/text.py) leaves nothing
for Markdown, HTML or plotly to read, whatever the line endings (issue 13: `"\\r\\r![x](http://...)"`
in a chunk rendered a remote image), and every page shows run-file text only through it.

Unit tests render the escaped text with a real Markdown parser (markdown-it-py, Streamlit's own
dependency); the AppTest tests open every page of a store holding runs full of payloads
(tests/data/xss) and read every element that interprets text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components.highlight import chunk_card, highlight, text_block, word_window
from rageval_dashboard.components.text import LINE_BREAK, ZERO_WIDTH_SPACE, escape_text
from tests.cli import rageval

REPO = Path(__file__).resolve().parents[2]
XSS = REPO / "tests" / "data" / "xss"
BREAKS = [
    "\r\n",
    "\r",
    "\n",
    "\v",
    "\f",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x85",
    "\u2028",
    "\u2029",
    "\r\r",
    "\n\n",
]
PAYLOADS = [
    "![x](http://example.net/beacon.png)",
    "[click](http://example.net/)",
    "<img src=http://example.net/a.png>",
    "<a href='http://example.net'>x</a>",
    "<script>window.__xss=1</script>",
    "http://example.net/auto www.example.net someone@example.net",
    "<http://example.net/angle>",
    "$\\frac{1}{2}$ $$x$$",
    ":red[alarm] :material/warning: :smile:",
    "# heading",
    "    indented code",
    "\tindented by a tab",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "*em* __strong__ ~~del~~ `code` ```fence```",
    "[ref]: http://example.net/ref\n[ref]",
    "> quote\n- item\n1. item",
    "&amp; &#60;img&#62; %{x} <br> <b>b</b>",
]
ATTACKS = [pytest.param(p, b, id=f"{p[:14]}|{b!r}") for p in PAYLOADS for b in BREAKS]
#: GFM autolinks a bare URL or e-mail address in the *decoded* text of Streamlit's Markdown
BARE_LINK = re.compile(r"(?i)https?://|www\.|[-.\w+]@[-\w]+\.[-\w]")


def render(markup: str, *, allow_html: bool = True) -> str:
    """What a Markdown renderer (CommonMark + tables + strikethrough; raw HTML allowed as with
    Streamlit's unsafe_allow_html, or not) makes of markup."""
    return (
        MarkdownIt("commonmark", {"html": allow_html})
        .enable(["table", "strikethrough"])
        .render(markup)
    )


def tags(rendered: str) -> set[str]:
    return {m.group(1).lower() for m in re.finditer(r"<(/?[a-zA-Z][a-zA-Z0-9]*)", rendered)}


def visible(rendered: str) -> str:
    """The text a browser shows: tags dropped, <br> as a newline, entities decoded (the
    zero-width spaces that break autolinks are invisible)."""
    text = re.sub(r"<br\s*/?>", "\n", rendered)
    return html.unescape(re.sub(r"<[^>]+>", "", text)).replace(ZERO_WIDTH_SPACE, "").strip()


# --- the function ----------------------------------------------------------------------------


@pytest.mark.parametrize(("payload", "brk"), ATTACKS)
def test_html_block_reads_nothing_whatever_the_line_break(payload: str, brk: str) -> None:
    text = f"before{brk}{brk}{payload}{brk}after"
    out = escape_text(text)
    for rendered, ours in (
        (render(f"<div>{out}</div>"), {"div", "/div", "br"}),
        (render(out), {"p", "/p", "br"}),
    ):  # inline, outside an HTML block too
        assert tags(rendered) <= ours, rendered
        assert not BARE_LINK.search(html.unescape(rendered))
        # nothing is lost: the browser shows the text as written, each line break as one
        assert visible(rendered) == LINE_BREAK.sub("\n", text).strip()


@pytest.mark.parametrize(("payload", "brk"), ATTACKS)
def test_markdown_element_reads_nothing_whatever_the_line_break(payload: str, brk: str) -> None:
    """one_line=True: st.caption / info / warning / error and labels show no HTML, so a line
    break becomes a space; nothing else is read either."""
    text = f"{payload}{brk}{brk}{payload}"
    out = escape_text(text, one_line=True)
    assert not LINE_BREAK.search(out)
    for allow_html in (False, True):
        rendered = render(out, allow_html=allow_html)
        assert tags(rendered) <= {"p", "/p"}, rendered
        assert not BARE_LINK.search(html.unescape(rendered))
        assert visible(rendered) == LINE_BREAK.sub(" ", text).strip()


def plotly_reads(label: str) -> tuple[set[str], str]:
    """(the tags, the text) plotly's label parser (svg_text_utils) finds in label: it splits on
    <...>, draws <br> as a line break, and decodes &name; / &#n; / &#xn; in the text."""
    found = set(re.findall(r"<[^<>]*>", label))
    text = re.sub(r"<br>", "\n", label)
    return found, re.sub(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);", lambda m: html.unescape(m[0]), text)


@pytest.mark.parametrize(("payload", "brk"), ATTACKS)
def test_plotly_labels_read_nothing(payload: str, brk: str) -> None:
    text = f"{payload}{brk}{payload}"
    out = escape_text(text)
    found, shown = plotly_reads(out)
    assert found <= {"<br>"}
    assert "%{" not in out and "$" not in out  # no hover-template field, no LaTeX
    assert shown.replace(ZERO_WIDTH_SPACE, "") == LINE_BREAK.sub("\n", text)


def test_the_attack_of_the_review() -> None:
    """A lone CR before an image: it used to leave the HTML block and fetch the image."""
    out = escape_text("\r\r![x](http://example.net/beacon.png)")
    assert "\r" not in out and "\n" not in out and "](" not in out and "!" not in out
    assert "<img" not in render(f"<div>{out}</div>") and "<img" not in render(out)


def test_leading_blanks_make_no_code_block() -> None:
    for text in ("    code", "\tcode", "a\n    code", "a\u2028\t\tcode"):
        for out in (escape_text(text), escape_text(text, one_line=True)):
            assert "<pre" not in render(out) and "<code" not in render(out)
            assert visible(render(out)).replace("\n", " ").split() == text.split()


def test_highlight_cards_and_blocks_use_the_rule() -> None:
    evil = "a\r![x](http://example.net/i.png)\u2028[l](http://example.net)"
    for markup in (
        highlight(evil, 2, 10),
        chunk_card(evil, evil, 0, 5, covers=True),
        text_block(evil, evil),
        highlight(evil, -1, -1),
    ):
        rendered = render(markup)
        assert "<img" not in rendered and "<a " not in rendered and "\r" not in markup
        assert tags(markup) <= {"br", "mark", "/mark", "div", "/div", "span", "/span", "i", "/i"}
    # the marked window still holds exactly the chunk's characters [2, 10), widened to whole
    # words (highlight.word_window)
    start, end = word_window(evil, 2, 10)
    marked = re.search(r"<mark[^>]*>(.*?)</mark>", highlight(evil, 2, 10))
    assert marked and visible(marked.group(1)) == LINE_BREAK.sub("\n", evil[start:end])


def test_ordinary_text_still_reads_the_same() -> None:
    text = "Premiums are due on the 1st (monthly); 2.5% interest applies."
    assert visible(render(escape_text(text))) == text
    assert escape_text("plain words") == "plain words"
    assert escape_text("two\nlines") == "two<br>lines"
    assert escape_text("two\nlines", one_line=True) == "two lines"


def test_the_dashboard_has_no_other_escaping_rule() -> None:
    """One mechanism: no module of the app escapes user text by hand (html.escape, its own
    character references)."""
    for path in sorted((REPO / "rageval_dashboard").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "html.escape" not in source and "import html" not in source, path
        if path.name != "text.py":
            assert "&#" not in source and "&lt;" not in source, path


# --- every page, on runs full of payloads --------------------------------------------------

RUN_A = "cr\r![x](http://127.0.0.1:9/name-a.png)"
RUN_B = "nl\n![x](http://127.0.0.1:9/name-b.png)"
HOSTILE = "<script>window.__xss=1</script>"
#: what user text must never become in an element that interprets text
RAW = re.compile(r"(?i)!\[|\]\(http|<img|<a\s|<script|javascript:")
#: Streamlit elements that read Markdown in their value, and in their label / help
MARKDOWN_VALUES = (
    "markdown",
    "caption",
    "info",
    "warning",
    "error",
    "success",
    "title",
    "header",
    "subheader",
    "toast",
    "exception",
)
LABELLED = (
    "expander",
    "tab",
    "metric",
    "selectbox",
    "multiselect",
    "radio",
    "slider",
    "toggle",
    "checkbox",
    "text_input",
    "text_area",
    "number_input",
    "button",
    "download_button",
)


@pytest.fixture(scope="module")
def breaks_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two line-break runs (Compare pairs them: their query ids are shared) and the hostile run."""
    db = tmp_path_factory.mktemp("breaks") / "rageval.duckdb"
    files = [XSS / "breaks_a.jsonl", XSS / "breaks_b.jsonl", XSS / "hostile.jsonl"]
    done = rageval("import", *map(str, files), db=db)
    assert done.returncode == 0, done.stderr
    return db


def interpreted(at: AppTest) -> Iterator[tuple[str, str]]:
    """(where, text) of everything on the page that Streamlit reads as Markdown or HTML."""
    for kind in MARKDOWN_VALUES:
        for el in at.get(kind):
            yield kind, str(el.value)
    for kind in LABELLED:
        for el in at.get(kind):
            for attr in ("label", "help"):
                value = getattr(el, attr, None) or getattr(getattr(el, "proto", None), attr, None)
                if value:
                    yield f"{kind}.{attr}", str(value)


def plotly_strings(at: AppTest) -> Iterator[str]:
    """Every string of every plotly figure that plotly draws (a trace's customdata only when its
    hover template shows it: the Compare scatter keeps raw query ids there for the click)."""

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            template = str(node.get("hovertemplate", ""))
            for key, value in node.items():
                if key == "customdata" and "customdata" not in template:
                    continue
                yield from walk(value)

    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        yield from walk({"data": spec.get("data", []), "layout": spec.get("layout", {})})


def assert_inert(at: AppTest, where: str) -> int:
    """No exception; no element that interprets text holds user text it would read. Returns how
    many pieces of escaped payload the page shows (the check must not pass on an empty page)."""
    assert not at.exception, (where, [e.value for e in at.exception])
    shown = 0
    for kind, text in interpreted(at):
        assert not RAW.search(text), (where, kind, text[:300])
        rendered = render(text)
        assert "<img" not in rendered and "<a " not in rendered, (where, kind, text[:300])
        assert not BARE_LINK.search(html.unescape(rendered)), (where, kind, text[:300])
        shown += text.count(escape_text("127.0.0.1:9"))
    for text in plotly_strings(at):
        assert not RAW.search(text) and not LINE_BREAK.search(text), (where, "plotly", text[:300])
        found, _ = plotly_reads(text)
        assert not {t for t in found if re.match(r"(?i)<(a|img|script)\b", t)}, (where, text[:300])
        shown += text.count(escape_text("127.0.0.1:9"))
    return shown


@pytest.mark.parametrize(
    "page", [None, "queries.py", "threshold.py", "compare.py", "latency.py", "runs.py"]
)
@pytest.mark.parametrize("run", [RUN_A, RUN_B, HOSTILE], ids=["cr-run", "nl-run", "hostile"])
def test_every_page_shows_payloads_inert(
    make_app: Callable[..., AppTest], breaks_db: Path, page: str | None, run: str
) -> None:
    # threshold 0.9 puts pairs of the line-break runs in the borderline band: their cards show
    at = make_app(page, db=breaks_db, run=run, threshold="0.9")
    assert at.sidebar.selectbox(key="run").value == run
    shown = assert_inert(at, f"{page} of {run!r}")
    if run != HOSTILE and page not in ("queries.py", "runs.py"):  # (those show run text in grids)
        assert shown, f"{page}: no escaped user text on the page: the test saw nothing"


def test_drilldown_of_every_payload_query(
    make_app: Callable[..., AppTest], breaks_db: Path
) -> None:
    lines = (XSS / "breaks_a.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    queries = [json.loads(line) for line in lines]
    at = make_app("queries.py", db=breaks_db, run=RUN_A)
    for q in queries:
        at.query_params["q"] = q["query_id"]
        at.run()
        assert assert_inert(at, f"drilldown {q['query_id']!r}")
        blocks = "".join(m.value for m in at.markdown)
        # the query, its chunks, answer and reference are on the page, escaped
        for text in (q["query"], q["answer"], q["reference_answer"], q["retrieved"][0]["doc_id"]):
            assert escape_text(text) in blocks


def test_compare_of_two_payload_runs_side_by_side(
    make_app: Callable[..., AppTest], breaks_db: Path
) -> None:
    """The runs whose names hold a CR and an LF before a Markdown image, compared query by
    query; one of their queries opened side by side."""
    at = make_app("compare.py", db=breaks_db, run=RUN_A)
    at.multiselect(key="compare.candidates").set_value([RUN_B]).run()
    assert assert_inert(at, "compare a vs b")
    labels = "".join(m.value for m in at.markdown)
    assert escape_text(RUN_A) in labels and escape_text(RUN_B) in labels  # the summary
    at.session_state["compare.section"] = "Per query"  # the tab holding the side by side
    at.run()
    assert assert_inert(at, "compare per query")
    picker = at.selectbox(key="compare.regressed")
    options = [o for o in picker.options if o != "(pick a regressed query)"]
    assert options, "no regressed query to open"
    picker.set_value(options[0]).run()
    assert assert_inert(at, "compare side by side")
    blocks = "".join(m.value for m in at.markdown)
    assert 'class="rageval-chunk"' in blocks and escape_text(RUN_B) in blocks


@pytest.mark.parametrize("run", [RUN_A, HOSTILE], ids=["cr-run", "hostile"])
def test_why_failing_shows_payloads_inert(
    make_app: Callable[..., AppTest], breaks_db: Path, run: str
) -> None:
    """Why failing on the payload runs, with the other payload run as the first stage: its
    name in the two-stage chart's title, escaped (issue 30)."""
    first = RUN_B if run == RUN_A else RUN_A
    params = {"run": run, "threshold": "0.9", "relevance": "evidence", "why.first_stage": first}
    at = make_app("why.py", db=breaks_db, **params)
    assert at.selectbox(key="why.first_stage").value == first
    assert assert_inert(at, f"why failing of {run!r}")  # the first stage's name, escaped
