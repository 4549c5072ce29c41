"""The peers a practitioner would pick instead, on the jobs of a suite: each job of the suite
whose kind has comparison runners, run by them (a forest: scikit-learn on every core, XGBoost's
forest mode on the GPU and on the CPU, LightGBM's rf; gradient boosting: HistGradientBoosting,
XGBoost hist on the GPU and the CPU, LightGBM gbdt) on the page's own split and features
(server/runners), with fit time and metric; the tab's figures come from the same suite run in the
browser.

    python -m bench.peers --suite forest-classes [--runners sklearn,xgboost,lightgbm]
        [--devices cuda,cpu] [--only WORD,...] [--out DIR]

Writes DIR/peers.json and DIR/peers.md (a table: job, runner, device, fit s, predict s, metric).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from server.runners import execute, runners_for

ROOT = Path(__file__).resolve().parent.parent
HEADLINE = ("mse", "accuracy")


def jobs_of(suite: str, only: str | None) -> list:
    spec = json.loads((ROOT / "web" / "suites" / f"{suite}.json").read_text())
    out = []
    for entry in spec["jobs"]:
        job, label = entry["job"], entry.get("label", "")
        if not runners_for(job["kind"]) or job.get("params", {}).get("profile"):
            continue
        if only and not any(w in label for w in only.split(",")):
            continue
        if not any(label == seen for seen, _ in out):
            out.append((label, job))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="forest-classes")
    p.add_argument("--runners", default="sklearn,xgboost,lightgbm")
    p.add_argument("--devices", default="cuda,cpu", help="devices tried for each runner, in order")
    p.add_argument("--only", default=None)
    p.add_argument("--out", type=Path, default=Path("bench/out"))
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    data_dir = tempfile.mkdtemp()
    from server.builtins import export_builtins
    export_builtins(data_dir)  # diabetes, iris, ... as the server keeps them
    for label, job in jobs_of(a.suite, a.only):
        for runner in a.runners.split(","):
            seen_devices = set()
            for device in a.devices.split(","):
                t0 = time.perf_counter()
                got = execute(runner, job, data_dir, device)
                wall = time.perf_counter() - t0
                res = got.get("result") or {}
                ran_on = res.get("device") or device
                if ran_on in seen_devices:  # the runner fell back to a device already measured
                    continue
                seen_devices.add(ran_on)
                m, t = res.get("metrics") or {}, res.get("timings") or {}
                key = next((k for k in HEADLINE if k in m), None)
                row = {"job": label, "runner": runner, "asked": device, "device": ran_on,
                       "hardware": res.get("hardware"), "status": got["status"],
                       "error": got.get("error"), "fit_s": t.get("fit"), "predict_s": t.get("predict"),
                       "metric": key, "value": m.get(key) if key else None, "wall_s": wall,
                       "versions": res.get("versions"), "notes": res.get("notes")}
                rows.append(row)
                print(json.dumps({k: row[k] for k in ("job", "runner", "device", "status", "fit_s", "metric", "value", "error")}),
                      flush=True)
    (a.out / "peers.json").write_text(json.dumps(rows, indent=1))
    lines = ["| job | runner | device | fit s | predict s | metric |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        fit = f"{r['fit_s']:.2f}" if r["fit_s"] is not None else r["status"]
        pred = f"{r['predict_s']:.2f}" if r["predict_s"] is not None else ""
        val = f"{r['metric']} {r['value']:.4g}" if r["value"] is not None else (r["error"] or "")[:80]
        lines.append(f"| {r['job']} | {r['runner']} | {r['device']} ({r['hardware'] or ''}) | {fit} | {pred} | {val} |")
    (a.out / "peers.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
