"""The benchmark report: `report.json` (every figure and its environment), `report.md` (tables),
and PNG charts (time per job and backend, accuracy side by side, loss curves browser against
PyTorch). Also builds a report from a runs dump made on the lent GPU machine:

    python -m bench.report --runs runs-full.json --out bench/out/gpu-full
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The headline metric of each kind, and whether larger is better.
METRICS = [("mse", False), ("accuracy", True), ("val_loss", False), ("mb_per_s", True)]
TIME_KEYS = {"random_forest": "fit", "transformer": "step", "selftest": "kernels", "dataset_load": "load"}


def _cmd(args) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=10, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment(ready: dict | None = None, browser_version: str | None = None) -> dict:
    """Where the figures were taken: adapter, browser, GPU and driver, CPU, versions, commit."""
    versions = {"python": platform.python_version()}
    for pkg in ("torch", "sklearn", "numpy", "wgpu", "playwright"):
        try:
            versions[pkg] = __import__(pkg).__version__
        except Exception:  # not installed here
            pass
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"adapter": (ready or {}).get("adapter"), "backend": (ready or {}).get("backend"),
            "features": (ready or {}).get("features"), "startup": (ready or {}).get("timings"),
            "browser": browser_version,
            "gpu": _cmd(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]),
            "cpu": cpu, "cpu_cores": os.cpu_count(), "versions": versions,
            "commit": _cmd(["git", "rev-parse", "--short", "HEAD"]), "os": platform.platform()}


def _headline(metrics: dict):
    for key, higher in METRICS:
        if isinstance(metrics.get(key), (int, float)):
            return key, metrics[key], higher
    return None, None, None


def _stats(values: list[float]) -> dict:
    values = [v for v in values if isinstance(v, (int, float))]
    if not values:
        return {}
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarize(report: dict) -> list[dict]:
    """One row per job and backend (the browser's, then each server runner)."""
    rows = []
    for job in report["jobs"]:
        runs = job["runs"]
        if not runs:
            continue
        kind = job["job"]["kind"]
        tkey = TIME_KEYS.get(kind, "total")
        key, _, higher = _headline(runs[0].get("metrics", {}))
        browser_time = _stats([r["timings"].get(tkey) for r in runs])
        gap = job.get("page_max_frame_gap_s")
        rows.append({"label": job["label"], "kind": kind, "where": f"browser ({runs[0]['backend']})"
                     + (f", page's longest frame {gap * 1000:.0f} ms" if isinstance(gap, (int, float)) else ""),
                     "time_key": tkey, "time": browser_time,
                     "metric": key, "value": _stats([r["metrics"].get(key) for r in runs]).get("median") if key else None})
        by_runner: dict[str, list] = {}
        for comps in job.get("comparisons", []):
            for c in comps:
                by_runner.setdefault(c["runner"], []).append(c)
        for runner, comps in by_runner.items():
            done = [c for c in comps if c.get("status") == "done"]
            if not done:
                rows.append({"label": job["label"], "kind": kind, "where": runner, "time_key": tkey, "time": {},
                             "metric": key, "value": None, "note": (comps[0].get("error") or comps[0].get("status"))})
                continue
            t = _stats([(c.get("timings") or {}).get(tkey) for c in done])
            gap = None
            if kind == "transformer":  # the loss curves step by step: the largest relative gap
                mine = dict(map(tuple, runs[0]["metrics"].get("loss_curve", [])))
                theirs = dict(map(tuple, (done[0].get("metrics") or {}).get("loss_curve", [])))
                common = sorted(set(mine) & set(theirs))
                if common:
                    gap = max(abs(mine[k] - theirs[k]) / abs(theirs[k]) for k in common)
            rows.append({"label": job["label"], "kind": kind, "where": f"{runner} ({done[0].get('device', '')})",
                         "time_key": tkey, "time": t, "metric": key,
                         "value": _stats([(c.get("metrics") or {}).get(key) for c in done]).get("median") if key else None,
                         # > 1: the browser took less time than this runner
                         "ratio": (t["median"] / browser_time["median"]) if t and browser_time else None,
                         "curve_gap": gap})
    return rows


def _fmt(v, digits=4):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def markdown(report: dict, rows: list[dict]) -> str:
    env = report["env"]
    a = env.get("adapter") or {}
    lines = [f"# Benchmark `{report['suite']}`: {report['created']}", "",
             report.get("description", ""), "",
             f"- adapter: {a.get('vendor', '?')} {a.get('architecture', '')} "
             f"{'(software fallback)' if a.get('is_fallback_adapter') else ''} · backend {env.get('backend')}",
             f"- browser: {env.get('browser')} · GPU: {env.get('gpu') or 'none'} · CPU: {env.get('cpu')} ({env.get('cpu_cores')} cores)",
             f"- start-up: {json.dumps(env.get('startup'))} · commit {env.get('commit')} · versions {json.dumps(env.get('versions'))}",
             "", "| job | where | time (median, min–max, n) | metric | speed vs browser |", "|---|---|---|---|---|"]
    for r in rows:
        t = r["time"]
        tt = f"{r['time_key']} {_fmt(t['median'])} s ({_fmt(t['min'], 3)}–{_fmt(t['max'], 3)}, n={t['n']})" if t else (r.get("note") or "–")
        ratio = r.get("ratio")
        speed = "" if not ratio else (f"browser {ratio:.2f}× faster" if ratio >= 1 else f"server {1 / ratio:.2f}× faster")
        if r.get("curve_gap") is not None:
            speed += f"; loss curves differ by at most {r['curve_gap']:.2e} (relative)"
        lines.append(f"| {r['label']} | {r['where']} | {tt} | {r['metric'] or ''} {_fmt(r['value'])} | {speed} |")
    if report.get("errors"):
        lines += ["", "## Errors", *[f"- {e['label']}: {e['message']}" for e in report["errors"]]]
    return "\n".join(lines) + "\n"


def _bars(plt, rows: list[dict], values: list, **kw):
    """A horizontal bar a row, top to bottom in the rows' order: the browser's blue, the server's
    orange."""
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(rows) + 1.5))
    ax.barh([f"{r['label']} · {r['where']}" for r in rows], values,
            color=["#2f6fde" if r["where"].startswith("browser") else "#e07a1f" for r in rows], **kw)
    ax.invert_yaxis()
    return fig, ax


