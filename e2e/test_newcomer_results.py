"""Results and status as a newcomer meets them (issue 30): a decision surface with its legend, its
slice in words and a note when the features not shown decide; time estimates that learn this
tab's rates and warn before a job of minutes (one the adapter cannot hold: tests/test_estimate.py);
Stop, Pause and a change of data leave no stale state; counts shown as counts; the Runs tab's
target column and two runs side by side; bad parameters named as typed. scikit-learn's wine and
diabetes, small forests.

The tests run in file order on one page (conftest.shared_page): a Pyodide start costs about ten
seconds of CI's two cores."""
from __future__ import annotations

import re

import pytest

from conftest import small_transformer

FAST = {"n_estimators": "8", "max_depth": "6"}
STORED = []  # (data set, the first 8 characters of the run's id) of the forests trained here


def trained(page, timeout_s: float = 120) -> str:
    page.wait_for_function("() => /^(Trained|Training failed|Stopped)/.test(document.querySelector('#forest-status').textContent)",
                           timeout=timeout_s * 1000)
    status = page.locator("#forest-status").inner_text()
    if status.startswith("Trained"):
        STORED.append((page.evaluate("() => window.playground.selection.dataset"), re.search(r"run (\w{8})", status).group(1)))
    return status


def pick_data(page, dataset: str) -> None:
    page.click("#tab-data")
    page.select_option("#dataset-select", dataset)
    page.wait_for_function("(d) => window.playground.selection?.dataset === d", arg=dataset, timeout=60_000)


def surface_card(page):
    return page.locator("#forest-plots [data-plot=surface]")


def modal_share(page) -> float:
    """The share of the surface's plot area (inside its frame) painted in its most common colour."""
    return page.evaluate("""() => {
        const c = document.querySelector('#forest-plots [data-plot=surface] canvas');
        const ctx = c.getContext('2d'), dpr = window.devicePixelRatio || 1;
        const x0 = Math.ceil(60 * dpr), y0 = Math.ceil(10 * dpr);
        const w = c.width - x0 - Math.ceil(12 * dpr), h = c.height - y0 - Math.ceil(38 * dpr);
        const px = ctx.getImageData(x0, y0, w, h).data, seen = new Map();
        for (let i = 0; i < px.length; i += 4) {
            const k = `${px[i]},${px[i + 1]},${px[i + 2]}`;
            seen.set(k, (seen.get(k) || 0) + 1);
        }
        return Math.max(...seen.values()) / (w * h);
    }""")


@pytest.fixture(scope="module")
def page(shared_page):
    pg = shared_page
    pg.set_viewport_size({"width": 1280, "height": 900})
    return pg


def test_a_one_class_surface_has_its_legend_slice_and_note(page):
    pick_data(page, "wine")
    page.click("#tab-forest")
    for name, value in FAST.items():
        page.fill(f"#forest-{name}", value)
    page.select_option("#forest-surface-x", "ash")
    page.select_option("#forest-surface-y", "magnesium")
    page.click("#forest-train")
    assert trained(page).startswith("Trained")
    card = surface_card(page)
    assert card.locator(".surface-legend").inner_text().split()[-3:] == ["0", "1", "2"]  # the classes, named
    slice_ = card.locator(".surface-slice").inner_text()
    assert slice_.startswith("Over ash (across) and magnesium (up); the other 11 features held at their training medians: alcohol 13.")
    assert slice_.endswith(", and 5 more.")
    note = card.locator(".surface-note")
    assert note.is_visible() and "the 11 features not shown decide the prediction" in note.inner_text()
    assert modal_share(page) > 0.9  # one colour, no seams between the cells
    # Over proline and flavanoids the slice shows the three cultivars: no note.
    page.select_option("#forest-surface-x", "proline")
    page.select_option("#forest-surface-y", "flavanoids")
    page.click("#forest-train")
    assert trained(page).startswith("Trained")
    assert not surface_card(page).locator(".surface-note").is_visible()
    assert re.search(r"predicted classes: \d, \d", surface_card(page).locator(".chart").get_attribute("aria-label"))


def test_a_regression_surface_is_drawn_as_values_on_a_scale(page):
    pick_data(page, "diabetes")
    page.click("#tab-forest")
    page.select_option("#forest-surface-x", "")  # the two most important
    page.select_option("#forest-surface-y", "")
    page.click("#forest-train")
    assert trained(page).startswith("Trained")
    card = surface_card(page)
    assert card.locator(".surface-legend").inner_text().split()[-2:] == ["25", "346"]  # the target's range
    label = card.locator(".chart").get_attribute("aria-label")
    low, high = map(float, re.search(r"predictions from ([\d.]+) to ([\d.]+)", label).groups())
    assert 25 <= low < high <= 346
    assert "actual value" in card.locator("details.chart-data").text_content()
    # Chart legends name their series; values come when the cursor does, no "–" placeholders.
    legend = page.locator("#forest-plots [data-plot=pred_vs_actual] .u-legend").inner_text()
    assert "actual" in legend and "–" not in legend and ":" not in legend



