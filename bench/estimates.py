"""The Transformer tab's time estimate against the time Train then takes, through clicks as a
person would: a fresh tab (no stored run: the adapter class's rough figure), then runs of other
sizes, each estimated from the run before it.

    python -m bench.estimates [--runs "tiny:20:12,tiny:10:12,tiny:20:4"] [--backend webgpu|reference]
        [--out bench/results/DATE-estimates.md]

Each run is PRESET:STEPS:BATCH. For each: the estimate shown before Train (its seconds and its
basis), the seconds from the click to "Done" (the page's own wall clock: the job's `total`, and
ours around the click), and their ratio. `--backend reference`: the page's CPU fallback
(`?backend=reference`, as `python -m bench --backend reference`).
Headless Chromium on this machine (SwiftShader unless CHROMIUM_GPU_FLAGS says otherwise).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import httpx

from .__main__ import FLAGS, free_port, start_server


def write_report(result: dict, out: Path) -> None:
    """OUT (markdown table) and OUT with .json beside it, from `result` (runs, backend, adapter, rows)."""
    lines = [f"# Transformer time estimates against the time taken ({platform.node()}, {os.cpu_count()} cores)",
             "", f"`python -m bench.estimates --runs {result['runs']} --backend {result['backend']}`; adapter "
             f"{json.dumps(result['adapter'])}", "",
             "| run (preset:steps:batch) | estimate s | basis | taken s (click to Done) | taken / estimate "
             "| step s | set-up s | validation s | live sample s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["rows"]:
        text = r["estimate"]
        basis = text[text.index("(") + 1:text.rindex(")")] if "(" in text else ""
        lines.append(f"| {r['run']} | {r['estimate_s']:.1f} | {basis} | {r['wall_s']:.1f} | {r['ratio']:.2f} | "
                     f"{r['step_s']:.2f} | {r['setup_s']:.1f} | {r['eval_s']:.1f} | {r['live_sample_s'] or 0:.1f} |")
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))


def settled_estimate(page, steps: str) -> tuple[float, str]:
    """The estimate once the page has finished recomputing it for the changed fields (each change
    asks the worker for the size, then estimates): for `steps` steps, unchanged for a second."""
    last = None
    while True:
        page.wait_for_function(f"() => document.querySelector('#tf-estimate').textContent.includes('for {steps} steps')")
        now = (float(page.get_attribute("#tf-estimate", "data-seconds")), page.locator("#tf-estimate").inner_text())
        if now == last:
            return now
        last = now
        time.sleep(1.0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="tiny:20:12,tiny:10:12,tiny:20:4")
    p.add_argument("--backend", choices=("webgpu", "reference"), default="webgpu")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    from playwright.sync_api import sync_playwright
    data_dir = Path(tempfile.mkdtemp())
    port = free_port()
    server = start_server(data_dir, port, "cpu")
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        with sync_playwright() as pw:
            chromium = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium")
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=FLAGS + os.environ.get("CHROMIUM_GPU_FLAGS", "").split())
            page = browser.new_page(base_url=base)
            page.goto("/?tab=transformer" + ("&backend=reference" if a.backend == "reference" else ""))
            page.wait_for_function("() => window.playground !== undefined", timeout=180_000)
            page.evaluate("() => window.playground.ready")
            adapter = page.evaluate("() => window.playground.info.adapter || null")
            for spec in a.runs.split(","):
                preset, steps, batch = spec.split(":")
                page.select_option("#tf-preset", preset)
                page.wait_for_function("() => document.querySelector('#tf-size').textContent.includes('parameters')",
                                       timeout=60_000)
                page.fill("#tf-steps", steps)
                page.dispatch_event("#tf-steps", "change")
                page.fill("#tf-batch_size", batch)
                page.dispatch_event("#tf-batch_size", "change")
                est, text = settled_estimate(page, steps)
                t0 = time.perf_counter()
                page.click("#tf-train")
                page.wait_for_function(
                    "() => /^(Done|Training failed|Stopped)/.test(document.querySelector('#tf-status').textContent)",
                    timeout=3_600_000)
                wall = time.perf_counter() - t0
                status = page.locator("#tf-status").inner_text()
                runs = httpx.get(f"{base}/api/runs", params={"kind": "transformer"}).json()["runs"]
                run = httpx.get(f"{base}/api/runs/{runs[0]['id']}").json()
                t = run["timings"]
                row = {"run": spec, "estimate_s": est, "estimate": text, "wall_s": wall, "total_s": t.get("total"),
                       "step_s": t.get("step"), "setup_s": t.get("setup"), "eval_s": t.get("eval"),
                       "live_sample_s": t.get("live_sample"), "ratio": wall / est if est else None,
                       "status": status.splitlines()[0]}
                rows.append(row)
                print(json.dumps(row))
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    if a.out:
        write_report({"runs": a.runs, "backend": a.backend, "adapter": adapter, "rows": rows}, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
