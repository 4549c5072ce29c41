"""The page as a person uses it: it becomes ready, runs the GPU self-test, and the run is stored.

The tests on WebGPU run in file order on one page (conftest.shared_page): a Pyodide start costs
about ten seconds of CI's two cores."""
from __future__ import annotations

import httpx

from conftest import wait_ready


def test_page_ready_with_webgpu_adapter(shared_page):
    page = shared_page
    info = wait_ready(page)
    assert info["backend"] == "webgpu", page.console_messages
    assert info["adapter"]["vendor"]  # SwiftShader reports "google"
    page.click("#tab-gpu")
    assert page.locator("#adapter-panel").inner_text().count("WebGPU") >= 1
    assert page.evaluate("() => self.crossOriginIsolated")  # Stop and Pause use shared memory
    banner = page.locator("#gpu-problem")
    if info["adapter"]["is_fallback_adapter"]:  # SwiftShader: the page says it is software
        assert banner.get_attribute("data-reason") == "software" and "software" in banner.inner_text()
        assert "backend=reference" in page.locator("#use-cpu").get_attribute("href")  # the CPU path offered
    else:
        assert banner.is_hidden()


def test_selftest_runs_on_webgpu_and_is_stored(shared_page, server):
    page = shared_page
    page.click("#tab-gpu")
    page.click("#check-gpu")
    page.wait_for_selector("#selftest-table", timeout=120_000)
    status = page.locator("#selftest-status").inner_text()
    assert "agree with the reference" in status, status
    runs = httpx.get(f"{server}/api/runs", params={"kind": "selftest"}).json()["runs"]
    assert runs, "the self-test run was not posted"
    run = httpx.get(f"{server}/api/runs/{runs[0]['id']}").json()  # the list holds summaries
    assert run["backend"] == "webgpu"
    assert run["metrics"]["all_ok"] is True
    names = [k["name"] for k in run["metrics"]["kernels"]]
    assert any(n.startswith("matmul") for n in names)
    ran = [k for k in run["metrics"]["kernels"] if not k.get("skipped")]  # f16 cases need the feature
    assert len(ran) > 40
    for k in run["metrics"]["kernels"]:
        if k.get("skipped"):  # the tensor-core cases: SwiftShader has no f16 subgroup matrices
            assert k["name"].startswith("matmul f16") and "lacks shader-f16" in k["skipped"], k
    for k in ran:
        assert k["ok"] and k["time_s"] > 0 and k["max_abs_err"] < 1e-3


def test_automation_api_returns_stored_run(shared_page, server):
    run = shared_page.evaluate("() => window.playground.run({kind: 'selftest'})")
    for key in ("id", "kind", "config", "backend", "adapter", "metrics", "timings", "created_at"):
        assert key in run, key
    assert run["config"] == {"kind": "selftest"}
    stored = httpx.get(f"{server}/api/runs/{run['id']}").json()
    assert stored["metrics"] == run["metrics"]


def test_without_webgpu_the_page_says_so_and_runs_on_cpu(browser, server):
    context = browser.new_context(base_url=server)
    # What a browser without WebGPU looks like to the page.
    context.add_init_script("Object.defineProperty(Navigator.prototype, 'gpu', {get: () => undefined});"
                            "delete Navigator.prototype.gpu;")
    page = context.new_page()
    page.goto("/")
    info = wait_ready(page)
    assert info["backend"] == "reference"
    banner = page.locator("#gpu-problem")
    assert banner.is_visible()
    assert "navigator.gpu is missing" in banner.inner_text()
    assert "CPU" in page.locator("#backend-chip").inner_text()
    run = page.evaluate("() => window.playground.run({kind: 'selftest'})")
    assert run["backend"] == "reference" and run["metrics"]["all_ok"]
    context.close()
