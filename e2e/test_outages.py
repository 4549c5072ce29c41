"""The page through the server's outages (issue 31): with no Dask scheduler to run them, a run's
page says why its server jobs wait instead of waiting without a word; and a local script that has
filled its share of the queue leaves the page its own (the page sends its tab's id); the models'
tabs through a failed GET /api/kinds. No test waits for Pyodide."""
from __future__ import annotations

import uuid

import httpx

from conftest import _free_port, open_page, serve


def test_waiting_jobs_say_why_and_the_page_keeps_its_queue_share(browser, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    port = _free_port()  # no scheduler there: jobs stay queued
    gen = serve(data, "--device", "cpu", "--comparison-runners", "sklearn",
                "--cluster", f"tcp://127.0.0.1:{port}", "--client-queue-limit", "1")
    url = next(gen)
    page = None
    try:
        def run():
            return {"id": str(uuid.uuid4()), "kind": "random_forest", "backend": "webgpu",
                    "config": {"kind": "random_forest", "dataset": "iris", "target": "target",
                               "params": {"n_estimators": 5, "random_state": 0}}}

        script = run()
        assert httpx.post(f"{url}/api/runs", json=script).status_code == 201
        assert httpx.post(f"{url}/api/runs", json=run()).status_code == 429  # its share is full
        page = open_page(browser, url)
        page.goto(f"/runs/{script['id']}")
        problem = page.locator(".compare-problem")
        problem.wait_for(timeout=30_000)
        assert f"127.0.0.1:{port} cannot be reached" in problem.inner_text()
        row = page.locator("#run-compare tbody tr", has_text="sklearn")
        assert "queued: the Dask scheduler" in row.inner_text()
        # The page's own post (api.js, with its tab id) is not refused for the script's share.
        mine = run()
        stored = page.evaluate("async (run) => (await import('/web/api.js')).postRun(run)", mine)
        assert stored["id"] == mine["id"]
        assert not [m for m in page.console_messages if m.startswith("pageerror")]
    finally:
        if page is not None:
            page.context.close()
        next(gen, None)


def test_the_kinds_tabs_come_after_a_failed_answer_or_the_page_says_why(browser, server):
    """The models' tabs come from GET /api/kinds: an answer that fails (503, as a server busy
    starting) is asked again; one that keeps failing leaves the other tabs and a banner that says
    what the page asked, what came back, and a Reload (the tabs were simply missing)."""
    for failures, tabs in ((2, ["data", "forest", "boosting", "transformer", "gpu", "runs"]),
                           (3, ["data", "gpu", "runs"])):
        page = open_page(browser, server)
        try:
            asked = []

            def kinds(route, request):
                asked.append(request.url)
                if len(asked) <= failures:  # noqa: B023 (called within this loop's turn)
                    route.fulfill(status=503, body="busy")
                else:
                    route.continue_()
            page.route("**/api/kinds", kinds)
            page.goto("/")
            page.locator("#tab-runs").wait_for(timeout=60_000)
            shown = page.eval_on_selector_all("#tabs [role=tab]", "(ts) => ts.map((t) => t.id.slice(4))")
            assert shown == tabs and len(asked) == min(failures + 1, 3)
            banner = page.locator("#kinds-problem")
            if failures < 3:
                assert banner.count() == 0
            else:
                assert "GET /api/kinds" in banner.inner_text() and "503" in banner.inner_text()
                assert banner.get_by_role("button", name="Reload").is_visible()
        finally:
            page.context.close()
