"""The page as a person keeps and shares it: the set-up lives in the URL (a reload restores it, the
Share link opens it elsewhere), results come with their baseline, and every stored run has its own
page (/runs/<id>) with its plots, parameters, comparisons and a JSON download. Every tab, before and
after a trained forest, and the run page, in light and dark and on a 390 px phone: no serious or
critical axe-core violation, nothing wider than the window.

The tests run in file order on one page (a module fixture): each Pyodide start costs about ten
seconds on CI's two cores, so the page is started twice in all (the reload, the share link) and the
forest is the smallest that shows everything (iris, 4 trees of depth 3)."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from conftest import COMPARISON_RUNNERS, ROOT, screenshot, serve, wait_ready

AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"  # npm devDependency, pinned
TABS = ["data", "forest", "transformer", "gpu", "runs"]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 720}  # Playwright's default

# What the first test sets through the controls, as the URL holds it.
SET_UP = {"tab": "forest", "data": "iris", "target": "target", "test": "0.3",
          "features": "sepal%20length%20(cm),petal%20length%20(cm),petal%20width%20(cm)",
          "rf.n_estimators": "4", "rf.max_depth": "3", "rf.criterion": "entropy",
          "rf.surface": "petal%20width%20(cm),sepal%20length%20(cm)", "tf.steps": "7"}
FEATURES = ["sepal length (cm)", "petal length (cm)", "petal width (cm)"]


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """A server of the module's own: the Runs tab draws every run stored, and what other files ran
    on the session's server (a transformer's val_loss chart) is not this module's to draw."""
    yield from serve(tmp_path_factory.mktemp("page-data"), "--comparison-runners", COMPARISON_RUNNERS)


@pytest.fixture(scope="module")
def app(browser, own_server):
    """One browser context for the module; `app.page` is the page the next test continues on."""
    server = own_server
    # bypass_csp: the page's CSP refuses inline scripts, and axe-core goes in as one (test_axe).
    context = browser.new_context(base_url=server, bypass_csp=True, accept_downloads=True)
    app = SimpleNamespace(context=context, server=server, errors=[], page=None)
    app.open = lambda url, replace=True: _open(app, url, replace)
    yield app
    context.close()
    assert app.errors == [], app.errors


def _open(app, url, replace):
    """A new page at `url`; with `replace`, it takes the place of `app.page`."""
    page = app.context.new_page()
    page.on("pageerror", lambda e: app.errors.append(f"{page.url}: {e}"))
    # File choosers intercepted from the start: Playwright turns interception on without waiting
    # for Chromium, so one turned on inside `expect_file_chooser` can miss the first chooser.
    page.on("filechooser", lambda chooser: None)
    page.goto(url)
    if replace:
        if app.page is not None:
            app.page.close()
        app.page = page
    return page


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query, keep_blank_values=True).items()}


def selection(page) -> dict:
    return page.evaluate("() => window.playground.selection")


def assert_set_up(page):
    """The page shows SET_UP: data set, target, features, split, forest and transformer parameters."""
    page.wait_for_function("() => window.playground.selection?.dataset === 'iris'", timeout=60_000)
    s = selection(page)
    assert (s["target"], s["task"], s["features"]) == ("target", "classification", FEATURES)
    assert s["split"]["test_size"] == 0.3
    assert page.locator("#dataset-select").input_value() == "iris"
    assert page.locator("#test-size").input_value() == "0.3"
    assert page.locator("#tab-forest").get_attribute("aria-selected") == "true"
    assert page.locator("#panel-forest").is_visible()
    assert page.locator("#forest-n_estimators").input_value() == "4"
    assert page.locator("#forest-max_depth").input_value() == "3"
    assert page.locator("#forest-criterion").input_value() == "entropy"
    assert page.locator("#forest-surface-x").input_value() == "petal width (cm)"
    assert page.locator("#forest-surface-y").input_value() == "sepal length (cm)"
    page.wait_for_function("() => document.querySelector('#tf-steps').value === '7'", timeout=60_000)


