"""`python -m bench.first_click`: the first job in a fresh tab against the same job again (issue 34.2).

For each of `--tabs` fresh browsers (a new Chromium, a new profile: nothing compiled, nothing in
Dawn's caches), opens the page, waits for "ready" and then `--delay` seconds (0: the click comes
at once, as a benchmark's does; a person takes seconds to pick a file and press Train), runs the
job `--runs` times one after another in that tab and prints, per run, the seconds the page waited
for it (`compute`'s promise, data loading included) and the job's own timings: `fit`, `compile`
(seconds the job waited on pipeline compilation) and the pipelines the tab started compiling
during the job (`pipelines_started`: 0 when everything was compiled ahead). The ratio of the
first run to the second is the figure: 1.0 when the first click is as fast as the tenth.

    python -m bench.first_click                                   # diabetes, 200 trees, depth 16
    python -m bench.first_click --job transformer --tabs 2 --md out.md
    python -m bench.first_click --suite-runs DIR     # the lent GPU's runs (tools/gpu/first_click.sh)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from .__main__ import FLAGS, free_port, start_server

JOBS = {
    "forest": {"kind": "random_forest", "dataset": "diabetes", "target": "target",
               "params": {"n_estimators": 200, "max_depth": 16, "random_state": 0},
               "split": {"test_size": 0.2, "seed": 42}},
    # the same data, a forest small enough for SwiftShader (where 200 trees of depth 16 take 90 s)
    "forest-small": {"kind": "random_forest", "dataset": "diabetes", "target": "target",
                     "params": {"n_estimators": 10, "max_depth": 8, "random_state": 0},
                     "split": {"test_size": 0.2, "seed": 42}},
    "regression": {"kind": "random_forest", "target": "y",
                   "dataset": "synthetic:regression?n_samples=200000&n_features=20&n_informative=10&noise=10&seed=0",
                   "params": {"n_estimators": 100, "max_depth": 12, "max_features": 0.33, "random_state": 0},
                   "split": {"test_size": 0.2, "seed": 42}},
    "transformer": {"kind": "transformer", "text": "shakespeare",
                    "params": {"preset": "tiny", "steps": 20, "eval_interval": 20, "eval_steps": 2,
                               "sample_chars": 10, "seed": 1}},
    "transformer-small": {"kind": "transformer", "text": "shakespeare",
                          "params": {"preset": "tiny", "n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 16,
                                     "batch_size": 2, "steps": 10, "eval_interval": 10, "eval_steps": 1,
                                     "sample_chars": 4, "seed": 1}},
}

# In the page: ready, the delay, then the job `runs` times; what each took and reported.
SCRIPT = """async ([job, runs, delay, warm]) => {
  const info = await window.playground.ready;
  const ready = performance.now() / 1000;
  if (warm) window.playground.warm?.(job.kind, job.params);
  await new Promise((r) => setTimeout(r, delay * 1000));
  const out = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const res = await window.playground.compute(job).done;
    out.push({ wall: (performance.now() - t0) / 1000, timings: res.timings });
  }
  return { ready, startup: info.timings, adapter: info.adapter, runs: out };
}"""


def one_tab(playwright, chromium: str, base: str, job: dict, runs: int, delay: float, warm: bool) -> dict:
    profile = tempfile.mkdtemp(prefix="first-click-")
    flags = FLAGS + os.environ.get("CHROMIUM_GPU_FLAGS", "").split()
    try:
        ctx = playwright.chromium.launch_persistent_context(profile, executable_path=chromium, args=flags,
                                                            headless=True)
        try:
            page = ctx.new_page()
            page.set_default_timeout(900_000)
            page.goto(base + "/")
            page.wait_for_function("() => window.playground !== undefined")
            return page.evaluate(SCRIPT, [job, runs, delay, warm])
        finally:
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def table(tabs: list[dict], runs: int) -> list[str]:
    head = ["tab", "ready s (Pyodide, py_core)"] + [f"run {i + 1} s (fit, compile waited, pipelines started)" for i in range(runs)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for t, tab in enumerate(tabs):
        st = tab.get("startup") or {}
        cells = [str(t + 1), f"{tab['ready']:.2f} ({_num(st.get('pyodide'))}, {_num(st.get('py_core'))})"]
        for r in tab["runs"]:
            tm = r["timings"]
            fit = tm.get("fit", tm.get("train"))
            cells.append(f"{r['wall']:.2f} ({_num(fit)}, {_num(tm.get('compile'))}, "
                         f"{tm.get('pipelines_started', '-')})")
        lines.append("| " + " | ".join(cells) + " |")
    firsts = [tab["runs"][0]["wall"] for tab in tabs if tab["runs"]]
    seconds = [tab["runs"][1]["wall"] for tab in tabs if len(tab["runs"]) > 1]
    if not firsts:
        lines += ["", f"ready (median over tabs): {statistics.median(t['ready'] for t in tabs):.2f} s"]
    if seconds:
        lines += ["", f"first / second run (medians over tabs): {statistics.median(firsts):.2f} s / "
                      f"{statistics.median(seconds):.2f} s = {statistics.median(firsts) / statistics.median(seconds):.2f}x; "
                      f"ready {statistics.median(t['ready'] for t in tabs):.2f} s"]
    return lines


def suite_table(folder: Path) -> list[str]:
    """The table of tools/gpu/first_click.sh's runs: each runs-first-click-*.json under `folder`
    is one fresh browser (its path names the job's word and the side, new-I or old-I), its runs
    in order (extra.rep: 0 is the first click). Seconds are the job's total in the worker."""
    lines = ["| job | side | run 1 s (compile waited, pipelines started) | later runs s | run 1 / later |",
             "| --- | --- | --- | --- | --- |"]
    for path in sorted(folder.rglob("runs-first-click*.json")):
        runs = [r for r in json.loads(path.read_text())["runs"] if r["kind"] in ("random_forest", "transformer")]
        runs.sort(key=lambda r: (r.get("extra") or {}).get("rep", 0))
        if not runs:
            continue
        total = [r["timings"]["total"] for r in runs]
        t = runs[0]["timings"]
        later = statistics.median(total[1:]) if len(total) > 1 else None
        side = next((p for p in path.parts if p.startswith(("new-", "old-"))), "?")
        lines.append(f"| {(runs[0].get('extra') or {}).get('label', '?')} | {side} | {total[0]:.3f} "
                     f"({_num(t.get('compile'))}, {t.get('pipelines_started', '-')}) | "
                     f"{', '.join(f'{v:.3f}' for v in total[1:])} | "
                     f"{'-' if not later else f'{total[0] / later:.2f}x'} |")
    return lines


def _num(v) -> str:
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", choices=sorted(JOBS), default="forest")
    ap.add_argument("--tabs", type=int, default=3, help="fresh browsers, one after another")
    ap.add_argument("--runs", type=int, default=2, help="runs of the job in each tab")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds from ready to the first click")
    ap.add_argument("--warm", action="store_true",
                    help="the job's kernels warmed at ready, as the Transformer tab does when it shows a config")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM_BIN") or shutil.which("chromium"))
    ap.add_argument("--md", type=Path, help="append the table to this Markdown file")
    ap.add_argument("--suite-runs", type=Path, help="tabulate tools/gpu/first_click.sh's runs under this folder")
    args = ap.parse_args(argv)
    if args.suite_runs:
        print("\n".join(suite_table(args.suite_runs)))
        return 0
    from playwright.sync_api import sync_playwright
    data = Path(tempfile.mkdtemp(prefix="first-click-data-"))
    port = free_port()
    server = start_server(data, port, "cpu")
    tabs = []
    try:
        with sync_playwright() as p:
            for t in range(args.tabs):
                tabs.append(one_tab(p, args.chromium, f"http://127.0.0.1:{port}", JOBS[args.job], args.runs,
                                    args.delay, args.warm))
                print(json.dumps(tabs[-1]["runs"], default=str)[:400], file=sys.stderr)
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(data, ignore_errors=True)
    adapter = tabs[0]["adapter"] if tabs else {}
    lines = [f"### {args.job}: {json.dumps(JOBS[args.job])}", "",
             f"adapter {adapter.get('vendor')} {adapter.get('architecture')}, {args.tabs} fresh tabs, "
             f"first click {args.delay:g} s after ready, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             *table(tabs, args.runs), ""]
    print("\n".join(lines))
    if args.md:
        with open(args.md, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
