"""The Transformer tab as a person uses it: train the tiny preset for a few steps on SwiftShader,
watch the loss fall and a sample written while it trains, sample text streamed into the page; the
run is stored with its curve."""
from __future__ import annotations

import httpx

from conftest import screenshot, wait_ready


def test_train_tiny_preset_loss_falls_and_samples(page, server, tmp_path):
    page.goto("/?tab=transformer")
    wait_ready(page)
    page.wait_for_function("() => document.querySelector('#tf-size').textContent.includes('parameters')", timeout=60_000)
    assert page.locator("#tf-preset").input_value() == "tiny"
    page.wait_for_function("() => document.querySelector('#tf-estimate').textContent.startsWith('Estimated time: ')")
    assert page.locator("#tf-n_layer").input_value() == "4" and page.locator("#tf-n_embd").input_value() == "128"
    assert page.locator("#tf-eval_interval").input_value() == "250" and page.locator("#tf-eval_steps").input_value() == "20"
    # A short run of the tiny architecture; a small batch and 2 validation batches, not 20, keep
    # SwiftShader's CPU time down (a validation batch costs about a third of a step).
    page.fill("#tf-steps", "12")
    page.fill("#tf-batch_size", "2")
    page.fill("#tf-eval_steps", "2")
    page.dispatch_event("#tf-eval_steps", "change")
    page.click("#tf-train")
    page.wait_for_function("() => /^(Done|Training failed)/.test(document.querySelector('#tf-status').textContent)",
                           timeout=600_000)
    status = page.locator("#tf-status").inner_text()
    assert status.startswith("Done"), status
    # The live sample, written at the validation that ends the run (the only one in 12 steps).
    assert page.locator("#tf-sample-note").inner_text() == "Sampled at step 12 of 12, while training:"
    assert len(page.locator("#tf-output").inner_text()) == 10  # a few words on a software adapter
    runs = httpx.get(f"{server}/api/runs", params={"kind": "transformer"}).json()["runs"]
    run = httpx.get(f"{server}/api/runs/{runs[0]['id']}").json()  # the list holds summaries
    assert run["backend"] == "webgpu" and run["config"]["params"]["steps"] == 12
    assert run["config"]["params"]["eval_steps"] == 2 and run["config"]["params"]["eval_interval"] == 250
    curve = run["metrics"]["loss_curve"]
    assert len(curve) >= 2 and curve[-1][1] < curve[0][1], curve
    assert run["timings"]["step"] > 0 and run["timings"]["tokens_per_s"] > 0
    # The next estimate comes from this run's measured rates (steps, validation, sampling, set-up).
    page.wait_for_function("() => document.querySelector('#tf-estimate').textContent.includes('from your last run on this adapter')")
    seconds = float(page.get_attribute("#tf-estimate", "data-seconds"))
    t = run["timings"]
    assert seconds >= 12 * t["step"] + t["eval"], (seconds, t)  # at least the steps and the validation
    page.fill("#tf-length", "10")  # SwiftShader: about a second a character
    page.click("#tf-sample")
    page.wait_for_function("() => document.querySelector('#tf-sample-note').textContent.startsWith('Sampled from the trained')"
                           " && document.querySelector('#tf-output').textContent.length >= 10", timeout=120_000)
    assert page.locator("#tf-sample").is_enabled()
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.evaluate("() => window.scrollTo(0, 0)")
    assert screenshot(page, "transformer.png", tmp_path).stat().st_size > 20_000  # the README's


def test_precision_choice_says_which_path_runs_and_why(page):
    """SwiftShader has no f16 subgroup matrices: the page runs f32, keeps mixed precision off and
    says why; the adapter's subgroup-matrix configs are read (an empty list there)."""
    page.goto("/?tab=transformer&tf.precision=mixed")
    wait_ready(page)
    page.wait_for_function("() => document.querySelector('#tf-precision-note').textContent.length > 0",
                           timeout=60_000)
    info = page.evaluate("() => window.playground.info.adapter")
    assert info["subgroup_matrix_configs"] == [] or all("component" in c for c in info["subgroup_matrix_configs"])
    assert info["tensor_cores"]["available"] is False
    assert page.locator("#tf-precision").input_value() == "f32"
    assert page.locator("#tf-precision option[value=mixed]").is_disabled()
    note = page.locator("#tf-precision-note").inner_text()
    assert note.startswith("Runs f32 everywhere") and "Mixed precision is not available: this adapter lacks" in note
    assert "chromium-experimental-subgroup-matrix" in note
