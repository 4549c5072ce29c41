"""The Gradient boosting tab as a person uses it: scikit-learn's iris and diabetes, the defaults
preset with few iterations, Train, the losses drawn an iteration a point, early stopping said and
its best iteration marked, Stop in the middle and the next run after it, the metrics the same as
py_core's job gives in Python on the reference backend (same rows, split and parameters), the
downloads (JSON, ONNX) and the snippet, the server's comparison, a reload and the share link
restoring the set-up, the run's own page, and no serious axe finding.

The tests run in file order on one page (conftest.shared_page): a Pyodide start costs about ten
seconds of CI's two cores."""
from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from conftest import ROOT, screenshot, wait_ready

AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"  # npm devDependency, pinned
RUNS = {}  # what the tests trained: name -> the stored run


@pytest.fixture(scope="module")
def page(shared_page):
    shared_page.set_viewport_size({"width": 1280, "height": 900})
    return shared_page


def pick_data(page, dataset: str) -> None:
    page.click("#tab-data")
    page.select_option("#dataset-select", dataset)
    page.wait_for_function("(d) => window.playground.selection?.dataset === d", arg=dataset, timeout=60_000)
    page.click("#tab-boosting")


def trained(page, server, timeout_s: float = 300) -> dict:
    """Waits for the run to end; the stored run when it was trained, else fails with the status."""
    page.wait_for_function("() => /^(Trained|Training failed|Stopped)/.test(document.querySelector('#gb-status').textContent)",
                           timeout=timeout_s * 1000)
    status = page.locator("#gb-status").inner_text()
    assert status.startswith("Trained"), status
    short = re.search(r"run (\w{8})", status).group(1)
    newest = httpx.get(f"{server}/api/runs", params={"kind": "gradient_boosting"}).json()["runs"][0]
    assert newest["id"].startswith(short)
    return httpx.get(f"{server}/api/runs/{newest['id']}").json()


def pythons_job(server, config: dict) -> dict:
    """The stored run's job run by py_core in this process, on the reference backend."""
    from py_core.gpu import get_backend
    from py_core.jobs import Context, run_job
    data = httpx.get(f"{server}/api/datasets/{config['dataset']}/file").content
    ctx = Context(load_dataset=lambda _: data, progress=lambda p: None)
    with ThreadPoolExecutor(1) as pool:  # in a thread: Playwright owns this one's loop
        return pool.submit(asyncio.run, run_job(config, get_backend("reference"), ctx)).result()


def same_metrics(tab: dict, python: dict) -> None:
    assert set(tab) == set(python)
    for k, v in python.items():  # f32 on the GPU, the same f32 arithmetic in Python
        assert tab[k] == pytest.approx(v, rel=1e-4, abs=1e-6), k


def four_digits(x: float) -> str:
    """As the page's fmtNumber(x, 4) writes a number from 0.001 to a million."""
    return f"{float(f'{x:.4g}'):g}"


def loss_points(page) -> list[int]:
    """Points of each series of the loss chart."""
    return page.evaluate("() => document.querySelector('#gb-plots [data-plot=loss_curve] .chart').chart.series"
                         ".map((s) => s.points.length)")


