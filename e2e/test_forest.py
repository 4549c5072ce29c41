"""The Random forest tab as a person uses it: diabetes, the "Large" preset (200 trees, depth 16),
trained in the page on WebGPU (SwiftShader on CI); as accurate as scikit-learn on the same rows;
metrics, plots and the server's side-by-side comparison shown."""
from __future__ import annotations

import statistics

import httpx
import numpy as np
from sklearn.ensemble import RandomForestRegressor

from conftest import wait_ready


def sklearn_mse_on_the_same_split(server) -> float:
    from py_core.data import parse_csv, prepare
    table = parse_csv(httpx.get(f"{server}/api/datasets/diabetes/file").content, name="diabetes")
    p = prepare(table, "target", test_size=0.2, seed=42)
    X_train = np.array(p.X_train).reshape(-1, p.n_features)
    X_test = np.array(p.X_test).reshape(-1, p.n_features)
    scores = []
    for seed in range(5):  # scikit-learn's own spread over seeds
        model = RandomForestRegressor(200, max_depth=16, random_state=seed, n_jobs=-1).fit(X_train, p.y_train)
        scores.append(float(((model.predict(X_test) - np.array(p.y_test)) ** 2).mean()))
    return statistics.mean(scores)


def test_diabetes_forest_in_the_page_on_webgpu(page, server):
    page.goto("/?tab=forest")
    info = wait_ready(page)
    assert info["backend"] == "webgpu"
    page.wait_for_function("() => window.playground.selection?.dataset === 'diabetes'", timeout=60_000)
    page.select_option("#forest-preset", "large")
    assert page.locator("#forest-n_estimators").input_value() == "200"
    page.fill("#forest-random_state", "0")
    page.click("#forest-train")
    page.wait_for_function("() => /^(Trained|Training failed)/.test(document.querySelector('#forest-status').textContent)",
                           timeout=600_000)
    assert page.locator("#forest-status").inner_text().startswith("Trained"), page.locator("#forest-status").inner_text()
    newest = httpx.get(f"{server}/api/runs", params={"kind": "random_forest"}).json()["runs"][0]
    run = httpx.get(f"{server}/api/runs/{newest['id']}").json()  # the list holds summaries
    assert run["backend"] == "webgpu" and run["config"]["params"]["n_estimators"] == 200
    assert run["timings"]["fit"] > 0 and run["timings"]["predict"] > 0
    m = run["metrics"]
    assert {"mse", "mae", "r2"} <= set(m) and m["n_test"] == 89
    reference = sklearn_mse_on_the_same_split(server)
    assert m["mse"] <= 1.02 * reference, (m["mse"], reference)
    # What the person sees: metrics, times with the adapter, plots, and the comparison table.
    assert "mse" in page.locator("#forest-metrics").inner_text()
    assert "WebGPU" in page.locator("#forest-results").inner_text()
    assert page.locator("#forest-plots canvas").count() >= 3  # predicted/actual, residuals, importances
    page.wait_for_function("() => document.querySelector('#forest-compare').textContent.includes('sklearn')", timeout=120_000)


def test_two_class_surface_and_confusion_matrix(page, server):
    page.goto("/?tab=forest")
    wait_ready(page)
    run = page.evaluate("""() => window.playground.run({kind: 'random_forest', dataset: 'synthetic:moons?n_samples=400&noise=0.2&seed=1',
        target: 'y', params: {n_estimators: 10, max_depth: 6, random_state: 0}, split: {test_size: 0.25, seed: 42}})""")
    assert run["metrics"]["accuracy"] > 0.85
    plots = run["result"]["plots"]
    assert plots["confusion"]["classes"] == ["0", "1"] and sum(map(sum, plots["confusion"]["matrix"])) == 100
    assert plots["surface"]["grid"]["n"] ** 2 == len(plots["surface"]["grid"]["values"])