def test_a_reload_restores_the_set_up_from_the_url(app):
    page = app.open("/")
    wait_ready(page)
    page.wait_for_function("() => window.playground.selection?.dataset === 'diabetes'", timeout=60_000)
    assert "data" not in query(page)  # the defaults make no keys
    # Both tabs' forms are their kinds' tables (GET /api/kinds): each field's label and help.
    kinds = {k["name"]: k["params"] for k in httpx.get(f"{app.server}/api/kinds").json()["kinds"]}
    for kind, panel, fields in (("random_forest", "forest", 9), ("gradient_boosting", "boosting", 13)):
        shown = page.evaluate("""(panel) => [...document.querySelectorAll(`#panel-${panel} .form label.field`)].map((l) => {
            const c = l.querySelector('input, select');
            return [c.id.replace(/^[a-z]+-/, ''), l.textContent.trim(), c.title]; })""", panel)
        table = {p["name"]: p for p in kinds[kind]}
        assert len(shown) == fields and all(text.startswith(table[name]["label"]) and title == table[name]["help"]
                                            for name, text, title in shown), shown
    page.select_option("#dataset-select", "iris")
    page.wait_for_function("() => window.playground.selection?.dataset === 'iris'")
    page.uncheck("#feature-list input[value='sepal width (cm)']")
    page.fill("#test-size", "0.3")
    page.dispatch_event("#test-size", "change")
    page.click("#tab-transformer")
    page.wait_for_function("() => document.querySelector('#tf-size').textContent.includes('parameters')", timeout=60_000)
    page.fill("#tf-steps", "7")
    page.dispatch_event("#tf-steps", "change")
    page.click("#tab-forest")
    page.fill("#forest-n_estimators", "4")
    page.fill("#forest-max_depth", "3")
    page.select_option("#forest-criterion", "entropy")
    page.select_option("#forest-surface-x", "petal width (cm)")
    page.select_option("#forest-surface-y", "sepal length (cm)")
    assert query(page) == SET_UP
    page.reload()
    wait_ready(page)
    assert_set_up(page)
    assert query(page) == SET_UP  # restoring writes nothing new


def test_the_share_link_opens_the_same_set_up(app):
    page = app.page
    page.click("#share")
    link = page.locator("#share-link").input_value()
    assert link == page.url and query(page) == SET_UP
    assert page.locator("#share-link").evaluate("(e) => document.activeElement === e")  # selected, ready to copy
    page = app.open(link)  # a fresh page, as the person the link was sent to opens it
    wait_ready(page)
    assert_set_up(page)


def serious_violations(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each."""
    if not page.evaluate("() => 'axe' in window"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']})).violations
        .filter((v) => ['serious', 'critical'].includes(v.impact))
        .map((v) => `${v.impact} ${v.id} (${v.help}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`)""")


def problems(page, where: str) -> list[str]:
    """axe's serious and critical findings, and a page wider than its window (clipped on a phone)."""
    found = [f"{where}: {v}" for v in serious_violations(page)]
    wider = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    if wider > 0:
        found.append(f"{where}: the page is {wider} px wider than the window")
    return found


def problems_in_every_tab(page, state: str) -> list[str]:
    """`problems` on every tab, in light and dark at desktop width and in light on a phone."""
    found = []
    for scheme, size in (("light", DESKTOP), ("dark", DESKTOP), ("light", PHONE)):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(size)
        for tab in TABS:
            page.click(f"#tab-{tab}")
            found += problems(page, f"{state}, {tab} tab, {scheme}, {size['width']} px")
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)
    return found


def picker_by_keyboard(page, selector: str):
    """The file chooser that Enter on the focused picker button opens."""
    page.focus(selector)
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Enter")
    return chooser.value


def test_no_serious_accessibility_problem_before_training(app):
    page = app.page
    page.click("#share")  # its link box open too
    assert problems_in_every_tab(page, "before training") == []
    # The tabs and the file pickers by keyboard: arrows move between tabs, Enter opens a picker.
    page.focus("#tab-data")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.id") == "tab-forest" and page.locator("#panel-forest").is_visible()
    page.keyboard.press("ArrowLeft")
    for tab, picker in (("data", "#file-choose"), ("transformer", "#text-choose")):
        page.click(f"#tab-{tab}")
        chooser = picker_by_keyboard(page, picker)
        assert not chooser.is_multiple()
        chooser.set_files([])  # nothing chosen: closed (Chromium opens one chooser at a time)


