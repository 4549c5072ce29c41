"""Every run gives back what it took, Stop stops, progress tells the truth: the page on SwiftShader.

Memory is read from `window.playground.memory()`: py_core's count of live buffers, their bytes and
recorded plans, and the JS runtime's own count of the GPUBuffers and plans it holds (`runtime`).

The tests run in file order on one page (conftest.shared_page), the first on it fresh: a Pyodide
start costs about ten seconds of CI's two cores, and each test counts from where it starts.
"""
from __future__ import annotations

import re

from conftest import small_transformer

FOREST = {"kind": "random_forest", "dataset": "synthetic:friedman1?n_samples=400&seed=3", "target": "y",
          "params": {"n_estimators": 5, "max_depth": 4, "random_state": 0}, "split": {"test_size": 0.25, "seed": 1}}
BOOSTING = {"kind": "gradient_boosting", "dataset": "synthetic:friedman1?n_samples=400&seed=3", "target": "y",
            "params": {"max_iter": 4, "max_leaf_nodes": 6, "random_state": 0}, "split": {"test_size": 0.25, "seed": 1}}
TRANSFORMER = {"kind": "transformer", "text": "shakespeare", "params": {
    "preset": "tiny", "n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 16, "batch_size": 2,
    "steps": 3, "eval_interval": 3, "eval_steps": 1, "sample_chars": 4, "seed": 1}}


def _memory(page) -> dict:
    return page.evaluate("() => window.playground.memory()")


def _live(m: dict) -> tuple:
    r = m["runtime"]
    return m["buffers"], m["bytes"], m["plans"], r["buffers"], r["plans"]


def _compute(page, job):
    return page.evaluate("(job) => window.playground.compute(job).done", job)


def test_runs_of_each_kind_one_after_another_leave_gpu_memory_where_it_started(shared_page):
    """Ten forests, three boosted models, three self-tests and ten transformers in one tab: afterwards the live buffers,
    bytes and plans (py_core's count and the JS runtime's) are where they started, but for the one
    kept transformer (its weights and sampler: the bytes it states), which the next run frees.
    The self-test runs every kernel family's cases, each in a scope of its own: the first run
    compiles, the next two run from the page's compiled pipelines (on SwiftShader a self-test
    costs CI ten seconds or more, so three, not ten)."""
    page = shared_page
    start = _memory(page)
    assert start["runtime"]["buffers"] == start["buffers"] and start["runtime"]["plans"] == start["plans"]
    for i in range(10):
        res = _compute(page, FOREST)
        assert res["metrics"]["r2"] > 0
        assert _live(_memory(page)) == _live(start), f"forest run {i}"
    for i in range(3):  # boosted models: each fit's and predict's buffers and plans
        assert _compute(page, BOOSTING)["metrics"]["n_iter"] == 4
        assert _live(_memory(page)) == _live(start), f"boosting run {i}"
    for i in range(3):  # every kernel family, each case's buffers and plans
        assert _compute(page, {"kind": "selftest"})["metrics"]["all_ok"]
        assert _live(_memory(page)) == _live(start), f"self-test run {i}"
    kept = set()
    for i in range(10):
        res = _compute(page, TRANSFORMER)
        m = _memory(page)
        kept.add(res["metrics"]["kept_bytes"])
        # Only the kept model is left: its buffers (weights, sampler) and the sampler's one plan.
        assert m["bytes"] - start["bytes"] == m["kept_model_bytes"] == res["metrics"]["kept_bytes"] > 0, f"run {i}"
        assert m["plans"] - start["plans"] <= 1 and m["runtime"]["plans"] == m["plans"], f"run {i}"
        assert m["runtime"]["buffers"] == m["buffers"], f"run {i}"
    assert len(kept) == 1  # the same model size every run: nothing accumulates
    # A forest after the transformers frees nothing of the kept model and leaves nothing of its own.
    before = _live(_memory(page))
    _compute(page, FOREST)
    assert _live(_memory(page)) == before


def test_stop_a_forest_in_the_middle_through_the_page(shared_page, server):
    """Stop, clicked while a forest grows level by level on SwiftShader, ends it within a level:
    the page says where it stopped and that the forest is discarded; nothing is stored; the GPU
    memory is back where it was."""
    page = shared_page
    start = _memory(page)
    job = {**FOREST, "dataset": "synthetic:friedman1?n_samples=3000&seed=3",
           "params": {"n_estimators": 40, "max_depth": 12, "random_state": 0}}
    # The job runs through the page's run(), with a progress hook that clicks Stop (the playground's
    # stop, what the Stop buttons call) once two submissions have come back from the GPU.
    got = page.evaluate("""async (job) => {
        const seen = [];
        let submissions = 0;  // progress from the GPU's levels (the data's preparation reports too)
        try {
            await window.playground.run(job, { onProgress: (p) => {
                seen.push(p);
                if (p.level && ++submissions === 2) window.playground.stop();
            } });
            return { ok: true, seen };
        } catch (e) { return { ok: false, kind: e.kind, stopped: e.stopped, detail: e.detail || e.message, seen }; }
    }""", job)
    assert not got["ok"] and got["stopped"] and got["kind"] == "stopped", got  # by its type (web/app.js)
    at = int(re.search(r"stopped at level (\d+)", got["detail"]).group(1))
    levels = [p["level"][0] for p in got["seen"] if "level" in p]
    # Stop was seen at the first check after the click: no progress after it but that of a
    # submission already under way, and the stopping submission reports none.
    assert len(levels) <= 3 and at > levels[-1] and at < 12, (levels, at)
    assert "the forest is discarded" in got["detail"]
    assert _live(_memory(page)) == _live(start)
    import httpx
    runs = httpx.get(f"{server}/api/runs", params={"kind": "random_forest"}).json()["runs"]
    assert all(r.get("config", {}).get("dataset") != job["dataset"] for r in runs)


def test_stopped_transformer_keeps_its_model_and_progress_is_live(shared_page):
    """The transformer's progress comes a group of steps at a time with every step's loss, the
    step count and an estimate; Stop in the middle ends it at the next group, keeps the model
    trained so far (it samples), and the Transformer tab says so."""
    page = shared_page
    small_transformer(page)
    page.click("#tf-train")
    page.wait_for_function("() => / of 400/.test(document.querySelector('#tf-status').textContent)", timeout=300_000)
    # Progress that arrives while training, with an estimate, then Stop.
    page.wait_for_function("() => /left/.test(document.querySelector('#tf-status').textContent)", timeout=120_000)
    page.click("#tf-stop")
    page.wait_for_function("() => /^Stopped/.test(document.querySelector('#tf-status').textContent)", timeout=120_000)
    status = page.locator("#tf-status").inner_text()
    assert re.search(r"at step \d+ of 400: the model as trained so far is kept", status), status
    assert page.locator("#tf-sample").is_enabled()
    page.fill("#tf-length", "5")
    page.click("#tf-sample")
    page.wait_for_function("() => document.querySelector('#tf-output').textContent.length >= 5", timeout=120_000)
