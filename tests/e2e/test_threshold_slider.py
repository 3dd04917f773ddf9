"""The fuzzy threshold slider, moved with the keyboard, updates the URL and the shown metrics."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import K, RUN, THRESHOLD, Facts
from tests.e2e.harness import query_params, wait_idle

pytestmark = pytest.mark.e2e
METRIC = f"EvidenceRecall@{K}"


def shown(page: Any, label: str) -> str:
    """The value of the st.metric card whose label is exactly label."""
    card = page.locator("[data-testid='stMetric']").filter(
        has=page.locator("[data-testid='stMetricLabel']", has_text=label)
    )
    values = [
        v
        for c in card.all()
        if c.locator("[data-testid='stMetricLabel']").inner_text().strip() == label
        for v in [c.locator("[data-testid='stMetricValue']").inner_text().strip()]
    ]
    assert len(values) == 1, f"{len(values)} cards labelled {label}"
    return values[0]


def press(page: Any, thumb: Any, key: str) -> None:
    thumb.press(key)
    wait_idle(page)


def test_threshold_slider_with_the_keyboard(app_url: str, page: Any, facts: Facts) -> None:
    page.goto(f"{app_url}/?run={RUN}")
    wait_idle(page)
    thumb = page.get_by_role("slider", name="Fuzzy threshold")
    assert float(thumb.input_value()) == THRESHOLD
    at_default = shown(page, METRIC)
    assert at_default == f"{facts.evidence_recall[THRESHOLD]:.3f}"

    thumb.focus()
    press(page, thumb, "ArrowRight")
    assert float(query_params(page)["threshold"]) == pytest.approx(THRESHOLD + 0.01)
    assert float(thumb.input_value()) == pytest.approx(THRESHOLD + 0.01)
    press(page, thumb, "ArrowLeft")
    press(page, thumb, "ArrowLeft")
    assert float(query_params(page)["threshold"]) == pytest.approx(THRESHOLD - 0.01)

    press(page, thumb, "End")
    assert float(query_params(page)["threshold"]) == 1.0
    at_one = shown(page, METRIC)
    assert at_one == f"{facts.evidence_recall[1.0]:.3f}"
    assert at_one != at_default  # an exact match is rarer than a fuzzy one

    press(page, thumb, "Home")
    assert float(query_params(page)["threshold"]) == 0.0
    assert shown(page, METRIC) == f"{facts.evidence_recall[0.0]:.3f}"
    assert page.locator("[data-testid='stException']").count() == 0


def test_threshold_from_a_link(app_url: str, page: Any, facts: Facts) -> None:
    page.goto(f"{app_url}/?run={RUN}&threshold=1.0")
    wait_idle(page)
    assert float(page.get_by_role("slider", name="Fuzzy threshold").input_value()) == 1.0
    assert shown(page, METRIC) == f"{facts.evidence_recall[1.0]:.3f}"