def trained(page) -> str:
    """Waits for the forest's training to end; its status line."""
    page.wait_for_function("() => /^(Trained|Training failed)/.test(document.querySelector('#forest-status').textContent)",
                           timeout=300_000)
    return page.locator("#forest-status").inner_text()


def test_a_forest_draws_its_surface_live_and_shows_the_baseline_row(app):
    page = app.page
    page.click("#tab-forest")
    assert re.match(r"Estimated time: (under a second|about \d+ (s|min)) \(", page.locator("#forest-estimate").inner_text())
    # What the live note says as the batches of trees finish (one tree a batch here).
    page.evaluate("""() => { window.liveNotes = [];
        new MutationObserver(() => { const note = document.querySelector('#forest-live')?.textContent;
            if (note && window.liveNotes.at(-1) !== note) window.liveNotes.push(note); })
          .observe(document.querySelector('#forest-plots'), {subtree: true, childList: true, characterData: true}); }""")
    page.click("#forest-train")
    assert trained(page).startswith("Trained")
    assert page.evaluate("() => window.liveNotes") == [f"Drawn by the trees grown so far: after {k} of 4 trees." for k in (1, 2, 3)]
    assert page.locator("#forest-live").count() == 0  # the finished forest's plots replaced them
    surface = page.locator("#forest-plots [data-plot=surface] [role=img]").get_attribute("aria-label")
    assert surface.startswith("Decision surface over petal width (cm) and sepal length (cm): predicted classes:")
    assert page.locator("#forest-plots .surface-slice").inner_text().startswith(
        "Over petal width (cm) (across) and sepal length (cm) (up); the other feature held at its training median: ")
    head = page.locator("#forest-metrics thead th").all_inner_texts()
    assert head == ["Metric", "This forest", "Baseline"]
    rows = {r[0]: r[1:] for r in (tr.locator("td").all_inner_texts() for tr in page.locator("#forest-metrics tbody tr").all())}
    assert {"accuracy", "f1", "log_loss"} <= set(rows) and not {"n_train", "n_test", "n_features"} & set(rows)
    # Stratified 30% of iris: 15 test rows of each class, so always guessing one is right 1 in 3.
    assert rows["accuracy"][1] == "0.33333"
    assert float(rows["accuracy"][0]) > 0.8
    assert page.locator("#forest-baseline-note").inner_text().startswith("Baseline: most frequent class")
    assert "45 test rows" in page.locator("#forest-data-sizes").inner_text()
    page.locator("#forest-plots details.chart-data summary").first.click()  # a chart's data table open
    assert problems_in_every_tab(page, "after training") == []


def test_a_stored_runs_page_shows_plots_parameters_comparisons_and_json(app):
    newest = httpx.get(f"{app.server}/api/runs", params={"kind": "random_forest", "limit": 1}).json()["runs"][0]
    page = app.open(f"/runs/{newest['id']}", replace=False)
    page.wait_for_selector("#run-params")
    params = dict(tr.locator("td").all_inner_texts() for tr in page.locator("#run-params tbody tr").all())
    assert (params["n_estimators"], params["max_depth"], params["criterion"]) == ("4", "3", "entropy")
    assert "iris" in page.locator("#run-about").inner_text()
    metrics = {r[0]: r[1:] for r in (tr.locator("td").all_inner_texts() for tr in page.locator("#run-metrics tbody tr").all())}
    assert metrics["accuracy"][1] == "0.33333"  # the baseline, kept with the run
    titles = page.locator("#run-plots h2").all_inner_texts()
    assert "Confusion matrix (test set)" in titles and "Feature importances" in titles
    assert page.locator("#run-plots canvas").count() >= 2
    page.wait_for_function("() => document.querySelector('#run-compare').textContent.includes('sklearn')", timeout=120_000)
    with page.expect_download() as download:
        page.click("#run-download")
    run = json.loads(open(download.value.path()).read())
    assert run["id"] == newest["id"] and run["config"]["params"]["n_estimators"] == 4
    assert run["extra"]["plots"]["confusion"]["classes"] == ["0", "1", "2"]
    assert run["extra"]["baseline"]["accuracy"] == pytest.approx(1 / 3)
    found = []
    for scheme, size in (("light", DESKTOP), ("dark", DESKTOP), ("dark", PHONE)):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(size)
        found += problems(page, f"run page, {scheme}, {size['width']} px")
    assert found == []
    # The link back opens the run's set-up in the playground.
    link = parse_qs(urlparse(page.locator("#run-open").get_attribute("href")).query)
    assert {k: v[0] for k, v in link.items() if k in SET_UP and k != "tf.steps"} == {k: v for k, v in SET_UP.items() if k != "tf.steps"}
    # A forest of every feature (max_features null) opens as 1.0, not as the empty box (sqrt).
    every = page.evaluate("""async () => (await import('/web/run.js')).setupLink({kind: 'random_forest',
        config: {dataset: 'iris', params: {max_features: null, max_depth: null}}})""")
    assert parse_qs(urlparse(every).query, keep_blank_values=True)["rf.max_features"] == ["1.0"]
    assert parse_qs(urlparse(every).query, keep_blank_values=True)["rf.max_depth"] == [""]
    page.close()