def test_a_classification_at_the_defaults_preset_as_python_gives_it(page, server):
    assert wait_ready(page)["backend"] == "webgpu"
    pick_data(page, "iris")
    # SwiftShader is a software adapter: fewer iterations to start with, and the page says so.
    assert page.locator("#gb-max_iter").input_value() == "20"
    assert "sized down to 20" in page.locator("#gb-estimate").inner_text()
    page.select_option("#gb-preset", "quick")
    assert page.locator("#gb-max_iter").input_value() == "20"
    assert "sized down" not in page.locator("#gb-estimate").inner_text()  # the preset's 20, not the page's
    page.fill("#gb-max_bins", "63")  # a field no preset names in its label
    page.select_option("#gb-preset", "sklearn")  # the main road: scikit-learn's defaults
    assert "sized down" not in page.locator("#gb-estimate").inner_text()  # 100 iterations now
    values = {n: page.locator(f"#gb-{n}").input_value() for n in (
        "loss", "learning_rate", "max_iter", "max_leaf_nodes", "min_samples_leaf", "max_depth", "max_bins",
        "max_features", "early_stopping", "validation_fraction", "n_iter_no_change")}
    assert values == {"loss": "", "learning_rate": "0.1", "max_iter": "100", "max_leaf_nodes": "31",
                      "min_samples_leaf": "20", "max_depth": "", "max_bins": "255", "max_features": "1",
                      "early_stopping": "auto", "validation_fraction": "0.1", "n_iter_no_change": "10"}
    # The task's losses only: iris is classes.
    assert page.evaluate("() => [...document.querySelectorAll('#gb-loss option')].filter((o) => !o.disabled)"
                         ".map((o) => o.value)") == ["", "log_loss"]
    page.fill("#gb-max_iter", "10")  # small for SwiftShader
    page.click("#gb-train")
    run = RUNS["iris"] = trained(page, server)
    assert run["config"]["params"] == {"max_iter": 10, "random_state": 0}  # the defaults left out
    python = pythons_job(server, run["config"])
    same_metrics(run["metrics"], python["metrics"])
    assert run["metrics"]["n_iter"] == 10
    assert loss_points(page) == [11]  # before the first tree, then one an iteration; no validation
    assert page.locator("#gb-plots .loss-stopping").inner_text().startswith("All 10 iterations ran, no early stopping")
    assert "best: iteration" in page.locator("#gb-plots [data-plot=loss_curve] .chart").get_attribute("aria-label")
    assert "accuracy" in page.locator("#gb-metrics").inner_text()
    assert page.locator("#gb-iterations").inner_text() == "10 of 10"
    for plot in ("surface", "confusion", "importances"):
        assert page.locator(f"#gb-plots [data-plot={plot}] canvas").count() == 1, plot
    # The downloads: the job's model as JSON, and the snippet that loads it (the server's) naming
    # the download. The ONNX button is offered (the Kind exports it); its file is the server's,
    # checked against onnxruntime in tests/test_exports_boosting.py (a refit: 10 s here).
    name = f"boosting-{run['id'][:8]}"
    with page.expect_download() as got:
        page.click("#gb-download")
    assert got.value.suggested_filename == f"{name}.json"
    model = json.loads(Path(got.value.path()).read_text())
    assert model["estimator"] == "HistGradientBoostingClassifier" and model["n_iter"] == 10
    assert len(model["trees"]) == 10 * 3 and model["data"]["features"] == run["config"]["features"]  # a tree a class
    assert run["extra"]["model"] == model  # stored with the run: the server's ONNX file is this model, not a refit
    assert page.locator("#gb-download-onnx").is_visible()
    page.wait_for_function("() => !document.querySelector('#gb-snippet pre').textContent.startsWith('Loading')")
    assert f"'{name}.json'" in page.locator("#gb-snippet pre").text_content()
    # The ONNX download has its own (onnxruntime), as the forest's has.
    page.wait_for_function("() => !document.querySelector('#gb-onnx-snippet pre').textContent.startsWith('Loading')")
    assert f"ort.InferenceSession('{name}.onnx')" in page.locator("#gb-onnx-snippet pre").text_content()
    # The server's runs of the same job (its scikit-learn HistGradientBoostingClassifier).
    page.wait_for_function("() => document.querySelector('#gb-compare').textContent.includes('sklearn')", timeout=120_000)


def test_stop_in_the_middle_then_a_regression_stops_early_as_python_gives_it(page, server):
    pick_data(page, "diabetes")
    stale = page.locator("#gb-stale")
    assert stale.inner_text().startswith("The data or target changed")
    assert page.evaluate("() => [...document.querySelectorAll('#gb-loss option')].filter((o) => !o.disabled)"
                         ".map((o) => o.value)") == ["", "squared_error", "absolute_error"]
    # Enough iterations that Stop comes in the middle on any adapter; the estimate, at the rate
    # of the iris run, warns when they take minutes (on SwiftShader they do).
    page.fill("#gb-max_iter", "2000")
    estimate = page.locator("#gb-estimate")
    assert estimate.inner_text().startswith("Estimated time: ")
    assert (float(estimate.get_attribute("data-seconds")) > 60) == ("warn" in estimate.get_attribute("class"))
    page.click("#gb-train")
    page.wait_for_selector("#gb-live", timeout=120_000)  # the first iterations' losses drawn
    page.wait_for_function("() => / left$|^(Trained|Stopped)/.test(document.querySelector('#gb-status').textContent)",
                           timeout=60_000)
    progress = page.locator("#gb-status").inner_text()
    if progress.endswith(" left"):  # the time left in whole seconds or minutes, as the estimate says it
        assert re.search(r" · (about \d+ (s|min)|about [\d.]+ h|under a second) left$", progress), progress
    page.click("#gb-stop")
    page.wait_for_function("() => /^(Trained|Training failed|Stopped)/.test(document.querySelector('#gb-status').textContent)",
                           timeout=120_000)
    status = page.locator("#gb-status").inner_text()
    assert re.fullmatch(r"Stopped after \d+ of 2000 iterations: the model is discarded, nothing was posted\.", status), status
    assert stale.inner_text().startswith("Stopped: that model is discarded; these are the results of run")
    assert page.locator("#gb-live").count() == 0  # its live curve gone, the last run's back
    assert not page.locator("#gb-train").is_disabled() and page.locator("#gb-stop").is_disabled()
    # The next run, with early stopping on the validation rows.
    for name, value in {"max_iter": "40", "learning_rate": "0.3", "max_leaf_nodes": "8", "n_iter_no_change": "3"}.items():
        page.fill(f"#gb-{name}", value)
    page.select_option("#gb-early_stopping", "true")
    page.click("#gb-train")
    # The target moves on while it trains: the results, when they come, say whose they are.
    page.click("#tab-data")
    page.select_option("#target-select", "bmi")
    page.click("#tab-boosting")
    run = RUNS["diabetes"] = trained(page, server)
    assert stale.inner_text() == (f"The data or target changed: these are the results of run {run['id'][:8]} "
                                  "(target from 10 features of diabetes). Train to see this selection's.")
    page.click("#tab-data")
    page.select_option("#target-select", "target")
    page.click("#tab-boosting")
    python = pythons_job(server, run["config"])
    same_metrics(run["metrics"], python["metrics"])
    n_iter, curve = run["metrics"]["n_iter"], python["plots"]["loss_curve"]
    assert curve["early_stopped"] and n_iter < 40
    assert loss_points(page) == [n_iter + 1, n_iter + 1]  # training and validation
    best = curve["best_iteration"]
    assert page.locator("#gb-plots .loss-stopping").inner_text() == (
        f"Stopped at iteration {n_iter} of 40: the validation loss did not improve for 3 iterations "
        f"(best: iteration {best}, half squared error {four_digits(curve['validation'][best])}).")
    label = page.locator("#gb-plots [data-plot=loss_curve] .chart").get_attribute("aria-label")
    assert f"marked: best: iteration {curve['best_iteration']}" in label
    assert "half squared error (mse / 2)" in label  # scikit-learn's loss: half the mse beside it
    assert not stale.is_visible()
    assert "mse" in page.locator("#gb-metrics").inner_text()


