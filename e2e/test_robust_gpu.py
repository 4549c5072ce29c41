"""WebGPU faults in the page: no adapter, a refused device, a software adapter, a model larger than
the adapter's limits, a validation error and a device lost mid-job each give their own message,
the job stops, and nothing is posted as a finished run; a GPU that reads back NaN fails the
self-test's kernels (posted as such, with no NaN in it).

Test hook: the GPU lives in the module worker, which page init scripts do not reach, so faults
are injected by serving web/gpu.js through `context.route` with JS put before it (runs before the
worker opens the GPU: patch `navigator.gpu`, GPUAdapter, GPUSupportedLimits) or after it (patch
`GPURuntime`, e.g. destroy its device at the N-th plan run). The page's code is not changed.
"""
from __future__ import annotations

import httpx
import pytest

from conftest import wait_ready

NO_ADAPTER = "navigator.gpu.requestAdapter = async () => null;"
REFUSED_DEVICE = ("GPUAdapter.prototype.requestDevice = async function () {"
                  " throw new Error('injected: out of device memory'); };")
SMALL_LIMITS = ("for (const name of ['maxStorageBufferBindingSize', 'maxBufferSize'])"
                " Object.defineProperty(GPUSupportedLimits.prototype, name, { get: () => 1 << 20 });")


def at_plan_run(n: int, action: str) -> str:
    """JS put after gpu.js: run `action` (with `this` the GPURuntime) at the n-th plan run."""
    return ("{ const run = GPURuntime.prototype.runPlan; let calls = 0;"
            " GPURuntime.prototype.runPlan = function (...args) {"
            f" if (++calls === {n}) {{ {action} }} return run.apply(this, args); }}; }}")


def at_submission(n: int, action: str) -> str:
    """JS put after gpu.js: run `action` (with `this` the GPURuntime) at the n-th submission of
    plans (runPlan or runPlans: a forest's groups of levels go as runPlans)."""
    return ("{ let calls = 0; for (const name of ['runPlan', 'runPlans']) {"
            " const run = GPURuntime.prototype[name];"
            " GPURuntime.prototype[name] = function (...args) {"
            f" if (++calls === {n}) {{ {action} }} return run.apply(this, args); }}; }} }}")


LOSE_DEVICE = "this.device.destroy();"
# Every readback all 0xFF bytes: NaN as f32, as from a GPU that computes garbage.
NAN_READBACK = ("{ const read = GPURuntime.prototype.readPieces;"
                " GPURuntime.prototype.readPieces = function (...args) {"
                " return read.apply(this, args).then((out) => { out.fill(0xff); return out; }); }; }")
# MAP_READ may only be combined with COPY_DST: WebGPU reports an uncaptured validation error.
INVALID_BUFFER = ("this.device.createBuffer({ size: 4, label: 'injected',"
                  " usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });")


@pytest.fixture
def faulty_page(browser, server):
    contexts = []

    def open_page(before: str = "", after: str = "", path: str = "/"):
        context = browser.new_context(base_url=server)
        contexts.append(context)

        def serve_gpu_js(route):
            original = route.fetch()
            route.fulfill(response=original, body=f"{before}\n{original.text()}\n{after}\n")

        context.route("**/web/gpu.js", serve_gpu_js)
        page = context.new_page()
        page.console_messages = []
        page.on("console", lambda m: page.console_messages.append(f"{m.type}: {m.text}"))
        page.goto(path)
        return page, wait_ready(page)

    yield open_page
    for context in contexts:
        context.close()


def runs(server, kind: str) -> list[str]:
    return [r["id"] for r in httpx.get(f"{server}/api/runs", params={"kind": kind, "limit": 1000}).json()["runs"]]


def run_or_error(page, job: str) -> dict:
    return page.evaluate(f"() => window.playground.run({job}).then("
                         "(run) => ({id: run.id}), (e) => ({error: e.message}))")


FOREST_JOB = ("{kind: 'random_forest', dataset: 'synthetic:moons?n_samples=400&noise=0.2&seed=1',"
              " target: 'y', params: {n_estimators: 10, max_depth: 6, random_state: 0},"
              " split: {test_size: 0.25, seed: 42}}")


@pytest.mark.parametrize("before, reason, words", [
    (NO_ADAPTER, "no-adapter", "no GPU adapter was offered"),
    (REFUSED_DEVICE, "device-refused", "refused to open a device (injected: out of device memory)"),
])
def test_no_gpu_says_why_and_runs_on_the_cpu(faulty_page, before, reason, words):
    page, info = faulty_page(before)
    assert info["backend"] == "reference" and info["problem"]["reason"] == reason
    banner = page.locator("#gpu-problem")
    assert banner.is_visible() and banner.get_attribute("data-reason") == reason
    assert words in banner.inner_text() and "CPU reference backend" in banner.inner_text()
    assert "CPU" in page.locator("#backend-chip").inner_text()


