"""The demo's documents: the values of each one, and the templates in data/ that write them.

Each kind of document (life, home and auto policy summaries, annual reports) is a list of steps
in data/<kind>.json. write_document() walks them with a seeded style generator, so wording
varies between documents while every fact's character span is known. The steps:

    {"heading": TEXT, "level": 1 to 3 (default 2)}
    {"paragraph": true}                         starts a paragraph
    {"sentence": TEXT}                          a sentence that states no fact
    {"filler": NAME or [[NAME, start, stop], ...], "k": K}
                                                K sentences sampled from data/fillers.json
    {"fact": KIND, "text": TEXT, "value": TEXT, "statement": TEXT,
     "number": FIELD (optional), "extra": {NAME: TEXT or {"number": FIELD}} (optional)}
    {"each": FIELD, "steps": [...]}             the steps once per row of a list field

Any step may hold "if": "FIELD", "not FIELD" or "FIELD or FIELD" (a field holds unless it is
None or False). TEXT is a str.format template over the document's fields (its ident, its
values and those _fields derives), with one more format spec: {x:millions} gives "$8.4 million"
or "$120 million". Where sentences go, TEXT may also be a list of sentences, {"pick": [...]}
(the style generator picks one) or {"if": ..., "then": ..., "else": ...}. A statement keeps
"{v}" where the value goes.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval_core.demo.resources import load

_VOCABULARY = load("vocabulary")
_FILLERS: dict[str, list[str]] = load("fillers")
#: the template file of each product
_TEMPLATES = {
    "life": "life_policy",
    "home": "home_policy",
    "auto": "auto_policy",
    "annual_report": "annual_report",
}


@dataclass(slots=True)
class Fact:
    """One fact stated in a document: the span [start, end) of its text holds value."""

    doc: str
    kind: str
    start: int
    end: int
    value: str
    #: the canonical answer with "{v}" where value goes (a wrong answer swaps another value in)
    statement: str
    number: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    sentences: int = 1


class _Builder:
    """Accumulates headings and paragraphs, recording each fact's character span."""

    def __init__(self, name: str, style: random.Random) -> None:
        self.name = name
        self.style = style
        self.blocks: list[list[tuple[str, dict[str, Any] | None]] | str] = []
        self._para: list[tuple[str, dict[str, Any] | None]] | None = None

    def h(self, text: str, level: int = 2) -> None:
        self.blocks.append("#" * level + " " + text)
        self._para = None

    def p(self) -> None:
        self._para = []
        self.blocks.append(self._para)

    def s(self, text: str) -> None:
        assert self._para is not None
        self._para.append((text, None))

    def filler(self, options: list[str], k: int = 1) -> None:
        for text in self.style.sample(options, k):
            self.s(text)

    def f(
        self,
        kind: str,
        sentences: str | Sequence[str],
        value: str,
        statement: str,
        number: float | None = None,
        **extra: Any,
    ) -> None:
        """Add a fact stated by one or two consecutive sentences."""
        assert self._para is not None
        parts = [sentences] if isinstance(sentences, str) else list(sentences)
        meta = {
            "kind": kind,
            "value": value,
            "statement": statement,
            "number": number,
            "extra": extra,
            "n": len(parts),
        }
        for k, text in enumerate(parts):
            self._para.append((text, meta if k == 0 else {"cont": True}))

    def render(self) -> tuple[str, list[Fact]]:
        out: list[str] = []
        facts: list[Fact] = []
        pos = 0
        for block in self.blocks:
            if out:
                out.append("\n\n")
                pos += 2
            if isinstance(block, str):
                out.append(block)
                pos += len(block)
                continue
            open_fact: tuple[dict[str, Any], int, int] | None = None  # meta, start, left
            for k, (text, meta) in enumerate(block):
                if k:
                    out.append(" ")
                    pos += 1
                start = pos
                out.append(text)
                pos += len(text)
                if meta is not None and "kind" in meta:
                    open_fact = (meta, start, meta["n"] - 1)
                elif meta is not None and open_fact is not None:
                    open_fact = (open_fact[0], open_fact[1], open_fact[2] - 1)
                if open_fact is not None and open_fact[2] == 0:
                    m, s, _ = open_fact
                    facts.append(
                        Fact(
                            self.name,
                            m["kind"],
                            s,
                            pos,
                            m["value"],
                            m["statement"],
                            m["number"],
                            dict(m["extra"]),
                            m["n"],
                        )
                    )
                    open_fact = None
        return "".join(out) + "\n", facts


