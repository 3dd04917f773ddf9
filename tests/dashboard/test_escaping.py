"""One rule for run-file text in an HTML block: escape_text leaves nothing for Markdown or HTML to
read, whatever the line endings (issue 13: `"\\r\\r![x](http://...)"` rendered a remote image)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from dashboard.components.figures_compare import md_text
from dashboard.components.highlight import LINE_BREAK, chunk_card, escape_text, highlight, text_block

BREAKS = ["\r\n", "\r", "\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\r", "\n\n"]
PAYLOADS = [
    "![x](http://example.net/beacon.png)",
    "[click](http://example.net/)",
    "<img src=http://example.net/a.png>",
    "<a href='http://example.net'>x</a>",
    "<script>window.__xss=1</script>",
    "http://example.net/auto www.example.net someone@example.net",
    "<http://example.net/angle>",
    "$\\frac{1}{2}$ :red[alarm] :material/warning:",
    "# heading",
    "    indented code",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "*em* __strong__ ~~del~~ `code`",
    "[ref]: http://example.net/ref\n[ref]",
    "&amp; &#60;img&#62;",
]
#: the only tags escape_text and the highlight put in their output
OURS = re.compile(r"<(br|/?mark)\b")


def render(markup: str) -> str:
    """What a Markdown renderer (CommonMark + tables + strikethrough, raw HTML allowed, as
    Streamlit's unsafe_allow_html) makes of a block of our HTML."""
    # (bare-URL autolinks as GFM makes them need "://" or "www." or "@": escape_text encodes ":",
    # "." and "@", checked in test_no_autolink_can_form)
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(
        f"<div>{markup}</div>")


def visible(rendered: str) -> str:
    """The text a browser shows: tags dropped, <br> as a newline, entities decoded."""
    text = re.sub(r"<br\s*/?>", "\n", rendered)
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_no_markdown_or_html_is_read_whatever_the_line_break(payload: str, brk: str) -> None:
    text = f"before{brk}{brk}{payload}{brk}after"
    rendered = render(escape_text(text))
    tags = {m.group(1) for m in re.finditer(r"<(/?[a-zA-Z][a-zA-Z0-9]*)", rendered)}
    assert tags <= {"div", "/div", "br", "p", "/p"}, (tags, rendered)
    for construct in ("<img", "<a ", "<script", "<h1", "<pre", "<code", "<table", "<em", "<strong", "<del"):
        assert construct not in rendered
    # nothing is lost: the browser shows the text as written, each line break as one line break
    assert visible(rendered) == LINE_BREAK.sub("\n", text)


def test_the_attack_of_the_review() -> None:
    """A lone CR before an image: it used to leave the HTML block and fetch the image."""
    out = escape_text("\r\r![x](http://example.net/beacon.png)")
    assert "\r" not in out and "\n" not in out and "](" not in out and "!" not in out
    assert "<img" not in render(out)


def test_highlight_cards_and_blocks_use_the_rule() -> None:
    evil = "a\r![x](http://example.net/i.png)\u2028[l](http://example.net)"
    for markup in (highlight(evil, 2, 10), chunk_card(evil, evil, 0, 5, covers=True),
                   text_block(evil, evil), highlight(evil, -1, -1)):
        rendered = render(markup)
        assert "<img" not in rendered and "<a " not in rendered and "\r" not in markup
        assert not set(re.findall(r"<(/?[a-z]+)", markup)) - {"br", "mark", "/mark", "div", "/div", "span", "/span", "i", "/i"}
    # the marked window still holds exactly the chunk's characters [2, 10)
    marked = re.search(r"<mark[^>]*>(.*?)</mark>", highlight(evil, 2, 10))
    assert marked and visible(marked.group(1)) == evil[2:10]


def test_ordinary_text_still_reads_the_same() -> None:
    text = "Premiums are due on the 1st (monthly); 2.5% interest applies."
    assert visible(render(escape_text(text))) == text
    assert OURS.search(escape_text("two\nlines"))


@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_message_boxes_get_no_line_break_and_no_markdown(brk: str) -> None:
    out = md_text(f"run{brk}![x](http://example.net/i.png){brk}[a](http://example.net) www.x.org a@b.c")
    assert not LINE_BREAK.search(out)
    # GFM's bare-URL autolinks (Streamlit makes them even through character references): broken
    for raw in ("://", "&#58;&#47;&#47;", "www&#46;", "a&#64;"):
        assert raw not in out
    rendered = MarkdownIt("commonmark").render(out)
    assert "<img" not in rendered and "<a " not in rendered


def test_no_autolink_can_form() -> None:
    out = escape_text("http://example.net www.example.net a@example.net")
    for raw in ("://", "www.", "@"):
        assert raw not in out