def test_changing_a_parameter_retrains_at_once_when_a_forest_is_quick(app):
    page = app.page
    page.click("#tab-forest")
    page.wait_for_function("() => !document.querySelector('#forest-auto').disabled")  # iris, 4 trees: seconds
    page.check("#forest-auto")
    before = page.locator("#forest-status").inner_text()
    page.fill("#forest-n_estimators", "3")
    page.wait_for_function("(before) => document.querySelector('#forest-status').textContent !== before", arg=before)
    assert trained(page).startswith("Trained")
    newest = httpx.get(f"{app.server}/api/runs", params={"kind": "random_forest", "limit": 1}).json()["runs"][0]
    assert newest["id"][:8] in page.locator("#forest-status").inner_text() and newest["id"][:8] not in before
    assert httpx.get(f"{app.server}/api/runs/{newest['id']}").json()["config"]["params"]["n_estimators"] == 3
    page.uncheck("#forest-auto")


def test_predictions_for_a_new_csv_carry_row_ids(app):
    """The person's own flowers (no index column): each prediction keeps its row's number, and
    numbers have the 7 significant digits the f32 forest holds."""
    page = app.page
    flowers = "sepal length (cm),sepal width (cm),petal length (cm),petal width (cm)\n" + "".join(
        f"{4.6 + 0.37 * i:.2f},3.1,{1.2 + 0.55 * i:.2f},{0.1 + 0.23 * i:.2f}\n" for i in range(9))
    page.click("#tab-forest")
    chooser = picker_by_keyboard(page, "#forest-predict")
    with page.expect_download() as download:
        chooser.set_files(files=[{"name": "flowers.csv", "mimeType": "text/csv", "buffer": flowers.encode()}])
    assert download.value.suggested_filename == "flowers-predictions.csv"
    lines = open(download.value.path()).read().splitlines()
    assert lines[0].startswith("row,target,p(")
    rows = [line.split(",") for line in lines[1:]]
    assert [r[0] for r in rows] == [str(i) for i in range(1, 10)]
    assert all(v == f"{float(v):.7g}" for r in rows for v in r[2:])
    assert "9 predictions downloaded" in page.locator("#forest-results").inner_text()


# A small regression set a person uploads (its name, not its id, is what the Runs tab shows).
GREENHOUSE = "temperature,humidity,yield\n" + "".join(
    f"{18 + i % 9},{40 + (i * 7) % 30},{round(2.5 * (18 + i % 9) - 0.1 * (40 + (i * 7) % 30) + (i % 5) * 0.3, 2)}\n"
    for i in range(60))


def chart(page, selector: str):
    """The uPlot chart in `selector`, as its handle sees it: width, and the x axis' tick positions."""
    return page.locator(f"{selector} .chart").first.evaluate(
        "(box) => ({width: box.chart.plot.width, axes: box.chart.plot.axes.length, ticks: box.chart.plot.axes[0]._splits,"
        " label: box.getAttribute('aria-label')})")


def series_pixels(page, selector: str) -> int:
    """Pixels of the first series' colour (light scheme) on the chart's canvas: points drawn."""
    return page.locator(f"{selector} .chart canvas").first.evaluate("""(c) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
          if (Math.abs(d[i] - 47) < 6 && Math.abs(d[i + 1] - 111) < 6 && Math.abs(d[i + 2] - 222) < 6 && d[i + 3] > 200) n++;
        }
        return n; }""")