# ---------------------------------------------------------------------------------------------
# Templates


class _Formatter(string.Formatter):
    """str.format plus the spec "millions": a figure in $ millions, one decimal below 10."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "millions":
            return f"${value:,.0f} million" if value >= 10 else f"${value:,.1f} million"
        return format(value, format_spec)


_FORMAT = _Formatter()


def write_document(
    name: str, product: str, ident: dict[str, Any], values: dict[str, Any], style: random.Random
) -> tuple[str, list[Fact]]:
    """The markdown text of one document and the facts it states, from its product's template."""
    b = _Builder(name, style)
    _run(b, load(_TEMPLATES[product])["steps"], _fields(product, ident, values))
    return b.render()


def _run(b: _Builder, steps: list[dict[str, Any]], fields: dict[str, Any]) -> None:
    for step in steps:
        if "if" in step and not _holds(step["if"], fields):
            continue
        if "heading" in step:
            b.h(_sentence(b, step["heading"], fields), step.get("level", 2))
        elif "paragraph" in step:
            b.p()
        elif "sentence" in step:
            b.s(_sentence(b, step["sentence"], fields))
        elif "filler" in step:
            b.filler(_filler(step["filler"]), step["k"])
        elif "fact" in step:
            # the sentences first: their picks are the only draws from the style generator
            sentences = _sentences(b, step["text"], fields)
            extra = {
                key: fields[x["number"]] if isinstance(x, dict) else _text(x, fields)
                for key, x in step.get("extra", {}).items()
            }
            number = fields[step["number"]] if "number" in step else None
            b.f(
                step["fact"],
                sentences,
                _text(step["value"], fields),
                _text(step["statement"], fields),
                number,
                **extra,
            )
        elif "each" in step:
            for row in fields[step["each"]]:
                _run(b, step["steps"], {**fields, **row})
        else:
            raise ValueError(f"unknown template step: {step!r}")


def _text(template: str, fields: dict[str, Any]) -> str:
    return _FORMAT.vformat(template, (), fields)


def _sentences(b: _Builder, node: Any, fields: dict[str, Any]) -> list[str]:
    """The sentences a text node gives: a template, a list, a pick or an if/then/else."""
    if isinstance(node, str):
        return [_text(node, fields)]
    if isinstance(node, list):
        return [s for part in node for s in _sentences(b, part, fields)]
    if "pick" in node:
        return _sentences(b, b.style.choice(node["pick"]), fields)
    return _sentences(b, node["then"] if _holds(node["if"], fields) else node["else"], fields)


def _sentence(b: _Builder, node: Any, fields: dict[str, Any]) -> str:
    (text,) = _sentences(b, node, fields)
    return text


def _holds(condition: str, fields: dict[str, Any]) -> bool:
    """Whether "FIELD", "not FIELD" or "A or B ..." holds (a field holds unless None or False)."""
    for term in condition.split(" or "):
        name = term.removeprefix("not ")
        if (fields[name] is not None and fields[name] is not False) != (name != term):
            return True
    return False


def _filler(source: str | list[list[Any]]) -> list[str]:
    if isinstance(source, str):
        return _FILLERS[source]
    return [s for name, start, stop in source for s in _FILLERS[name][start:stop]]


def _fields(product: str, ident: dict[str, Any], v: dict[str, Any]) -> dict[str, Any]:
    """What a template may name: ident, values, "v" (kept as "{v}") and figures derived here."""
    f = {**ident, **v, "v": "{v}"}
    if product == "life":
        f["is_term"] = "Whole" not in ident["plan"]
        f["hazard_list"] = ", ".join(v["hazards"][:-1]) + " or " + v["hazards"][-1]
    elif product == "home":
        f["other_structures"] = v["dwelling"] * v["other_pct"] / 100
        f["personal_property"] = v["dwelling"] * v["pp_pct"] / 100
        f["wind_deductible"] = v["dwelling"] * v["wind_pct"] / 100
    elif product == "auto":
        f["bi_person"], f["bi_accident"] = v["bi"][0] * 1000, v["bi"][1] * 1000
    elif product == "annual_report":
        segs = v["segments"]
        prior = v["revenue"] / (1 + v["growth"] / 100)
        op_income = v["revenue"] * v["margin"] / 100 * 1000
        ni = op_income * (0.55 + v["ni_ratio"])
        f.update(
            sector_description=_VOCABULARY["sectors"][ident["sector"]]["description"],
            n_segments=len(segs),
            segment_list=" and ".join(segs)
            if len(segs) == 2
            else f"{segs[0]}, {segs[1]} and {segs[2]}",
            growing=v["growth"] >= 0,
            growth_abs=abs(v["growth"]),
            prior_year=ident["year"] - 1,
            prior_revenue=prior,
            prior_revenue_rounded=round(prior, 2),
            operating_income=op_income,
            net_income=ni,
            eps=ni / v["shares_out"],
            cash_abroad_pct=v["intl"] // 2 + 10,
            ebitda=v["revenue"] * (v["margin"] + v["ebitda_margin_add"]) / 100 * 1000,
            segment_rows=[
                {
                    "segment": seg,
                    "segment_share_pct": share * 100,
                    "segment_revenue": v["revenue"] * share * 1000,
                }
                for seg, share in zip(segs, v["seg_share"], strict=True)
            ],
        )
    return f