def test_the_runs_tab_and_the_runs_own_page_show_a_boosting_run(page, server):
    run = RUNS["diabetes"]
    page.click("#tab-runs")
    row = page.locator(f"#runs-list tbody tr[data-id='{run['id']}']")
    row.wait_for()
    cells = row.inner_text().split("\t")
    assert "gradient_boosting" in cells and re.fullmatch(r"[\d.]+ (µs|ms|s)", cells[-3]), cells  # the main time: fit
    other = page.context.new_page()
    other.goto(f"/runs/{run['id']}")
    other.wait_for_selector("#run-plots [data-plot=loss_curve] .chart")
    assert other.locator("#run-title").inner_text() == f"Gradient boosting run {run['id'][:8]}"  # the tab's words
    assert other.locator("#run-params-note").inner_text() == "The others were left at their defaults."
    assert other.locator("#run-plots .loss-stopping").inner_text().startswith(
        f"Stopped at iteration {run['metrics']['n_iter']} of 40")
    link = other.locator("#run-open").get_attribute("href")
    query = parse_qs(urlparse(link).query)
    assert query["tab"] == ["boosting"] and query["gb.max_iter"] == ["40"] and query["gb.early_stopping"] == ["true"]
    other.close()


def test_no_serious_axe_finding_in_the_boosting_tab(page, tmp_path):
    page.click("#tab-boosting")
    page.wait_for_selector("#gb-results #gb-metrics")  # with its results, plots and loss curve
    page.set_viewport_size({"width": 1280, "height": 900})
    assert screenshot(page, "boosting.png", tmp_path, full_page=True).stat().st_size > 20_000  # the README's
    found = []
    for scheme, size in (("light", {"width": 1280, "height": 900}), ("dark", {"width": 1280, "height": 900}),
                         ("light", {"width": 390, "height": 844})):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(size)
        if not page.evaluate("() => 'axe' in window"):
            page.evaluate(AXE.read_text())  # evaluated, not a script tag: the page's CSP refuses inline scripts
        found += page.evaluate("""async () => (await axe.run(document.querySelector('#panel-boosting'),
            {resultTypes: ['violations']})).violations.filter((v) => ['serious', 'critical'].includes(v.impact))
            .map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`)""")
        wider = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        if wider > 0:
            found.append(f"{scheme} {size['width']} px: the page is {wider} px wider than the window")
    page.emulate_media(color_scheme="light")
    assert found == []


def test_a_reload_and_the_share_link_restore_the_set_up(page):
    want = {"tab": "boosting", "gb.max_iter": "40", "gb.learning_rate": "0.3",
            "gb.max_leaf_nodes": "8", "gb.n_iter_no_change": "3", "gb.early_stopping": "true"}
    query = {k: v[0] for k, v in parse_qs(urlparse(page.url).query, keep_blank_values=True).items()}
    assert want.items() <= query.items(), query
    page.click("#share")
    assert page.locator("#share-link").input_value() == page.url
    page.reload()
    wait_ready(page)
    page.wait_for_function("() => window.playground.selection?.dataset === 'diabetes'", timeout=60_000)
    assert page.locator("#tab-boosting").get_attribute("aria-selected") == "true"
    for key, value in want.items():
        if key.startswith("gb."):
            assert page.locator(f"#gb-{key[3:]}").input_value() == value, key
    # The rate of the last boosted fit here outlives the reload: an estimate before any Train.
    page.wait_for_function("() => document.querySelector('#gb-estimate').textContent.startsWith('Estimated time: ')",
                           timeout=30_000)
    assert "your last boosted model on this adapter" in page.locator("#gb-estimate").inner_text()
    # scikit-learn's 100 iterations typed in: the link says so, or a reload here sizes them down to 20.
    page.fill("#gb-max_iter", "100")
    assert parse_qs(page.evaluate("() => location.search")[1:])["gb.max_iter"] == ["100"]
