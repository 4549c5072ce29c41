"""The first click as fast as the tenth (issue 34.2): a fresh tab compiles the pipelines its
jobs need ahead, so the first job starts none of its own (`timings.pipelines_started`, counted
by the tab's GPU runtime: web/gpu.js), and runs no slower for waiting on what is in flight.

One fresh page for the module (conftest.shared_page), its tests in file order: the forest's set is
warmed when its tab shows (and on a GPU adapter from the worker's start), the transformer's once
its tab shows a config.
"""
from __future__ import annotations

from conftest import small_transformer

FOREST = {"kind": "random_forest", "dataset": "diabetes", "target": "target",
          "params": {"n_estimators": 5, "max_depth": 6, "random_state": 0}, "split": {"test_size": 0.2, "seed": 42}}


def _compute(page, job) -> dict:
    return page.evaluate("(job) => window.playground.compute(job).done", job)


def _live(page) -> tuple:
    m = page.evaluate("() => window.playground.memory()")
    return m["buffers"], m["bytes"], m["plans"], m["runtime"]["buffers"], m["runtime"]["plans"]


def test_the_first_forest_in_a_fresh_tab_compiles_nothing_on_the_click(shared_page):
    """The Random forest tab shown and the job posted at once: every pipeline it uses was asked
    for already (compiling or queued: it may wait for them, never start one; on a GPU adapter
    they compile from the worker's start, on SwiftShader from the tab's showing), and the memory
    the tests account for is where it was (pipelines hold no buffers or plans)."""
    page = shared_page
    before = _live(page)
    page.click("#tab-forest")
    first = _compute(page, FOREST)
    assert first["timings"]["pipelines_started"] == 0, first["timings"]
    assert first["timings"]["compile"] >= 0 and first["metrics"]["r2"] > 0.2
    second = _compute(page, FOREST)
    assert second["timings"]["pipelines_started"] == 0 and second["metrics"] == first["metrics"]
    assert _live(page) == before


def test_the_transformer_tab_compiles_its_config_before_train(shared_page):
    """The Transformer tab, a small model typed in: the panel has its kernels compiled (the last
    config it asked for is the one typed), and a run of that config starts no pipeline."""
    page = shared_page
    page.evaluate("""() => {
        window.warmed = [];
        const warm = window.playground.warm;
        window.playground.warm = (kind, params, vocab) => { window.warmed.push(params); return warm(kind, params, vocab); };
    }""")
    small_transformer(page, steps=3)
    page.wait_for_function("() => window.warmed.some((p) => p.n_embd === 32 && p.batch_size === 2 && p.block_size === 16"
                           " && p.n_layer === 1 && p.n_head === 2)", timeout=60_000)
    job = {"kind": "transformer", "text": "shakespeare", "params": {
        "preset": "tiny", "n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 16, "batch_size": 2,
        "steps": 3, "eval_interval": 3, "eval_steps": 1, "sample_chars": 4, "seed": 1}}
    res = _compute(page, job)
    assert res["timings"]["pipelines_started"] == 0, res["timings"]
    assert len(res["metrics"]["loss_curve"]) == 3
