"""The Random forest tab as a person uses it: diabetes, the "scikit-learn defaults" preset (100
trees, full depth), trained in the page on WebGPU (SwiftShader on CI); as accurate as scikit-learn
on the same rows; metrics, plots and the server's side-by-side comparison shown. Then jobs through the automation
API: two classes, scikit-learn's defaults, and a failure on the way back that leaves the worker
running the next job.

The tests run in file order on one page (conftest.shared_page): a Pyodide start costs about ten
seconds of CI's two cores. The failure test goes last: its wrapper stays on the worker."""
from __future__ import annotations

import statistics

import httpx
import numpy as np
from sklearn.ensemble import RandomForestRegressor

from conftest import wait_ready


def sklearn_mse_on_the_same_split(server) -> list[float]:
    from py_core.data import parse_csv, prepare
    table = parse_csv(httpx.get(f"{server}/api/datasets/diabetes/file").content, name="diabetes")
    p = prepare(table, "target", test_size=0.2, seed=42)
    X_train = np.array(p.X_train).reshape(-1, p.n_features)
    X_test = np.array(p.X_test).reshape(-1, p.n_features)
    scores = []
    for seed in range(10):  # scikit-learn's own spread over seeds, at its defaults
        model = RandomForestRegressor(random_state=seed, n_jobs=-1).fit(X_train, p.y_train)
        scores.append(float(((model.predict(X_test) - np.array(p.y_test)) ** 2).mean()))
    return scores


def test_diabetes_forest_in_the_page_on_webgpu(shared_page, server):
    page = shared_page
    info = wait_ready(page)
    assert info["backend"] == "webgpu"
    page.click("#tab-forest")
    page.wait_for_function("() => window.playground.selection?.dataset === 'diabetes'", timeout=60_000)
    page.fill("#forest-min_samples_leaf", "5")  # typed before a preset: the preset sets it back
    page.select_option("#forest-preset", "large")
    assert page.locator("#forest-min_samples_leaf").input_value() == "1"
    assert page.locator("#forest-n_estimators").input_value() == "200"
    assert page.locator("#forest-max_depth").input_value() == "16"
    page.select_option("#forest-preset", "sklearn")  # the main road: scikit-learn's defaults
    assert page.locator("#forest-n_estimators").input_value() == "100"
    assert page.locator("#forest-max_depth").input_value() == ""
    page.fill("#forest-random_state", "0")
    page.click("#forest-train")
    page.wait_for_function("() => /^(Trained|Training failed)/.test(document.querySelector('#forest-status').textContent)",
                           timeout=600_000)
    assert page.locator("#forest-status").inner_text().startswith("Trained"), page.locator("#forest-status").inner_text()
    newest = httpx.get(f"{server}/api/runs", params={"kind": "random_forest"}).json()["runs"][0]
    run = httpx.get(f"{server}/api/runs/{newest['id']}").json()  # the list holds summaries
    assert run["backend"] == "webgpu" and run["config"]["params"]["n_estimators"] == 100
    assert run["config"]["params"].get("max_depth") is None  # grown to its leaves
    assert run["timings"]["fit"] > 0 and run["timings"]["predict"] > 0
    m = run["metrics"]
    assert {"mse", "mae", "r2"} <= set(m) and m["n_test"] == 89
    # One forest of ours against scikit-learn's spread over seeds: on this split its own forests
    # range over 3361-3627 (these 10 seeds; bound 3797), ours (seed 0) is 3711.5 (on lavapipe;
    # every backend grows the same trees).
    reference = sklearn_mse_on_the_same_split(server)
    bound = statistics.mean(reference) + 3 * statistics.stdev(reference)
    assert m["mse"] <= bound, (m["mse"], reference)
    # What the person sees: metrics, times with the adapter, plots, and the comparison table.
    assert "mse" in page.locator("#forest-metrics").inner_text()
    assert "WebGPU" in page.locator("#forest-results").inner_text()
    assert page.locator("#forest-plots canvas").count() >= 3  # predicted/actual, residuals, importances
    page.wait_for_function("() => document.querySelector('#forest-compare').textContent.includes('sklearn')", timeout=120_000)


