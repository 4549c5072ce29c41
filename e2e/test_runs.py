"""The Runs tab: past runs filtered by model, data set and device, drawn, and a run's server
comparisons shown on a click."""
from __future__ import annotations

from conftest import wait_ready


def test_runs_are_listed_filtered_and_compared(page):
    page.goto("/?tab=runs")
    wait_ready(page)
    page.evaluate("() => window.playground.run({kind: 'selftest'})")
    page.evaluate("""() => window.playground.run({kind: 'random_forest', dataset: 'iris', target: 'target',
        params: {n_estimators: 5, random_state: 0}, split: {test_size: 0.2, seed: 42}})""")
    page.wait_for_function("() => document.querySelectorAll('#runs-list tbody tr').length >= 2")
    page.select_option("#runs-kind", "random_forest")
    rows = page.locator("#runs-list tbody tr")
    # The server filters (the tab asks for a page of summaries): wait for its answer.
    page.wait_for_function("""() => { const rows = [...document.querySelectorAll('#runs-list tbody tr')];
        return rows.length && rows.every((r) => r.textContent.includes('random_forest')); }""")
    page.select_option("#runs-data", "iris")
    page.wait_for_function("() => document.querySelector('#runs-list tbody tr')?.textContent.includes('iris')")
    assert "iris" in rows.first.inner_text() and "accuracy" in rows.first.inner_text()
    assert page.locator("#runs-device option").count() >= 2  # "all" and this browser's device
    rows.first.click()
    page.wait_for_function("() => document.querySelector('#runs-detail').textContent.includes('sklearn')", timeout=120_000)
    assert page.locator("#runs-time-chart").is_visible() and page.locator("#runs-metric-chart").is_visible()
