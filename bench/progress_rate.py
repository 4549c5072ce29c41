"""How often the page hears of a job's progress while it trains (issue 12: at least twice a
second, the loss at least every second): a forest and a transformer through
`window.playground.run` in headless Chromium, every progress message timed as it reaches the
page. Reports, for the training phase (the forest's levels; the transformer's steps), the
number of updates and the gaps between them (median, 95th percentile, largest), and the same
from the click to the end.

    python -m bench.progress_rate [--forest JSON] [--transformer JSON] [--out FILE.json]

Headless Chromium on this machine (SwiftShader unless CHROMIUM_GPU_FLAGS says otherwise).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from .__main__ import FLAGS, free_port, start_server

FOREST = {"kind": "random_forest", "dataset": "synthetic:friedman1?n_samples=20000&seed=3", "target": "y",
          "params": {"n_estimators": 40, "max_depth": 12, "random_state": 0}, "split": {"test_size": 0.2, "seed": 42}}
TRANSFORMER = {"kind": "transformer", "text": "shakespeare",
               "params": {"preset": "tiny", "steps": 60, "batch_size": 4, "seed": 1, "sample_chars": 0}}

TIMED = """async (job) => {
    const t0 = performance.now(), seen = [];
    await window.playground.run(job, { onProgress: (p) => seen.push({ t: (performance.now() - t0) / 1000,
        stage: p.stage || '', level: p.level || null, step: p.step ?? null, losses: (p.losses || []).length }) });
    return { total: (performance.now() - t0) / 1000, seen };
}"""


def gaps(times: list[float]) -> dict:
    d = sorted(b - a for a, b in zip(times, times[1:]))
    if not d:
        return {"updates": len(times), "median_s": None, "p95_s": None, "max_s": None}
    return {"updates": len(times), "median_s": round(statistics.median(d), 3),
            "p95_s": round(d[min(len(d) - 1, int(0.95 * len(d)))], 3), "max_s": round(d[-1], 3)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--forest", default=json.dumps(FOREST))
    p.add_argument("--transformer", default=json.dumps(TRANSFORMER))
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    from playwright.sync_api import sync_playwright
    data_dir = Path(tempfile.mkdtemp())
    port = free_port()
    server = start_server(data_dir, port, "cpu")
    result = {}
    try:
        with sync_playwright() as pw:
            chromium = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium")
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=FLAGS + os.environ.get("CHROMIUM_GPU_FLAGS", "").split())
            page = browser.new_page(base_url=f"http://127.0.0.1:{port}")
            page.goto("/")
            page.wait_for_function("() => window.playground !== undefined", timeout=180_000)
            page.evaluate("() => window.playground.ready")
            result["adapter"] = page.evaluate("() => window.playground.info.adapter || null")
            for name, job, training in (("forest", json.loads(a.forest), lambda s: s["level"] is not None),
                                        ("transformer", json.loads(a.transformer), lambda s: s["stage"] == "training")):
                run = page.evaluate(TIMED, job)
                seen = run["seen"]
                train = [s["t"] for s in seen if training(s)]
                result[name] = {"job": job, "total_s": round(run["total"], 3), "all": gaps([s["t"] for s in seen]),
                                "training": gaps(train),
                                "training_span_s": round(train[-1] - train[0], 3) if train else 0}
                if name == "transformer":
                    result[name]["losses_per_update"] = [s["losses"] for s in seen if training(s)][:20]
                print(name, json.dumps(result[name]))
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
