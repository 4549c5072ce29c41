"""The same forest three ways: the page (webgpu on SwiftShader), native (lavapipe) and reference
(plain Python) grow the same trees from the same seed, on small versions of the benchmark's jobs.

The jobs run one after another on one page (conftest.shared_page): a forest's result does not depend
on what the page ran before, and a Pyodide start costs about ten seconds of CI's two cores."""
from __future__ import annotations

import httpx
import numpy as np
import pytest

SMALL_BENCHMARKS = [  # the benchmark configurations (web/suites/forest-classes.json), small
    ("diabetes", "target", {"n_estimators": 6, "max_depth": 16}),
    ("synthetic:regression?n_samples=3000&n_features=20&n_informative=10&noise=10&seed=0", "y",
     {"n_estimators": 3, "max_depth": 12, "max_features": 0.33}),
    ("synthetic:blobs?n_samples=800&n_features=50&centers=10&cluster_std=12&seed=0", "y",
     {"n_estimators": 2, "max_depth": 14, "parallel_bins": True}),  # the kernels GPUs run
    ("wine", "target", {"n_estimators": 6, "max_depth": 5, "criterion": "entropy"}),
    # diabetes' s2 has 269 values in the training rows: a bin each, 16-bit bins, and the kernels
    # GPUs run scan it in one thread (split_scan_wg); the first job above scans it in the loops
    ("diabetes", "target", {"n_estimators": 3, "max_depth": 10, "parallel_bins": True}),
    # live plots: eight batches, each read back while the next ones grow (builder._issue): trees
    # of bounded depth (one set of arrays, read once sized at a wait) and unbounded (a set a batch)
    ("wine", "target", {"n_estimators": 8, "max_depth": 6, "live": True}),
    ("diabetes", "target", {"n_estimators": 8, "live": True}),
]


@pytest.mark.parametrize("dataset, target, params", SMALL_BENCHMARKS,
                         ids=["diabetes", "1Mx20", "classes", "wine", "wide-bins", "live-bounded", "live-deep"])
def test_same_forest_in_the_page_as_on_the_reference_and_native_backends(shared_page, server, dataset, target, params):
    """webgpu (the page, SwiftShader), native (lavapipe) and reference (plain Python) build the same
    trees from the same seed: the same feature, threshold and children at every node; leaf values
    agree to 1e-6 relative."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from py_core.data import parse_csv, prepare
    from py_core.forest import RandomForestClassifier, RandomForestRegressor
    from py_core.jobs import synthetic_table

    params = dict(params, random_state=7)
    live = params.pop("live", False)
    browser_model = shared_page.evaluate("""async ([dataset, target, params, live]) => {
        const run = await window.playground.run({kind: 'random_forest', dataset, target, params, live,
                                                 split: {test_size: 0.2, seed: 42}});
        if (!(run.result.model.binary instanceof Uint8Array)) throw new Error('the model is not binary');
        return window.playground.forestJSON(run.result.model);  // the JSON download, written from it
    }""", [dataset, target, params, live])
    if dataset.startswith("synthetic:"):
        table = synthetic_table(dataset)
    else:
        table = parse_csv(httpx.get(f"{server}/api/datasets/{dataset}/file").content, name=dataset)
    p = prepare(table, target, test_size=0.2, seed=42)
    cls = RandomForestClassifier if p.info["task"] == "classification" else RandomForestRegressor
    y = [p.info["classes"][v] for v in p.y_train] if p.info["classes"] else p.y_train
    kw = {k: v for k, v in params.items() if k != "parallel_bins"}
    for backend in ("reference", "native"):
        fit = cls(**kw, backend=backend).fit  # in a thread: Playwright owns this one's loop
        with ThreadPoolExecutor(1) as pool:
            forest = pool.submit(asyncio.run, fit(p.X_train, y, n_features=p.n_features)).result()
        want = forest.to_dict()
        assert len(browser_model["trees"]) == len(want["trees"]) == params["n_estimators"]
        for got, exp in zip(browser_model["trees"], want["trees"]):
            assert got["feature"] == exp["feature"], backend
            assert got["left"] == exp["left"] and got["right"] == exp["right"], backend
            assert got["threshold"] == exp["threshold"], backend
            g, w = np.array(got["value"], dtype=float), np.array(exp["value"], dtype=float)
            assert np.allclose(g, w, rtol=1e-6, atol=1e-6 * np.abs(w).max()), backend
