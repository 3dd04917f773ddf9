"""Judge: launch an LLM judge on the current run (a dry-run estimate first), follow it, cancel
it; the run's judge result sets with their ledgers, and how far a judge agrees with itself."""

from __future__ import annotations

import streamlit as st

from rageval_dashboard import keys, sidebar, state
from rageval_dashboard.jobs import judging as judge_jobs
from rageval_dashboard.components.figures import judge as jv
from rageval_dashboard.components.tables import file_stem
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.text_tables import text_table
from rageval_dashboard.widgets.grid import grid
from rageval_core.errors import RagevalError
from rageval_core.judging import (
    DEFAULT_KEY_ENV,
    PROMPTS,
    JudgeConfig,
    JudgeConfigError,
    estimate_judge,
)

view = sidebar.require_view()
ss = st.session_state
st.title("Judge")
st.caption(
    "An LLM judge on any OpenAI-compatible endpoint (`POST {base URL}/chat/completions`: "
    "OpenAI, vLLM, Ollama, LiteLLM). Its verdicts are kept beside the run as a result set and "
    "appear as `judge.*` metrics on every page. The API key is read from the environment "
    "variable you name, by the server process: it is never typed here, stored or shown."
)


def _config() -> JudgeConfig | None:
    """The form's values as a JudgeConfig (None, with a message, when one is not valid)."""
    f = ss.get(keys.JUDGE_FORM) or {}
    try:
        config = JudgeConfig(
            base_url=f["base_url"].strip(),
            model=f["model"].strip(),
            api_key_env=f["key_env"].strip() or DEFAULT_KEY_ENV,
            metrics=tuple(f["metrics"]),
            concurrency=int(f["concurrency"]),
            max_cost_usd=f["max_cost"] or None,
            price_in_per_1k=f["price_in"],
            price_out_per_1k=f["price_out"],
            repeats=int(f["repeats"]),
            name=f["name"].strip() or None,
        )
        config.check()
    except JudgeConfigError as e:  # said with this form's labels, not the CLI's flags
        st.error(escape_text(f"Cannot judge yet: {e.worded(jv.FORM_LABELS)}.", one_line=True))
        return None
    return config


jobs = state.judge_jobs()  # one per store, seen by every tab
job: judge_jobs.JudgeJob | None = jobs.get(state.store_path())
busy = job is not None and job.running

with st.form("judge.launch"):
    c1, c2 = st.columns(2)
    base_url = c1.text_input(
        f"{jv.FORM_LABELS['base_url']} (required)",
        key="judge.base_url",
        help="The endpoint rageval posts `{base URL}/chat/completions` to, e.g. "
        "`https://api.openai.com/v1`, `http://localhost:11434/v1` (Ollama).",
    )
    model = c2.text_input(
        f"{jv.FORM_LABELS['model']} (required)",
        key="judge.model",
        help="The judge model's name at that endpoint, e.g. `gpt-4o-mini`.",
    )
    c1, c2, c3 = st.columns(3)
    key_env = c1.text_input(
        jv.FORM_LABELS["api_key_env"],
        value=DEFAULT_KEY_ENV,
        key="judge.key_env",
        help="The NAME of the variable holding the key in the server's environment (unset: "
        "no Authorization header, for a local server). Never the key itself.",
    )
    name = c2.text_input(jv.FORM_LABELS["name"], placeholder="default: the model", key="judge.name")
    repeats = c3.number_input(
        jv.FORM_LABELS["repeats"], 1, 10, 1, help="judge every item N times", key="judge.repeats"
    )
    metrics = st.multiselect(
        jv.FORM_LABELS["metrics"], list(PROMPTS), default=list(PROMPTS), key="judge.metrics"
    )
    c1, c2, c3, c4 = st.columns(4)
    concurrency = c1.number_input(jv.FORM_LABELS["concurrency"], 1, 64, 4, key="judge.concurrency")
    max_cost = c2.number_input(
        f"{jv.FORM_LABELS['max_cost_usd']} (USD, 0: none)",
        0.0,
        None,
        0.0,
        step=0.5,
        help="stop before passing it",
        key="judge.max_cost",
    )
    price_in = c3.number_input(
        f"{jv.FORM_LABELS['price_in_per_1k']} (USD / 1K tokens)",
        0.0,
        None,
        None,
        format="%.5f",
        help=jv.PRICE_HELP,
        key="judge.price_in",
    )
    price_out = c4.number_input(
        f"{jv.FORM_LABELS['price_out_per_1k']} (USD / 1K tokens)",
        0.0,
        None,
        None,
        format="%.5f",
        help=jv.PRICE_HELP,
        key="judge.price_out",
    )
    b1, b2 = st.columns(2)
    estimate = b1.form_submit_button(
        "Estimate (dry run)", disabled=busy, width="stretch", key="judge.estimate_button"
    )
    launch = b2.form_submit_button(
        "Run judge", type="primary", disabled=busy, width="stretch", key="judge.run_button"
    )

