"""The one rule for user text in the app (pure; no Streamlit calls).

Every string that came from a run file (queries, chunks, answers, evidence, ids, tag keys and
values, stage and run names, metadata, error messages quoting them) reaches the page either

- through escape_text (HTML blocks rendered with st.markdown(..., unsafe_allow_html=True);
  Markdown elements: st.caption / info / warning / error / success, widget, metric and
  expander labels, with one_line=True; plotly titles, axis ticks, legend names, annotations
  and hover texts), or
- through a component that never interprets text: st.dataframe cells and column headers,
  st.text, st.code, and the options of selectbox / multiselect / radio (shown as typed).

Images and links are never built from user text.
"""

from __future__ import annotations

import re
import string

#: every line break Markdown, HTML or Python may see: CRLF, CR, LF, VT, FF, FS/GS/RS, NEL, LS, PS
LINE_BREAK = re.compile("\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
#: ASCII punctuation: every character Markdown (CommonMark, GFM tables and autolinks,
#: Streamlit's `:directives[]`, `:emoji:` and `$LaTeX$`), HTML and plotly's label syntax
#: (`<br>`, `<a href>`, `&entity;`, `%{template}`) give a meaning to is among them
_PUNCTUATION = {ord(c): f"&#{ord(c)};" for c in string.punctuation}
#: GFM's bare-URL autolinks ("http://", "www.", "a@b.c") are found in Streamlit's Markdown text
#: *after* character references are decoded: a zero-width space breaks each (the same to the eye)
_AUTOLINK = re.compile(r"(?i)(?<=:)(?=/)|(?<=www)(?=\.)|(?<=[-.\w+])(?=@[-\w]+\.[-\w])")
ZERO_WIDTH_SPACE = "\u200b"


def _line(part: str) -> str:
    part = _AUTOLINK.sub(ZERO_WIDTH_SPACE, part)
    # leading blanks would indent a code block in a Markdown element: numeric references too
    lead = len(part) - len(part.lstrip(" \t"))
    return "".join(f"&#{ord(c)};" for c in part[:lead]) + part[lead:].translate(_PUNCTUATION)


def escape_text(text: str, *, one_line: bool = False) -> str:
    """User text made inert for Markdown, HTML and plotly labels; the browser shows it as written.

    Every ASCII punctuation character (and the blanks that open a line) becomes a numeric
    character reference, so no link, image, emphasis, heading, list, table, code span or block,
    autolink, `:directive[]`, `:emoji:`, `$LaTeX$`, HTML tag or plotly template can form; a
    zero-width space breaks GFM's bare-URL autolinks. Every line break form becomes <br> (an HTML
    block stays one line: a blank line would end it and the rest would be read as Markdown;
    plotly draws <br> as a line break), or with one_line=True a space, for the Markdown elements
    that show no HTML (st.caption, st.info, st.warning, st.error, widget and metric labels).
    """
    return (" " if one_line else "<br>").join(_line(p) for p in LINE_BREAK.split(text))