def test_the_runs_tab_names_data_sets_shows_parameters_and_draws_each_metric_apart(app):
    page = app.page
    stored = httpx.post(f"{app.server}/api/datasets", files={"file": ("greenhouse.csv", GREENHOUSE.encode(), "text/csv")}).json()
    # Live, as the Train button runs it: regression's predicted against actual fills in too.
    run, live = page.evaluate("""async (id) => {
        const live = [];
        const run = await window.playground.run({kind: 'random_forest', dataset: id, target: 'yield', live: true,
            params: {n_estimators: 2, max_depth: 3, random_state: 0}}, {onProgress: (p) => p.live && live.push(p.live)});
        return [run.id, live]; }""", stored["id"])
    assert [u["trees"] for u in live] == [[1, 2]]
    assert len(live[0]["plots"]["pred_vs_actual"]) == 12 and live[0]["plots"]["surface"]["others"] == 0
    page.click("#tab-runs")
    row = page.locator(f"#runs-list tbody tr[data-id='{run}']")
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[3:7] == ["random_forest", "greenhouse.csv", "yield", "n_estimators 2 · max_depth 3 · random_state 0"]
    assert stored["id"] not in page.locator("#runs-list").inner_text()  # names, not ids
    assert "greenhouse.csv" in page.locator("#runs-data").inner_text()
    # Every metric on its own chart and axis: mse (greenhouse) apart from accuracy (iris).
    metrics = page.locator("#runs-metric-chart .runs-metric")
    assert [metrics.nth(i).get_attribute("data-metric") for i in range(metrics.count())] == ["mse", "accuracy"]
    for metric in ("mse", "accuracy"):
        drawn = chart(page, f"#runs-metric-chart [data-metric={metric}]")
        assert drawn["axes"] == 2 and drawn["label"].startswith(f"{metric}, run after run")
    # One run alone is drawn (a point), on whole-number run ticks.
    page.select_option("#runs-data", stored["id"])
    page.wait_for_function("() => document.querySelectorAll('#runs-list tbody tr').length === 1")
    page.wait_for_function("() => document.querySelector('#runs-time-chart .chart')?.getAttribute('aria-label').includes('1 point,')")
    drawn = chart(page, "#runs-time-chart")
    assert drawn["ticks"] and all(float(t).is_integer() for t in drawn["ticks"])
    assert series_pixels(page, "#runs-time-chart") > 10
    assert not page.locator("#runs-more").is_visible()  # one page holds them all
    # Hovering reads the point out in the legend.
    value = page.locator("#runs-time-chart .u-legend .u-series").nth(1).locator(".u-value")
    assert value.inner_text() == ""  # no placeholder dash before the cursor comes
    page.hover("#runs-time-chart .u-over")
    page.wait_for_function("(e) => e.textContent !== ''", arg=value.element_handle())
    assert float(value.inner_text()) > 0  # its main time, in seconds
    # The charts follow the window: narrower on a phone, wide again after.
    page.set_viewport_size(PHONE)
    page.wait_for_function("() => document.querySelector('#runs-time-chart .chart').chart.plot.width < 390")
    page.set_viewport_size(DESKTOP)
    page.wait_for_function("() => document.querySelector('#runs-time-chart .chart').chart.plot.width > 390")
    page.select_option("#runs-data", "")


def test_readme_screenshots_light_and_dark(app, tmp_path):
    """The README's pictures of the page as it is (SCREENSHOTS=1 writes them into docs/)."""
    page = app.page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("#share-box button")  # closed
    page.click("#tab-forest")
    page.select_option("#forest-surface-x", "")  # the two most important
    page.select_option("#forest-surface-y", "")
    page.click("#forest-train")
    assert trained(page).startswith("Trained")
    shots = [screenshot(page, "forest.png", tmp_path, full_page=True)]
    page.emulate_media(color_scheme="dark")
    shots.append(screenshot(page, "forest-dark.png", tmp_path, full_page=True))
    page.click("#tab-runs")
    shots.append(screenshot(page, "runs-dark.png", tmp_path))
    page.emulate_media(color_scheme="light")
    page.click("#tab-data")
    shots.append(screenshot(page, "data.png", tmp_path))
    page.set_viewport_size(DESKTOP)
    assert all(p.stat().st_size > 20_000 for p in shots)