def test_the_estimate_learns_from_this_tabs_forests_and_warns_of_minutes(page):
    """Three forests trained above: their measured fits are this adapter's samples (kept in
    localStorage), and the estimate says it works from them; 5,000 unbounded trees are minutes."""
    samples = page.evaluate("""() => Object.entries(localStorage).filter(([k]) => k.startsWith('playground.forest-rates:'))
                                     .map(([, v]) => JSON.parse(v))""")
    assert len(samples) == 1 and len(samples[0]) == 3
    assert all(s["seconds"] > 0 and s["levels"] == 8 * 6 and s["cells"] > 0 for s in samples[0])
    estimate = page.locator("#forest-estimate")
    page.wait_for_function("() => document.querySelector('#forest-estimate').textContent.includes('your last 3 forests')")
    assert "warn" not in estimate.get_attribute("class")
    page.fill("#forest-n_estimators", "5000")
    page.fill("#forest-max_depth", "")
    page.wait_for_function("() => document.querySelector('#forest-estimate').textContent.includes('That is minutes')")
    assert "warn" in estimate.get_attribute("class")
    page.fill("#forest-n_estimators", "8")
    page.fill("#forest-max_depth", "6")
    page.wait_for_function("() => !document.querySelector('#forest-estimate').classList.contains('warn')")


def test_bad_parameters_are_named_next_to_the_field_as_typed(page):
    problem = page.locator("#forest-max_depth-problem")
    assert not problem.is_visible()
    page.fill("#forest-max_depth", "-2")
    assert problem.inner_text() == "Max depth: a whole number, 1 or more, or empty for no limit."
    assert page.get_attribute("#forest-max_depth", "aria-invalid") == "true"
    page.fill("#forest-max_features", "99")  # diabetes has 10 features
    assert page.locator("#forest-max_features-problem").inner_text() == "Max features: at most 10, the features chosen in the Data tab."
    before = page.evaluate("() => document.querySelector('#forest-results').textContent")
    page.click("#forest-train")
    assert page.locator("#forest-status").inner_text() == "Not trained: Max depth: a whole number, 1 or more, or empty for no limit."
    assert page.evaluate("() => document.activeElement.id") == "forest-max_depth"
    assert page.evaluate("() => document.querySelector('#forest-results').textContent") == before
    page.fill("#forest-max_depth", "6")
    page.fill("#forest-max_features", "")
    assert not problem.is_visible() and page.get_attribute("#forest-max_depth", "aria-invalid") == "false"


def test_results_of_another_selection_or_a_stopped_forest_are_marked(page):
    """Results stay, marked as the last finished run's, when the data changes or a forest is
    stopped; the stopped forest's live plots go."""
    run = STORED[-1][1]
    stale = page.locator("#forest-stale")
    assert not stale.is_visible()
    pick_data(page, "wine")
    page.click("#tab-forest")
    assert stale.is_visible() and stale.inner_text().startswith("The data or target changed: these are the results of run")
    pick_data(page, "diabetes")
    page.click("#tab-forest")
    assert not stale.is_visible()
    page.fill("#forest-n_estimators", "200")
    page.fill("#forest-max_depth", "12")
    page.click("#forest-train")
    assert stale.inner_text().startswith("A new forest is training: these are the results of run")
    page.wait_for_selector("#forest-live", timeout=120_000)  # the new forest's first trees drawn
    page.click("#forest-stop")
    assert trained(page).startswith("Stopped")
    assert stale.inner_text().startswith("Stopped: that forest is discarded; these are the results of run")
    assert page.locator("#forest-live").count() == 0  # its live plots are gone, the last run's back
    assert surface_card(page).locator(".surface-legend").inner_text().split()[-2:] == ["25", "346"]
    assert run in stale.inner_text()
    page.fill("#forest-n_estimators", "8")
    page.fill("#forest-max_depth", "6")


