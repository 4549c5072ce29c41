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


def test_a_stored_run_of_any_shape_renders_as_text(browser, tmp_path):
    """A database from an older server holding a run with objects where strings belong (issue
    16: `"adapter": {"vendor": {"toString": 1}}` broke the tab for every visitor): the Runs tab
    lists it, its comparisons card opens, and the page throws nothing. A link with `?suite=`
    but without the server's key waits for a click."""
    import json
    import sqlite3
    import uuid

    from conftest import serve

    data = tmp_path / "data"
    data.mkdir()
    bad_id = str(uuid.uuid4())
    bad = {"id": bad_id, "kind": "random_forest", "created_at": "2026-01-01T00:00:00Z",
           "backend": {"toString": 1}, "adapter": {"vendor": {"toString": 1}, "architecture": [1]},
           "config": {"dataset": {"toString": 1}, "params": {"n_estimators": {"toString": 1}}},
           "metrics": {"mse": {"valueOf": 1}}, "timings": {"fit": "fast"}}
    with sqlite3.connect(data / "playground.sqlite3") as conn:
        conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
                     "created_at TEXT NOT NULL, body TEXT NOT NULL)")
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?)", (bad_id, "random_forest", bad["created_at"], json.dumps(bad)))
    gen = serve(data, "--device", "cpu", "--comparisons", "off")
    url = next(gen)
    try:
        context = browser.new_context(base_url=url)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto("/?tab=runs")
        page.wait_for_function("() => document.querySelectorAll('#runs-list tbody tr').length === 1")
        assert "random_forest" in page.locator("#runs-list tbody tr").first.inner_text()
        page.locator("#runs-list tbody tr").first.click()
        page.wait_for_function("() => document.querySelector('#runs-detail').textContent.includes('Browser and server')")
        page.goto("/?suite=selftest")
        page.wait_for_selector("#suite-confirm")
        assert "Run it only if you opened this link yourself" in page.locator("#suite-status").inner_text()
        # With the server's key (what tools/gpu/run_suite.sh passes) it starts at once, and the
        # key leaves the address bar.
        key = (data / "suite.key").read_text().strip()
        page.goto(f"/?suite=selftest&suite_key={key}")
        # The banner is made once the page's module has set up, which can be after `load`.
        page.wait_for_function("() => { const s = document.querySelector('#suite-status');"
                               " return s && !s.textContent.includes('Run it only') && !location.search.includes('suite_key'); }")
        assert page.locator("#suite-confirm").count() == 0
        assert errors == [], errors
        context.close()
    finally:
        next(gen, None)