def test_software_adapter_is_named(faulty_page):
    page, info = faulty_page()
    assert info["backend"] == "webgpu"
    software = info["adapter"]["is_fallback_adapter"]
    if info["adapter"]["architecture"] == "swiftshader":
        assert software  # SwiftShader, the CPU behind CI's WebGPU, says it is a fallback
    assert ("software adapter" in page.locator("#backend-chip").inner_text()) == software
    page.click("#tab-gpu")
    panel = page.locator("#adapter-panel").inner_text()
    assert ("Software fallback\nyes (a CPU emulates the GPU)" in panel) == software, panel


def test_model_larger_than_the_adapter_limits(faulty_page, server):
    page, info = faulty_page(SMALL_LIMITS, path="/?tab=transformer")
    assert info["limits"]["maxStorageBufferBindingSize"] == 2**20
    page.wait_for_function("() => document.querySelector('#tf-size').textContent.includes('parameters')",
                           timeout=60_000)
    assert "too large for this adapter" in page.locator("#tf-size").inner_text()
    assert page.locator("#tf-train").is_disabled()
    before = runs(server, "transformer")
    # The automation API bypasses the button: the job itself refuses, naming what to lower.
    out = run_or_error(page, "{kind: 'transformer', text: 'shakespeare', params: {steps: 2, batch_size: 2}}")
    assert out["error"].startswith("LimitError: the transformer's parameters needs"), out
    assert "adapter binds at most 1.0 MiB a buffer: lower n_embd, n_layer" in out["error"]
    assert runs(server, "transformer") == before


def failed_selftest(page, server) -> str:
    """Runs the GPU tab's self-test, which the injected fault fails: its status line, once the
    page shows it (and checks that no self-test run was posted)."""
    before = runs(server, "selftest")
    page.click("#tab-gpu")
    page.click("#check-gpu")
    page.wait_for_function("() => document.querySelector('#selftest-status').classList.contains('error')",
                           timeout=120_000)
    assert runs(server, "selftest") == before
    return page.locator("#selftest-status").inner_text()


def test_validation_error_is_named_and_nothing_posted(faulty_page, server):
    # The 2nd plan run is the first case's timed run, which the queue's wait follows: the error,
    # reported by the device after the submission, is met there (a later call could meet it first).
    page, _ = faulty_page(after=at_plan_run(2, INVALID_BUFFER))
    status = failed_selftest(page, server)
    assert status.startswith("Self-test failed: GPUError: WebGPU validation error: Buffer usages"), status
    assert 'CreateBuffer([BufferDescriptor ""injected""])' in status  # the whole message, one line
    assert page.locator("#check-gpu").is_enabled()


def test_device_lost_mid_selftest(faulty_page, server):
    page, _ = faulty_page(after=at_plan_run(4, LOSE_DEVICE))
    status = failed_selftest(page, server)
    assert status.startswith("Self-test failed: GPUError: "), status
    assert "the GPU device was lost (destroyed" in status and "Reload the page" in status
    assert page.locator("#selftest-table").count() == 0  # no half table of results


def test_device_lost_mid_training_fails_that_job_and_the_next_runs(faulty_page, server):
    # A forest's submissions: the data's checks and sort, the binning, then its levels in paced
    # groups (the first: the roots and level 0): lose the device at the 4th, the second group of
    # levels, while the trees grow. (Readbacks submit no plan: web/gpu.js readPieces.)
    page, _ = faulty_page(after=at_submission(4, LOSE_DEVICE))
    before = runs(server, "random_forest")
    out = run_or_error(page, FOREST_JOB)
    assert "the GPU device was lost" in out.get("error", ""), out
    assert "a new one is open for the next job" in out["error"], out
    assert runs(server, "random_forest") == before  # the failed job posted nothing
    # The worker opened a new device: the next job runs on it and is stored.
    again = run_or_error(page, FOREST_JOB)
    assert "error" not in again, again
    assert runs(server, "random_forest") == [again["id"], *before]


def test_nan_readback_fails_the_selftest_kernels(faulty_page, server):
    page, _ = faulty_page(after=NAN_READBACK)
    page.click("#tab-gpu")
    page.click("#check-gpu")
    page.wait_for_selector("#selftest-table", timeout=120_000)
    assert page.locator("#selftest-status").inner_text().startswith("Some kernels disagree")
    matmul = page.locator("#selftest-table tbody tr").first.inner_text()
    assert matmul.startswith("matmul") and "\tNO\t" in matmul, matmul
    newest = httpx.get(f"{server}/api/runs", params={"kind": "selftest", "limit": 1}).json()["runs"][0]
    run = httpx.get(f"{server}/api/runs/{newest['id']}").json()  # the list holds summaries
    assert run["metrics"]["all_ok"] is False
    first = run["metrics"]["kernels"][0]
    assert (first["ok"], first["max_abs_err"]) == (False, None)