# ---------------------------------------------------------------------------------------------
# Values: the figures of one document, drawn from the collection's generator


def _life_values(r: random.Random) -> dict[str, Any]:
    return {
        "term": r.choice([10, 15, 20, 25, 30]),
        "benefit": r.randrange(4, 81) * 25_000,
        "premium": round(r.uniform(18, 320), 2),
        "grace": r.choice([30, 31, 45, 60]),
        "free_look": r.choice([10, 14, 20, 30]),
        "adb": r.randrange(5, 16) * 5,
        "waiver": r.choice([3, 4, 6, 9]),
        "terminal": r.choice([6, 12, 18, 24]),
        "child": r.choice([5_000, 10_000, 15_000, 20_000, 25_000]) if r.random() < 0.6 else None,
        "adr": r.randrange(2, 21) * 25_000 if r.random() < 0.5 else None,
        "ci_wait": r.choice([30, 60, 90, 180]) if r.random() < 0.5 else None,
        "suicide": r.choice([12, 24]),
        "contest": r.choice([12, 18, 24]),
        "conversion": r.choice([60, 65, 70, 75]),
        "hazards": r.sample(_VOCABULARY["hazards"], 3),
        "disability_months": r.choice([3, 6, 12]),
        "disability_scope": r.choice(_VOCABULARY["disability_scopes"]),
    }


def _home_values(r: random.Random) -> dict[str, Any]:
    dwelling = r.randrange(180, 951) * 1_000
    return {
        "dwelling": dwelling,
        "other_pct": r.choice([10, 15, 20]),
        "pp_pct": r.choice([50, 55, 60, 70, 75]),
        "loss_of_use": r.choice([12, 18, 24]),
        "liability": r.choice([100_000, 300_000, 500_000, 1_000_000]),
        "med_pay": r.choice([1_000, 2_000, 2_500, 5_000]),
        "aop": r.choice([500, 1_000, 1_500, 2_000, 2_500, 5_000]),
        "wind_pct": r.choice([1, 2, 3, 5]),
        "water_backup": r.choice([5_000, 10_000, 15_000, 25_000]),
        "jewelry": r.choice([1_000, 1_500, 2_500, 5_000]),
        "flood_wait": r.choice([10, 15, 30]) if r.random() < 0.5 else None,
        "roof_age": r.choice([10, 12, 15, 20]),
        "vacancy": r.choice([30, 45, 60, 90]),
        "acv": r.choice(_VOCABULARY["actual_cash_value_definitions"]),
    }


def _auto_values(r: random.Random) -> dict[str, Any]:
    bi = r.choice([(25, 50), (50, 100), (100, 300), (250, 500)])
    return {
        "bi": bi,
        "pd": r.choice([25_000, 50_000, 100_000, 250_000]),
        "um": r.choice([25_000, 50_000, 100_000]),
        "collision": r.choice([250, 500, 750, 1_000, 1_500, 2_000]),
        "comprehensive": r.choice([100, 250, 500, 750, 1_000]),
        "total_loss": r.choice([60, 70, 75, 80]),
        "new_car": r.choice([12, 24, 36]),
        "rental_day": r.choice([30, 35, 40, 50, 60]),
        "rental_days": r.choice([21, 30, 45]),
        "tow": r.choice([15, 25, 50, 100]),
        "gap": r.choice([20, 25, 30]),
        "glass_wait": r.choice([7, 14, 30]) if r.random() < 0.5 else None,
        "permissive": r.choice([25_000, 50_000, 100_000]),
    }


