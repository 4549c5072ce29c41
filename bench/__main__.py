"""`make bench SUITE=quick|full`: start the server, drive headless Chromium through a suite with
Playwright (`window.playground.run`), wait for the server's comparison runs, write the report.

Suites are `web/suites/NAME.json`, the same files the page runs by itself with `/?suite=NAME`
(how the lent GPU machine runs them, where Playwright does not fit beside the browser: see
tools/gpu/run_suite.sh, then `python -m bench.report --runs runs.json`).

Fair timing: each job runs `warmup` times unposted first, then `repeat` timed runs; the page's
runners drain the GPU queue before reading a clock; Pyodide start-up and data loading are
reported apart from training (`startup`, `timings.load`).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from .report import environment, write_report

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--enable-unsafe-webgpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
FINAL = {"done", "failed", "unavailable", "skipped"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, port: int, device: str) -> subprocess.Popen:
    log = open(data_dir / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "server", "--port", str(port), "--data-dir", str(data_dir),
                             "--device", device], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(240):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.25)
    raise SystemExit(f"the server did not start: {(data_dir / 'server.log').read_text()[-2000:]}")


def upload_generated(base: str, spec: dict, folder: Path) -> str:
    """Writes a generated data set as CSV (numpy, fast), uploads it, returns its id."""
    import numpy as np
    rng = np.random.default_rng(spec.get("seed", 0))
    n, f = spec["rows"], spec["features"]
    X = rng.standard_normal((n, f))
    y = X[:, : max(1, f // 2)] @ rng.uniform(1, 100, max(1, f // 2)) + rng.normal(0, 10, n)
    path = folder / spec["name"]
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt=spec.get("format", "%.4g"),
               header=",".join([f"x{i}" for i in range(f)] + ["y"]), comments="")
    with open(path, "rb") as fh:
        res = httpx.post(f"{base}/api/datasets", files={"file": (spec["name"], fh, "text/csv")}, timeout=600)
    res.raise_for_status()
    print(f"uploaded {spec['name']}: {path.stat().st_size / 2**20:.0f} MB, {n} rows")
    return res.json()["id"]


def wait_comparisons(base: str, run_id: str, timeout_s: float) -> list:
    """The server's comparison runs of `run_id`, once each has finished (or the time is up)."""
    deadline = time.time() + timeout_s
    while True:
        res = httpx.get(f"{base}/api/runs/{run_id}/comparisons", timeout=10)
        if res.status_code == 404:
            return []
        comps = res.json().get("comparisons", [])
        if all(c.get("status") in FINAL for c in comps) or time.time() > deadline:
            return comps
        time.sleep(1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="quick", help="web/suites/NAME.json (quick: CI, full: the issues' figures)")
    ap.add_argument("--out", type=Path, help="report folder (default bench/out/SUITE-DATE)")
    ap.add_argument("--device", default="auto", help="the server's device for its comparison runs")
    ap.add_argument("--comparison-timeout", type=float, default=1800, help="seconds to wait for each run's comparisons")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM_BIN") or shutil.which("chromium"))
    ap.add_argument("--backend", choices=["webgpu", "reference"], default="webgpu",
                    help="reference: the page's CPU fallback (plain Python in the tab), to show the gap")
    args = ap.parse_args(argv)
    suite = json.loads((ROOT / "web" / "suites" / f"{args.suite}.json").read_text())
    out = args.out or ROOT / "bench" / "out" / f"{args.suite}-{args.backend}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright
    data_dir = Path(tempfile.mkdtemp(prefix="bench-data-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(data_dir, port, args.device)
    results, errors = [], []
    try:
        with sync_playwright() as p:
            flags = FLAGS + os.environ.get("CHROMIUM_GPU_FLAGS", "").split()
            browser = p.chromium.launch(executable_path=args.chromium, args=flags)
            page = browser.new_page()
            page.goto(base + ("/?backend=reference" if args.backend == "reference" else "/"))
            ready = page.evaluate("() => window.playground.ready")
            print(f"page ready: {ready['backend']} on {ready['adapter'].get('vendor')} "
                  f"{ready['adapter'].get('architecture')} (Pyodide {ready['timings']['pyodide']:.2f} s)")
            for i, entry in enumerate(suite["jobs"]):
                label = entry.get("label") or f"{entry['job']['kind']} {i + 1}"
                runs = []
                try:
                    if "upload" in entry:  # a generated CSV the job reads as "$upload"
                        entry = {**entry, "job": {**entry["job"], "dataset": upload_generated(base, entry["upload"], data_dir)}}
                    for w in range(entry.get("warmup", 1)):
                        print(f"{label}: warm-up {w + 1}")
                        page.evaluate("(job) => window.playground.compute(job).done.then(() => null)",
                                      entry.get("warmup_job", entry["job"]))
                    # The page's main thread must stay responsive while the worker computes: the
                    # longest gap between animation frames during the timed runs says so.
                    page.evaluate("""() => { window.__gap = 0; let last = performance.now();
                        const tick = (t) => { window.__gap = Math.max(window.__gap, t - last); last = t;
                                              if (!window.__gapStop) requestAnimationFrame(tick); };
                        window.__gapStop = false; requestAnimationFrame(tick); }""")
                    for r in range(entry.get("repeat", 1)):
                        t0 = time.perf_counter()
                        run = page.evaluate("([job, extra]) => window.playground.run(job, {extra})",
                                            [entry["job"], {"suite": suite["name"], "label": label, "rep": r}])
                        run.pop("result", None)
                        runs.append(run)
                        # The server's runs of this job share the machine: let them finish
                        # before the next timed run, so they never overlap a clock.
                        wait_comparisons(base, run["id"], args.comparison_timeout)
                        print(f"{label}: run {r + 1}/{entry.get('repeat', 1)} in {time.perf_counter() - t0:.2f} s "
                              f"(timings {json.dumps({k: round(v, 4) for k, v in run['timings'].items() if isinstance(v, (int, float))})})")
                except Exception as exc:  # a failed job is reported, and the suite goes on
                    errors.append({"label": label, "message": str(exc).splitlines()[0][:500]})
                    print(f"{label}: FAILED {errors[-1]['message']}")
                gap = page.evaluate("() => { window.__gapStop = true; return window.__gap / 1000; }")
                comps = [wait_comparisons(base, r["id"], args.comparison_timeout) for r in runs]
                results.append({"label": label, "job": entry["job"], "runs": runs, "comparisons": comps,
                                "page_max_frame_gap_s": gap})
            env = environment(ready, browser.version)
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
    report = {"suite": suite["name"], "description": suite.get("description", ""),
              "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "env": env, "jobs": results, "errors": errors}
    paths = write_report(report, out)
    print("report:", ", ".join(str(p) for p in paths))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
