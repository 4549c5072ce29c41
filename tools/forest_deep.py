"""Where a forest at scikit-learn's defaults (max_depth None) spends its levels, counted and timed
on the native backend (lavapipe here), for issue 34's three defaults jobs scaled to this machine.

Two fits a job, the same forest each time:
- counted: every plan run alone; before a level's plan, its slots are read and counted (open,
  BUILT, SMALL, derived) with the rows of the built ones, so the histogram words the level
  clears, builds, derives and scans are counted, not timed; with them the dispatches and
  workgroups each level launches, the submissions, and the readbacks the host waits on with
  nothing queued behind them (`idle reads`: on a GPU each costs a round trip of idle GPU; on the
  H200 in Chromium about 5 ms, bench/results/2026-11-28-h200-ship.md's defaults profile: levels
  4.50 s against a GPU span of 2.40 s over about 430 deep-level submissions);
- timed: the fit as it runs (fit, levels), then with `--profile` each kernel's time (the wall
  clock, a dispatch at a time: relative costs only).

    PYTHONPATH=. python tools/forest_deep.py [--jobs friedman1,blobs,regression:4] [--trees 20] [--json F]
        [--max-depth D]  (the same jobs at a bounded depth: their passes and dispatches, for comparison)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict

from py_core.data import prepare
from py_core.forest import RandomForestClassifier, RandomForestRegressor, builder
from py_core.gpu import get_backend
from py_core.gpu.backend import Dispatch
from py_core.jobs import synthetic_table
from py_core.kernels.forest import BUILT, MSE, OPEN, SMALL

# issue 34's defaults jobs (H200: 200k x 10, 300k x 30, 1M x 20 rows, 100 trees), a tenth the rows
JOBS = {
    "friedman1": ("synthetic:friedman1?n_samples=25000&n_features=10&seed=0", False),
    "blobs": ("synthetic:blobs?n_samples=37500&n_features=30&centers=4&cluster_std=12&seed=0", True),
    "regression": ("synthetic:regression?n_samples=125000&n_features=20&n_informative=10&noise=10&seed=0",
                   False),
}


class Counter:
    """Wraps a backend's run and reads: per level (a plan's ops labelled KERNEL@LEVEL) its
    dispatches, workgroups and slot counts; submissions; reads and idle reads."""

    def __init__(self, b, count_slots: bool):
        self.b, self.count_slots = b, count_slots
        self.levels = defaultdict(lambda: defaultdict(int))
        self.totals = defaultdict(int)
        self.grower = None
        run, read, read_soon = b.run, b.read, b.read_soon
        self.read = read  # its own reads (the slots) go uncounted

        async def counted_run(plan, repeat=1):
            plans = list(plan) if isinstance(plan, (list, tuple)) else [plan]
            for p in plans:
                self.totals["submissions"] += 1
                if self.count_slots:
                    await self._slots(p)
                    await run(p, repeat)
                    await b.finish()
                else:
                    self._ops(p)
            if not self.count_slots:
                await run(plans, repeat)

        async def counted_read(buf, n=None):
            if self.grower is not None and buf is self.grower.meta:  # (a snapshot: read_soon's own read)
                self.totals["reads"] += 1
                self.totals["idle reads"] += 1  # nothing submitted between its issue and its wait
            return await read(buf, n)

        def counted_soon(parts, js=False):
            if not self._sizes(parts[0][0]):
                return read_soon(parts, js)
            self.totals["reads"] += 1
            at = self.totals["submissions"]
            fut = read_soon(parts, js)

            counter = self

            class Read:  # checks, when the fit awaits it, whether anything was queued since
                def __await__(self):
                    if counter.totals["submissions"] == at:
                        counter.totals["idle reads"] += 1
                    return fut.__await__()
            return Read()

        b.run, b.read, b.read_soon = counted_run, counted_read, counted_soon

    def _sizes(self, buf) -> bool:
        """Is buf the trees' sizes and open pairs (meta, or a level's snapshot of it)? The reads
        the levels wait on (the forest's own readback at the end is not counted)."""
        g = self.grower
        return g is not None and (buf is g.meta or any(buf is x for x in getattr(g, "snap", ())))

    def _ops(self, plan) -> int | None:
        """Counts a plan's dispatches and workgroups by level; returns its level (None: not one)."""
        level = None
        for i, op in enumerate(plan.ops):
            if not isinstance(op, Dispatch):
                continue
            name, _, e = plan.label(i).partition(builder.LEVEL_MARK)
            wgs = op.grid[0] * op.grid[1] * op.grid[2]
            self.totals["dispatches"] += 1
            self.totals["workgroups"] += wgs
            if e:
                level = int(e)
                self.levels[level]["dispatches"] += 1
                self.levels[level]["workgroups"] += wgs
                self.levels[level]["wg " + name.split(".")[-1]] += wgs
        return level

    async def _slots(self, plan) -> None:
        """A level's slots as its plan starts: open, built, SMALL and derived ones, the rows the
        built ones add (hist_build's atomics: a row and feature each) and the histogram words."""
        e = self._ops(plan)
        g = self.grower
        if e is None or g is None:
            return
        await self.b.finish()
        z, F = g.z, g.F
        slots, nodes = await self.read(g.slots[e % 2]), await self.read(g.nodes)
        words = z.NB * z.C  # a slot's histogram
        mf = min(g.spec.max_features, F)
        c = self.levels[e]
        lanes = z.C - 1 if g.spec.crit == MSE else z.C  # split_small's passes over a node's rows
        flags = slots[1::4]
        for i in [i for i, f in enumerate(flags) if f & (OPEN | BUILT)]:  # i: t * S + s
            f = flags[i]
            rows = g.n if e == 0 else nodes[(i // z.S * z.NC + slots[4 * i]) * (4 + z.C) + 4 + z.C - 1]
            if f & BUILT:
                c["built"] += 1
                c["words cleared"] += words
                c["atomics"] += rows * F * (4 if g.spec.crit == MSE else 2)
            if not f & OPEN:
                continue
            c["open"] += 1
            if f & SMALL:  # split_small: at most rows x rows x (lanes + 1) steps a scanned feature
                c["small"] += 1
                c["row steps"] += rows * rows * (lanes + 1) * mf
            else:
                c["words scanned"] += words * mf // F  # the scanned features' bins
                if not f & BUILT:
                    c["derived"] += 1
                    c["words derived"] += words


async def fit(name: str, trees: int, count: bool, profile: bool, max_depth: int | None = None) -> dict:
    dataset, classes = JOBS[name]
    p = prepare(synthetic_table(dataset), "y", test_size=0.2, seed=42)
    y = [p.info["classes"][v] for v in p.y_train] if classes else p.y_train
    F = len(p.X_train) // len(y)
    b = get_backend("native")
    counter = Counter(b, count)
    grow = builder.Grower._tree_buffers

    def keep(grower):  # the fit's grower, for its buffers and sizes
        counter.grower = grower
        return grow(grower)
    builder.Grower._tree_buffers = keep
    model = (RandomForestClassifier if classes else RandomForestRegressor)(trees, random_state=0, backend=b,
                                                                           max_depth=max_depth)
    t0 = time.perf_counter()
    try:
        await model.fit(p.X_train, y, n_features=F, profile=profile)
    finally:
        builder.Grower._tree_buffers = grow
        b.run, b.read, b.read_soon = type(b).run.__get__(b), type(b).read.__get__(b), type(b).read_soon.__get__(b)
    t = model.timings_
    out = {"job": name, "rows": len(y), "features": F, "trees": trees, "nodes": sum(model._forest.counts),
           "fit_s": round(time.perf_counter() - t0, 3), "levels_s": round(t["levels"], 3),
           **counter.totals}
    if count:
        out["levels"] = {e: dict(c) for e, c in sorted(counter.levels.items())}
    if profile:
        out["kernels"] = {k[2:]: round(v, 3) for k, v in sorted(t.items(), key=lambda kv: -kv[1])
                          if k.startswith("k_")}
    return out


def table(runs: list[dict]) -> str:
    """The counted fits as a Markdown table a job (totals), then each job's deep levels."""
    keys = ("built", "small", "derived", "words cleared", "words derived", "words scanned", "atomics",
            "row steps")
    lines = ["| job | trees | nodes | levels | submissions | dispatches | workgroups | level reads | idle | "
             + " | ".join(keys) + " |", "|" + " --- |" * (9 + len(keys))]
    for r in runs:
        lv = r.get("levels", {})
        sums = [sum(c.get(k, 0) for c in lv.values()) for k in keys]
        lines.append(f"| {r['job']} {r['rows']} x {r['features']} | {r['trees']} | {r['nodes']} | {len(lv)} | "
                     f"{r['submissions']} | {r['dispatches']} | {r['workgroups']} | {r['reads']} | "
                     f"{r['idle reads']} | " + " | ".join(f"{v:,}" for v in sums) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default=",".join(JOBS), help="NAME or NAME:TREES, comma-separated")
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--profile", action="store_true", help="also a profiled fit (k_ times)")
    ap.add_argument("--json", help="write every fit's figures here")
    ap.add_argument("--no-count", dest="count", action="store_false", help="the timed fits alone")
    ap.add_argument("--max-depth", type=int, help="grow the jobs to this depth (default: scikit-learn's None)")
    a = ap.parse_args()
    runs = []
    for job in a.jobs.split(","):  # NAME, or NAME:TREES
        name, _, trees = job.partition(":")
        trees = int(trees or a.trees)
        timed = asyncio.run(fit(name, trees, False, False, a.max_depth))
        counted = asyncio.run(fit(name, trees, True, False, a.max_depth)) if a.count else dict(timed)
        counted.update(fit_s=timed["fit_s"], levels_s=timed["levels_s"], timed_idle_reads=timed["idle reads"])
        if a.profile:
            counted["kernels"] = asyncio.run(fit(name, trees, False, True, a.max_depth))["kernels"]
        runs.append(counted)
        print(json.dumps({k: v for k, v in counted.items() if k != "levels"}), flush=True)
    print(table(runs))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(runs, fh, indent=1)


if __name__ == "__main__":
    main()