if estimate or launch:
    ss[keys.JUDGE_FORM] = {
        "base_url": base_url,
        "model": model,
        "key_env": key_env,
        "name": name,
        "repeats": repeats,
        "metrics": metrics,
        "concurrency": concurrency,
        "max_cost": max_cost,
        "price_in": price_in,
        "price_out": price_out,
    }
    config = _config()
    if config is not None and estimate:
        try:
            found = estimate_judge(state.store(), view.run.run_id, config)
            ss[keys.JUDGE_ESTIMATE] = found.to_json()
        except RagevalError as e:
            st.error(escape_text(str(e), one_line=True))
    if config is not None and launch:
        job = judge_jobs.start(state.store(), view.run.run_id, view.run.name, config)
        jobs[state.store_path()] = job
        ss.pop(keys.JUDGE_ESTIMATE, None)  # the cache it counted changes as the run goes
        busy = True

found_estimate = ss.get(keys.JUDGE_ESTIMATE)
if found_estimate is not None and found_estimate.get("run") == view.run.name:
    st.info(jv.estimate_line(found_estimate))


@st.fragment(run_every=1.0 if busy else None)
def _progress() -> None:
    current: judge_jobs.JudgeJob | None = jobs.get(state.store_path())
    if current is None:
        return
    done, total = current.snapshot()
    who = escape_text(f"{current.config.model} on {current.run_name}", one_line=True)
    if current.running:
        st.progress(done / total if total else 0.0, text=f"Judging ({who}): {done:,} / {total:,}")
        if st.button("Cancel", key="judge.cancel"):
            current.cancel.set()
            st.caption("Cancelling: nothing new is sent; finished results are kept.")
        return
    if ss.get(keys.JUDGE_SHOWN) != id(current):
        # finished since this session's last look: the whole page again, so the new result set
        # shows in the list below and in the sidebar (a fragment's rerun redraws only itself)
        ss[keys.JUDGE_SHOWN] = id(current)
        st.rerun()
    if current.error is not None:
        st.error(escape_text(current.error, one_line=True))
    elif current.summary is not None:
        kind, status, note = jv.outcome(current.summary)
        getattr(st, kind)(f"Judge run {status} ({who}): " + jv.summary_line(current.summary) + note)
    if st.button("Dismiss", key="judge.dismiss"):
        if jobs.get(state.store_path()) is current:  # not one another tab started since
            jobs.pop(state.store_path())
        st.rerun()


_progress()

st.subheader("Result sets of this run")
sets = state.judge_sets(view.run)
if not sets:
    st.info("This run has no judge result sets yet.")
    st.stop()
text_table(
    jv.sets_frame(sets),
    "judge.sets",
    f"{file_stem(view.run.name)}_judge_sets.csv",
    column_config={"cost (USD)": st.column_config.NumberColumn(format="%.4f")},
)

repeated = [j for j in sets if j.repeats > 1]
st.subheader("Repeatability")
if not repeated:
    st.info("No result set was judged with repeats > 1: judge again with Repeats above 1.")
    st.stop()
options = {str(j.judge_id): f"#{j.judge_id} {j.name} · {j.repeats} repeats" for j in repeated}
which = st.selectbox(
    "Result set", list(options)[::-1], format_func=lambda c: options[c], key="judge.repeat_set"
)
rep = state.repeatability(view.run, which)
grid(jv.repeat_frame(rep), hide_index=True)
dis = jv.disagreements_frame(rep)
st.markdown(f"**Items the judge disagrees with itself on** ({len(dis)})")
text_table(dis, "judge.disagreements", f"{file_stem(view.run.name)}_judge_disagreements.csv")