ValuesFn = Callable[[random.Random], dict[str, Any]]
#: product -> (its values, the values another edition may change, the policy form's prefix)
POLICY_PRODUCTS: dict[str, tuple[ValuesFn, Sequence[str], str]] = {
    "life": (
        _life_values,
        (
            "benefit",
            "premium",
            "grace",
            "adb",
            "waiver",
            "terminal",
            "contest",
            "conversion",
            "free_look",
        ),
        "LP",
    ),
    "home": (
        _home_values,
        (
            "dwelling",
            "pp_pct",
            "liability",
            "aop",
            "wind_pct",
            "water_backup",
            "jewelry",
            "roof_age",
            "vacancy",
        ),
        "HO",
    ),
    "auto": (
        _auto_values,
        (
            "pd",
            "um",
            "collision",
            "comprehensive",
            "total_loss",
            "rental_day",
            "tow",
            "gap",
            "permissive",
        ),
        "AP",
    ),
}


def company_values(r: random.Random, sector: str) -> dict[str, Any]:
    """One fiscal year of a company in sector."""
    profile = _VOCABULARY["sectors"][sector]
    segments = r.sample(profile["segments"], r.choice([2, 3]))
    revenue = round(r.uniform(0.8, 12.0), 2)
    shares = [r.uniform(0.2, 1.0) for _ in segments]
    total = sum(shares)
    return {
        "segments": segments,
        "seg_share": [x / total for x in shares],
        "revenue": revenue,
        "growth": round(r.uniform(-6.0, 14.0), 1),
        "margin": round(r.uniform(6.0, 28.0), 1),
        "margin_prior": round(r.uniform(6.0, 28.0), 1),
        "ni_ratio": r.uniform(0.04, 0.18),
        "shares_out": r.randrange(40, 900),  # millions of diluted shares
        "cash": round(r.uniform(90, 2400)),
        "notes_amt": r.randrange(3, 31) * 50,
        "notes_rate": r.randrange(10, 27) * 0.25,
        "notes_year": r.randrange(2025, 2034),
        "notes_month": r.choice(_VOCABULARY["months"]),
        "revolver": r.choice([0.5, 0.75, 1.0, 1.5, 2.0, 2.5]),
        "revolver_year": r.randrange(2026, 2030),
        "buyback_shares": round(r.uniform(0.4, 9.0), 1),
        "buyback_usd": r.randrange(5, 160) * 5,
        "buyback_left": r.randrange(10, 150) * 10,
        "dividend": round(r.randrange(5, 120) * 0.01, 2),
        "employees": r.randrange(12, 600) * 100,
        "intl": r.randrange(12, 65),
        "customer": r.randrange(4, 24),
        "rate_sens": round(r.uniform(1.0, 40.0), 1),
        "component": r.choice(profile["components"]),
        "supplier_share": r.randrange(3, 25),
        "ebitda_items": r.choice(_VOCABULARY["ebitda_items"]),
        "ebitda_margin_add": r.uniform(4.0, 9.0),
        "fcf": r.choice(_VOCABULARY["free_cash_flow_definitions"]),
    }


def next_year_values(r: random.Random, prev: dict[str, Any]) -> dict[str, Any]:
    """The following fiscal year of the same company: same profile, new results."""
    v = dict(prev)
    v["revenue"] = round(prev["revenue"] * (1 + r.uniform(-0.05, 0.15)), 2)
    v["growth"] = round((v["revenue"] / prev["revenue"] - 1) * 100, 1)
    v["margin_prior"], v["margin"] = prev["margin"], round(prev["margin"] + r.uniform(-3, 3), 1)
    v["shares_out"] = int(prev["shares_out"] * r.uniform(0.93, 1.01))
    v["cash"] = round(prev["cash"] * r.uniform(0.7, 1.4))
    v["buyback_shares"] = round(r.uniform(0.4, 9.0), 1)
    v["buyback_usd"] = r.randrange(5, 160) * 5
    v["buyback_left"] = r.randrange(10, 150) * 10
    v["dividend"] = round(prev["dividend"] + r.choice([0.0, 0.01, 0.02, 0.03, 0.05]), 2)
    v["employees"] = int(round(prev["employees"] * r.uniform(0.95, 1.1), -2))
    v["customer"] = max(3, prev["customer"] + r.choice([-2, -1, 1, 2]))
    v["rate_sens"] = round(r.uniform(1.0, 40.0), 1)
    v["intl"] = min(80, max(5, prev["intl"] + r.choice([-2, -1, 1, 2, 3])))
    return v
