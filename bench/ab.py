"""Pooled figures of A/B calls on a lent GPU (tools/gpu/ab_suite.sh): the runs kept under a raw
directory, one folder a call (`call1`, `call2`, ...), in it one a build's turn (`new-1`, `head-2`,
...), are grouped by build and job and summed up: the fit's median (min-max, n), the medians of
its phases, and the results each build gave (the same forest gives the same figure).

    python -m bench.ab bench/results/raw-2026-11-27-h200-ahead --calls 3,4,6

The raw results are packed: `tar xJf raw-2026-11-27-h200-ahead.tar.xz` in bench/results first.

Profiled runs (params "profile") are left out: their timestamps slow the fit.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from .report import _headline, _stats

PHASES = ("binning", "levels", "readback")


def job_name(run: dict) -> str:
    """A forest job's data set and the parameters that set its size."""
    cfg = run["config"]
    data = cfg["dataset"].split(":", 1)[-1]
    params = {k: v for k, v in cfg.get("params", {}).items() if k not in ("random_state", "profile")}
    return f"{data} {json.dumps(params, sort_keys=True)}"


def pooled(root: Path, calls: list[str] | None = None) -> dict:
    """{(build, job): {"fit": stats, phase: median, "results": sorted set}} over the calls named
    (all where None)."""
    groups: dict = defaultdict(list)
    for call in sorted(p for p in root.iterdir() if p.is_dir()):
        if calls and call.name.removeprefix("call") not in calls:
            continue
        for turn in sorted(p for p in call.iterdir() if p.is_dir()):
            build = turn.name.rsplit("-", 1)[0]
            for dump in turn.glob("runs-*.json"):
                for run in json.loads(dump.read_text())["runs"]:
                    if run["kind"] == "random_forest" and not run["config"].get("params", {}).get("profile"):
                        groups[(build, job_name(run))].append(run)
    out = {}
    for key, runs in groups.items():
        row = {"fit": _stats([r["timings"]["fit"] for r in runs])}
        for phase in PHASES:
            row[phase] = _stats([r["timings"].get(phase) for r in runs]).get("median")
        row["results"] = sorted({_headline(r["metrics"])[1] for r in runs})
        out[key] = row
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="the raw directory: call1, call2, ... below it")
    ap.add_argument("--calls", default="", help="comma-separated call numbers (default: all)")
    a = ap.parse_args(argv)
    rows = pooled(a.root, [c for c in a.calls.split(",") if c] or None)
    print("| job | build | fit, s: median (min-max, n) | binning | levels | readback | results |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (build, job), row in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        f = row["fit"]
        phases = " | ".join(f"{row[p]:.3f}" if row[p] is not None else "" for p in PHASES)
        print(f"| {job} | {build} | {f['median']:.3f} ({f['min']:.3f}-{f['max']:.3f}, {f['n']}) | "
              f"{phases} | {', '.join(f'{v:.6g}' for v in row['results'])} |")


if __name__ == "__main__":
    main()