def test_same_seed_same_forest_in_the_page_as_on_the_reference_backend(page, server):
    """webgpu (in the page) and reference (plain Python) build the same trees: the same feature
    and threshold at every node; leaf values agree to 1e-6 relative."""
    import asyncio

    from py_core.data import parse_csv, prepare
    from py_core.forest import RandomForestClassifier

    params = {"n_estimators": 6, "max_depth": 5, "max_features": "sqrt", "random_state": 7}
    page.goto("/")
    wait_ready(page)
    browser_model = page.evaluate("""async (params) => {
        const run = await window.playground.run({kind: 'random_forest', dataset: 'wine', target: 'target',
                                                 params, split: {test_size: 0.2, seed: 42}});
        if (!(run.result.model.binary instanceof Uint8Array)) throw new Error('the model is not binary');
        return window.playground.forestJSON(run.result.model);  // the JSON download, written from it
    }""", params)
    table = parse_csv(httpx.get(f"{server}/api/datasets/wine/file").content, name="wine")
    p = prepare(table, "target", test_size=0.2, seed=42)
    from concurrent.futures import ThreadPoolExecutor
    fit = RandomForestClassifier(**params, backend="reference").fit  # in a thread: Playwright owns this one's loop
    with ThreadPoolExecutor(1) as pool:
        forest = pool.submit(asyncio.run, fit(p.X_train, p.y_train, n_features=p.n_features)).result()
    reference = forest.to_dict()
    assert len(browser_model["trees"]) == len(reference["trees"]) == 6
    for got, want in zip(browser_model["trees"], reference["trees"]):
        assert got["feature"] == want["feature"] and got["left"] == want["left"] and got["right"] == want["right"]
        assert got["threshold"] == want["threshold"]
        for g, w in zip(got["value"], want["value"]):
            for a, b in zip(g, w):
                assert abs(a - b) <= 1e-6 * max(abs(b), 1e-12)


JOB = """{kind: 'random_forest', dataset: 'wine', target: 'target',
          params: {n_estimators: 3, max_depth: 3, random_state: 0}}"""


def test_a_failure_in_the_result_path_fails_that_job_and_the_worker_runs_the_next(page, server):
    """The worker's way back to the page breaks for one result: that job fails with its message,
    and the next job on the same worker runs and is stored."""
    page.goto("/")
    wait_ready(page)
    worker = page.workers[0]  # the compute worker (Pyodide, py_core, the GPU)
    worker.evaluate("""() => {
        const send = self.postMessage.bind(self);
        let armed = true;
        self.postMessage = (msg, transfer) => {
            if (armed && msg.type === 'result') { armed = false; throw new Error('injected: the result could not be sent'); }
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


def test_a_forest_at_sklearn_defaults_is_grown_in_the_page_and_stored(page, server):
    """max_depth=None, min_samples_leaf=1 (scikit-learn's defaults) on a few thousand rows: every
    tree grown to its leaves in the page, the model back as binary, the run stored."""
    page.goto("/")
    info = wait_ready(page)
    assert info["backend"] == "webgpu"
    out = page.evaluate("""async () => {
        const run = await window.playground.run({kind: 'random_forest', target: 'y',
            dataset: 'synthetic:friedman1?n_samples=3000&noise=1&seed=3',
            params: {n_estimators: 10, random_state: 0}, split: {test_size: 0.2, seed: 42}});
        const m = run.result.model;
        return {id: run.id, params: run.config.params, r2: run.metrics.r2, bytes: m.binary.length,
                nodes: (await window.playground.forestJSON(m)).trees.map((t) => t.feature.length)};
    }""")
    assert out["params"] == {"n_estimators": 10, "random_state": 0}
    assert len(out["nodes"]) == 10 and min(out["nodes"]) > 2000  # fully grown: ~2 x 1,500 distinct rows
    assert out["r2"] > 0.5
    assert httpx.get(f"{server}/api/runs/{out['id']}").json()["metrics"]["r2"] == out["r2"]
