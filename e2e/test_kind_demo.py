"""A kind kept in its own package (tests/kind_demo) in the page, with one registry line: on a
server started with PLAYGROUND_KINDS, the page builds its tabs from GET /api/kinds (the demo's
beside the forest's and the transformer's, ids unchanged), the worker unpacks the kind's package,
Chromium compiles its kernel family (column_sum, through Tint on SwiftShader) and its panel runs
and stores a run."""
from __future__ import annotations

import httpx
import pytest
from scipy.stats import trim_mean
from sklearn.datasets import load_iris

from conftest import open_page, serve, wait_ready

DEMO = "column_mean=tests.kind_demo.job:KIND"


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLAYGROUND_KINDS", DEMO)  # the one registry line, for the server's process
        started = serve(tmp_path_factory.mktemp("demo"), "--comparisons", "off")
        url = next(started)
    yield url
    next(started, None)  # stops it


def test_a_kinds_own_panel_runs_its_own_kernel_in_the_page(browser, demo_server):
    page = open_page(browser, demo_server)
    try:
        page.goto("/?tab=column_mean")
        info = wait_ready(page)
        tabs = page.eval_on_selector_all("#tabs [role=tab]", "els => els.map((e) => [e.id, e.textContent])")
        assert tabs == [["tab-data", "Data"], ["tab-forest", "Random forest"], ["tab-boosting", "Gradient boosting"],
                        ["tab-transformer", "Transformer"],
                        ["tab-column_mean", "Trimmed mean"], ["tab-gpu", "GPU"], ["tab-runs", "Runs"]]
        assert page.locator("#panel-column_mean").is_visible()  # ?tab= opened it
        assert page.locator("#cm-trim").get_attribute("min") == "0"
        page.fill("#cm-trim", "0.1")
        page.click("#cm-run")
        page.wait_for_function("() => document.querySelector('#cm-result').dataset.mean !== undefined"
                               " || document.querySelector('#cm-result.error')", timeout=120_000)
        assert "error" not in (page.get_attribute("#cm-result", "class") or ""), page.text_content("#cm-result")
        iris = load_iris(as_frame=True).frame["sepal length (cm)"].to_numpy()
        assert float(page.get_attribute("#cm-result", "data-mean")) == pytest.approx(trim_mean(iris, 0.1), rel=1e-6)
        (run,) = httpx.get(f"{demo_server}/api/runs", params={"kind": "column_mean"}).json()["runs"]
        assert info["backend"] == "webgpu" and run["backend"] == "webgpu"  # its kernel ran on the GPU
        # uPlot's stylesheet arrives through web/style.css's @import (both pages' one <link>)
        assert page.evaluate("""() => [...document.styleSheets].some((s) => [...s.cssRules].some(
            (r) => r.styleSheet?.href?.endsWith('/vendor/uplot/uPlot.min.css') && r.styleSheet.cssRules.length > 0))""")
        assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))], page.console_messages
    finally:
        page.context.close()