def test_transformer_checks_as_typed_says_paused_stops_whole_and_learns_its_rates(page):
    small_transformer(page)
    # A width the heads do not divide, named as it is typed, and Train held until it is fixed.
    page.fill("#tf-n_embd", "33")
    assert page.locator("#tf-n_embd-problem").inner_text() == "Embedding width: a multiple of the heads (2), such as 34."
    assert page.locator("#tf-train").is_disabled()
    page.fill("#tf-n_embd", "32")
    page.dispatch_event("#tf-n_embd", "change")
    assert not page.locator("#tf-n_embd-problem").is_visible()
    page.wait_for_function("() => !document.querySelector('#tf-train').disabled")
    page.click("#tf-train")
    page.wait_for_function("() => /left/.test(document.querySelector('#tf-status').textContent)", timeout=120_000)
    points = "() => document.querySelector('#tf-chart .chart').chart.series[0].points.length"
    before = page.evaluate(points)
    page.click("#tf-pause")
    # The group of steps under way when Pause came still reports: the status stays "Paused".
    page.wait_for_function(f"() => ({points})() > {before}", timeout=60_000)
    status = page.locator("#tf-status").inner_text()
    assert re.fullmatch(r"Paused at step \d+ of 400\.", status), status
    page.click("#tf-stop")
    page.wait_for_function("() => /^Stopped/.test(document.querySelector('#tf-status').textContent)", timeout=120_000)
    status = page.locator("#tf-status").inner_text()
    assert re.fullmatch(r"Stopped at step \d+ of 400: the model as trained so far is kept \(\d+\.\d MiB on the GPU\), "
                        r"sample or save it\. Nothing was posted\.", status), status
    # A finished run's rates are this browser's for the next estimate (kept across reloads).
    for name, value in {"steps": "2", "eval_interval": "2", "eval_steps": "1"}.items():
        page.fill(f"#tf-{name}", value)
        page.dispatch_event(f"#tf-{name}", "change")
    page.click("#tf-train")
    page.wait_for_function("() => /^Done/.test(document.querySelector('#tf-status').textContent)", timeout=120_000)
    kept = page.evaluate("""() => Object.entries(localStorage).filter(([k]) => k.startsWith('playground.transformer-rates:'))
                                  .map(([, v]) => JSON.parse(v))""")
    assert len(kept) == 1 and kept[0]["config"]["params"]["steps"] == 2 and kept[0]["timings"]["step"] > 0
    page.wait_for_function("() => document.querySelector('#tf-estimate').textContent.includes('from your last run on this adapter')")


def test_runs_tab_has_the_target_and_puts_two_runs_side_by_side(page):
    page.click("#tab-runs")
    page.wait_for_selector("#runs-list tbody tr")
    head = page.locator("#runs-list thead").inner_text()
    assert "Target" in head
    (wine, diabetes) = (f"#runs-list tbody tr[data-id^='{next(i for d, i in reversed(STORED) if d == name)}']"
                        for name in ("wine", "diabetes"))
    assert "\ttarget\t" in page.locator(wine).inner_text() and "\ttarget\t" in page.locator(diabetes).inner_text()
    page.locator(diabetes).locator("input.runs-pick").check()
    page.locator(wine).locator("input.runs-pick").check()
    table = page.locator("#runs-pair-table")
    table.wait_for()
    cells = {r.split("\t")[0]: r.split("\t")[1:] for r in table.locator("tbody").inner_text().splitlines()}
    assert cells["run: data"][:2] == ["diabetes", "wine"] and cells["run: data"][2] == "differs"
    assert cells["parameter: n_estimators"] == ["8", "8", ""]  # the same: not marked
    assert cells["metric: mse"][1] == "–" and cells["metric: accuracy"][0] == "–"
    waits = cells["time: waits"]
    assert all(re.fullmatch(r"\d+", w) for w in waits[:2]), waits  # a count, not "32.00 s"
    assert table.locator("tr.differs").count() >= 4
    # The run's own page shows the count as a count too.
    run_id = page.locator(diabetes).get_attribute("data-id")
    other = page.context.new_page()
    other.goto(f"/runs/{run_id}")
    other.wait_for_selector("#run-timings")
    timings = dict(r.split("\t") for r in other.locator("#run-timings tbody").inner_text().splitlines())
    assert re.fullmatch(r"\d+", timings["waits"]) and re.fullmatch(r"[\d.]+ (µs|ms|s)", timings["fit"])
    other.close()


def test_a_generated_table_the_tab_cannot_hold_is_refused_before_it_is_generated(page):
    page.click("#tab-data")
    page.select_option("#dataset-select", "synthetic:friedman1")
    page.wait_for_function("() => window.playground.selection?.dataset.startsWith('synthetic:friedman1')", timeout=60_000)
    rows = page.locator("#generator-params input[name=n_samples]")
    rows.fill("300000000")
    rows.dispatch_event("change")
    page.wait_for_function("() => document.querySelector('#data-status').textContent.startsWith('Not generated')")
    status = page.locator("#data-status").inner_text()
    assert "friedman1 with 300,000,000 rows of 10 features needs about 49.2 GiB of the tab's Python memory" in status
    assert "error" in page.get_attribute("#data-status", "class")
    assert "n_samples=1000&" in page.evaluate("() => window.playground.selection.dataset")  # the table before stays
