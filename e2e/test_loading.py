"""Loading the page as a person does on a slow link: Python (Pyodide) comes compressed and
cached for good, the bar counts its bytes, and a file chosen before Python has loaded is queued,
then read and stored, not dropped."""
from __future__ import annotations

import re
import time

import httpx

from conftest import wait_ready

HOUSES = "rooms,area,city,price\n3,72.5,Lyon,210000\n4,95,Paris,540000\n2,40.1,Lyon,\n5,130,Nice,610000\n3,70,Paris,390000\n"

BOOT_LOG = """
window.__boot = [];
new MutationObserver(() => {
  const stage = document.querySelector('#boot-stage'), bar = document.querySelector('#boot-progress');
  if (!stage || !bar) return;
  const entry = {stage: stage.textContent, bytes: bar.dataset.bytes || '', now: bar.getAttribute('aria-valuenow')};
  const last = window.__boot[window.__boot.length - 1];
  if (!last || last.stage !== entry.stage || last.bytes !== entry.bytes) window.__boot.push(entry);
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_python_loads_compressed_counted_in_bytes_and_a_file_chosen_meanwhile_is_kept(browser, server, tmp_path):
    context = browser.new_context(base_url=server)
    page = context.new_page()
    page.add_init_script(BOOT_LOG)
    held, released, responses = [], [], {}

    def hold(route):  # the first request waits; later ones (Pyodide's own, from the cache) pass
        if released:
            route.continue_()
        else:
            held.append(route)

    # The WebAssembly half of Python is held back until the file has been chosen: a slow link.
    context.route(re.compile(r".*/pyodide/v[^/]+/pyodide\.asm\.wasm$"), hold)
    context.on("response", lambda r: responses.setdefault(r.url.rsplit("/", 1)[-1], r))
    def stored():  # houses.csv uploads on this server (other tests may store theirs)
        return [d["rows"] for d in httpx.get(f"{server}/api/datasets").json()["datasets"] if d["name"] == "houses.csv"]

    before = stored()
    try:
        page.goto("/")
        deadline = time.time() + 60
        while not held:
            assert time.time() < deadline, "the page never asked for pyodide.asm.wasm"
            page.wait_for_timeout(50)
        assert page.evaluate("() => window.playground === undefined || !window.playground.info")
        path = tmp_path / "houses.csv"
        path.write_text(HOUSES)
        page.set_input_files("#file-input", str(path))
        page.wait_for_function("() => document.querySelector('#data-status').textContent.includes('queued')")
        released.append(True)
        for route in held:
            route.continue_()
        wait_ready(page)
        page.wait_for_function("() => document.querySelector('#data-status').textContent.includes('stored on the server')",
                               timeout=60_000)
        assert "houses.csv" in page.locator("#data-preview").inner_text()
        assert sorted(stored()) == sorted(before + [5])  # stored once, its 5 rows

        # The bar counted bytes, up to the whole of Python, before it said anything else.
        boot = page.evaluate("() => window.__boot")
        counted = [tuple(map(int, e["bytes"].split("/"))) for e in boot if e["bytes"]]
        assert len(counted) >= 3, boot
        assert all(a[0] <= b[0] for a, b in zip(counted, counted[1:])), counted
        got, total = counted[-1]
        assert got == total > 10_000_000, counted  # Pyodide's wasm, stdlib and loader: over 10 MB
        assert any(re.search(r"Downloading Python \(Pyodide\): [\d.]+ MB of [\d.]+ MB", e["stage"]) for e in boot)

        # Compressed on the wire, cached for good (the version is in the URL).
        wasm = responses["pyodide.asm.wasm"].all_headers()
        assert wasm.get("content-encoding") == "gzip", wasm
        assert "immutable" in wasm.get("cache-control", ""), wasm
        raw = httpx.get(f"{server}{responses['pyodide.asm.wasm'].url.split(server, 1)[1]}",
                        headers={"accept-encoding": "gzip"})
        assert int(raw.headers["content-length"]) < 0.6 * int(raw.headers["x-decoded-length"])
    finally:
        context.close()