def _save(plt, fig, path: Path, paths: list[Path]) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)


def charts(report: dict, rows: list[dict], out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    timed = [r for r in rows if r["time"]]
    if timed:
        fig, ax = _bars(plt, timed, [r["time"]["median"] for r in timed],
                        xerr=[[r["time"]["median"] - r["time"]["min"] for r in timed],
                              [r["time"]["max"] - r["time"]["median"] for r in timed]])
        ax.set_xscale("log")
        ax.set_xlabel("seconds (median; bars show min–max)")
        ax.set_title(f"Time per job and backend ({report['suite']})")
        _save(plt, fig, out / "time.png", paths)
    scored = [r for r in rows if r["value"] is not None and r["metric"] in ("accuracy", "mse")]
    if scored:
        fig, ax = _bars(plt, scored, [r["value"] for r in scored])
        ax.set_xlabel("test metric (accuracy, or MSE for regression)")
        ax.set_title("Accuracy side by side")
        _save(plt, fig, out / "accuracy.png", paths)
    curves = []
    for job in report["jobs"]:
        if job["job"]["kind"] != "transformer" or not job["runs"]:
            continue
        curves.append((f"{job['label']} browser", job["runs"][0]["metrics"].get("loss_curve", [])))
        for comps in job.get("comparisons", [])[:1]:
            for c in comps:
                if c.get("status") == "done" and (c.get("metrics") or {}).get("loss_curve"):
                    curves.append((f"{job['label']} {c['runner']}", c["metrics"]["loss_curve"]))
    if curves:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for name, pts in curves:
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, linewidth=1.3)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        ax.legend()
        ax.set_title("Loss: browser against PyTorch")
        _save(plt, fig, out / "loss.png", paths)
    return paths


def write_report(report: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    rows = summarize(report)
    report["summary"] = rows
    (out / "report.json").write_text(json.dumps(report, indent=1))
    (out / "report.md").write_text(markdown(report, rows))
    return [out / "report.json", out / "report.md", *charts(report, rows, out)]


def from_runs_dump(dump: dict, env: dict | None = None) -> dict:
    """A report from the runs a self-driving page posted (tools/gpu/run_suite.sh's dump)."""
    runs = list(reversed(dump["runs"]))  # oldest first
    suite = next((r for r in runs if r["kind"] == "suite"), None)
    jobs: dict[str, dict] = {}
    for r in runs:
        extra = r.get("extra") or {}
        if r["kind"] == "suite" or "label" not in extra:
            continue
        j = jobs.setdefault(extra["label"], {"label": extra["label"], "job": r["config"], "runs": [], "comparisons": []})
        j["runs"].append(r)
        j["comparisons"].append((dump.get("comparisons") or {}).get(r["id"], []))
    first = next(iter(jobs.values()))["runs"][0] if jobs else {}
    base_env = {"adapter": first.get("adapter"), "backend": first.get("backend"),
                "features": (first.get("env") or {}).get("features"), "startup": (first.get("env") or {}).get("startup"),
                "browser": (first.get("env") or {}).get("user_agent")}
    return {"suite": (suite or {}).get("config", {}).get("suite", "?"), "description": "self-driven page (?suite=)",
            "created": (suite or first).get("created_at", ""), "env": {**base_env, **(env or {})},
            "jobs": list(jobs.values()), "errors": (suite or {}).get("metrics", {}).get("errors", [])}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.report")
    ap.add_argument("--runs", type=Path, required=True, help="a runs dump (GET /api/runs plus comparisons)")
    ap.add_argument("--env", type=Path, help="JSON of the machine's environment, written beside the dump")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    env = json.loads(args.env.read_text()) if args.env else None
    paths = write_report(from_runs_dump(json.loads(args.runs.read_text()), env), args.out)
    print("report:", ", ".join(map(str, paths)))


if __name__ == "__main__":
    main()