def test_two_class_surface_and_confusion_matrix(shared_page):
    run = shared_page.evaluate("""() => window.playground.run({kind: 'random_forest', dataset: 'synthetic:moons?n_samples=400&noise=0.2&seed=1',
        target: 'y', params: {n_estimators: 10, max_depth: 6, random_state: 0}, split: {test_size: 0.25, seed: 42}})""")
    assert run["metrics"]["accuracy"] > 0.85
    plots = run["result"]["plots"]
    assert plots["confusion"]["classes"] == ["0", "1"] and sum(map(sum, plots["confusion"]["matrix"])) == 100
    assert plots["surface"]["grid"]["n"] ** 2 == len(plots["surface"]["grid"]["values"])


def test_a_forest_at_sklearn_defaults_is_grown_in_the_page_and_stored(shared_page, server):
    """max_depth=None, min_samples_leaf=1 (scikit-learn's defaults) on 1,500 rows: every
    tree grown to its leaves in the page, the model back as binary, the run stored."""
    info = wait_ready(shared_page)
    assert info["backend"] == "webgpu"
    out = shared_page.evaluate("""async () => {
        const run = await window.playground.run({kind: 'random_forest', target: 'y',
            dataset: 'synthetic:friedman1?n_samples=1500&noise=1&seed=3',
            params: {n_estimators: 10, random_state: 0}, split: {test_size: 0.2, seed: 42}});
        const m = run.result.model;
        return {id: run.id, params: run.config.params, r2: run.metrics.r2, bytes: m.binary.length,
                nodes: (await window.playground.forestJSON(m)).trees.map((t) => t.feature.length)};
    }""")
    assert out["params"] == {"n_estimators": 10, "random_state": 0}
    assert len(out["nodes"]) == 10 and min(out["nodes"]) > 1000  # fully grown: ~2 x 760 distinct rows
    assert out["r2"] > 0.5
    assert httpx.get(f"{server}/api/runs/{out['id']}").json()["metrics"]["r2"] == out["r2"]


JOB = """{kind: 'random_forest', dataset: 'wine', target: 'target',
          params: {n_estimators: 3, max_depth: 3, random_state: 0}}"""


def test_a_failure_in_the_result_path_fails_that_job_and_the_worker_runs_the_next(shared_page, server):
    """The worker's way back to the page breaks for one result: that job fails with its message,
    and the next job on the same worker runs and is stored."""
    page = shared_page
    worker = page.workers[0]  # the compute worker (Pyodide, py_core, the GPU)
    # Armed for a job's result only (one with metrics): the panels' own calls after ready
    # (generators, presets, a data set's description) also answer with type 'result', and one of
    # those taking the injected failure left the job to pass (CI, 2026-11-24).
    worker.evaluate("""() => {
        const send = self.postMessage.bind(self);
        let armed = true;
        self.postMessage = (msg, transfer) => {
            if (armed && msg.type === 'result' && msg.result && msg.result.metrics) {
                armed = false;
                throw new Error('injected: the result could not be sent');
            }
            return send(msg, transfer);
        };
    }""")
    failed = page.evaluate(f"() => window.playground.run({JOB}).then(() => 'no failure', (e) => e.message)")
    assert "injected: the result could not be sent" in failed
    # A failure in Python (a bad parameter) is a failed job too; then a good job runs.
    bad = page.evaluate("() => window.playground.run({kind: 'random_forest', dataset: 'wine', target: 'target', "
                        "params: {max_depth: -1}}).then(() => 'no failure', (e) => e.message)")
    assert "max_depth" in bad
    run = page.evaluate(f"() => window.playground.run({JOB})")
    assert run["metrics"]["accuracy"] > 0.8
    assert httpx.get(f"{server}/api/runs/{run['id']}").status_code == 200
