"""How long a forest will take here, and whether the adapter can hold it, before Train.

A fit's time is counted in two kinds of work (`forest_work`):
- tree-levels (trees x the levels they grow): each costs the GPU a round of dispatches whatever
  the data, which is what small data pays for;
- cells (rows x features x the levels where rows are still in open nodes, a tree): each level's
  histograms touch every such cell, which is what large data pays for.
seconds = setup + level x tree-levels + cell x cells. The rates start from PRIOR, an adapter
class's measured figures, and are learned from the tab's own runs (`learn_rates`: the page keeps
the last SAMPLES measured runs on this adapter in localStorage): one run scales both rates by the
ratio it measured, so the same job is then estimated at what it took; runs of two shapes (small
and large data) separate the two rates by least squares.
"""
from __future__ import annotations

import math

from ..forest import RandomForestClassifier, RandomForestRegressor
from ..forest.sizes import check_fits, distinct_rows, size_text
from ..gpu import LimitError

# Seconds a tree-level, a cell, and the fit's fixed part (binning, the trees' readback), by
# adapter class:
# - software: SwiftShader on 2 cores (bench/results/2026-11-22-swiftshader-gap.md): 1M x 20, 2
#   trees x 12 levels, 33.3 s: 69 ns a cell; diabetes 200 trees at depth 16 (353 rows), 40.2 s,
#   about 3,000 tree-levels: 14 ms each; the page's diabetes at 8 x 6 fits in 1.3 s;
# - gpu: the H200 fit 1M x 20, 100 trees x 12 levels in 0.85 s (35 ps a cell); a laptop's GPU is
#   taken as ten times slower, a tree-level 2 ms;
# - cpu: the tab's Python path (the reference backend under Pyodide), two orders slower than
#   SwiftShader a cell.
PRIOR = {"gpu": {"level": 0.002, "cell": 3.5e-10, "setup": 0.3},
         "software": {"level": 0.014, "cell": 7e-8, "setup": 0.5},
         "cpu": {"level": 0.05, "cell": 2e-6, "setup": 0.5}}
SAMPLES = 8          # measured runs kept per adapter (the page's localStorage)
MINUTES = 60.0       # an estimate past this many seconds is warned about before Train
OPEN_LEVELS = 2      # levels past log2(leaves) where rows are still in open nodes (the trees are
                     # not balanced): deeper levels hold few rows, counted as tree-levels only


def forest_work(rows: int, features: int, params: dict, n_classes: int = 0) -> dict:
    """{"levels": tree-levels, "cells": row-feature-levels} of a forest on `rows` training rows
    and `features` features, with the forest's parameters (scikit-learn's names; n_classes 0 for
    regression). Raises ValueError naming a bad parameter, as fitting would."""
    cls = RandomForestClassifier if n_classes else RandomForestRegressor
    spec = cls(**params)._spec(max(1, rows), max(1, features), max(1, n_classes))
    leaves = max(1.0, distinct_rows(rows, spec) / spec.min_samples_leaf)
    full = math.ceil(math.log2(leaves)) + 1  # a balanced tree's levels down to its leaves
    # Unbounded trees grow past a balanced tree's depth (random splits are uneven): twice it.
    levels = min(spec.max_depth, 2 * full) if spec.max_depth else 2 * full
    busy = min(levels, full + OPEN_LEVELS)
    T = spec.n_estimators
    return {"levels": T * levels, "cells": T * busy * rows * spec.max_features}


def seconds(rates: dict, work: dict) -> float:
    return rates["setup"] + rates["level"] * work["levels"] + rates["cell"] * work["cells"]


def learn_rates(prior: dict, samples: list) -> dict:
    """Rates from measured runs [{"levels", "cells", "seconds"}] (the fit's time less compiling
    the kernels), most recent last: the prior's two rates each scaled by a factor fitted by least
    squares on relative error over the samples; where the samples cannot separate them (one
    run, or runs of one shape) both by one factor, the geometric mean of measured / estimated."""
    samples = [s for s in samples if s.get("seconds", 0) > 0][-SAMPLES:]
    if not samples:
        return dict(prior)
    # t_i ~ a_i x u + b_i x v, with a_i, b_i the prior's two terms (setup in the first), weighted
    # by 1 / t_i: the 2 x 2 normal equations.
    rows = [((prior["setup"] + prior["level"] * s["levels"]) / s["seconds"],
             prior["cell"] * s["cells"] / s["seconds"]) for s in samples]
    aa = sum(a * a for a, _ in rows)
    ab = sum(a * b for a, b in rows)
    bb = sum(b * b for _, b in rows)
    ya, yb = sum(a for a, _ in rows), sum(b for _, b in rows)
    det = aa * bb - ab * ab
    if len(samples) > 1 and det > 1e-9 * aa * bb:
        u, v = (ya * bb - yb * ab) / det, (yb * aa - ya * ab) / det
        if u > 0 and v > 0:
            return {"setup": prior["setup"] * u, "level": prior["level"] * u, "cell": prior["cell"] * v}
    k = math.exp(sum(-math.log(a + b) for a, b in rows) / len(rows))
    return {key: prior[key] * k for key in ("setup", "level", "cell")}


def forest_fits(limits: dict, rows: int, features: int, params: dict, n_classes: int = 0) -> str | None:
    """None, or why a forest cannot fit an adapter of these `limits` (maxStorageBufferBindingSize,
    maxBufferSize): the check the fit makes before any data goes up (sizes.check_fits), made
    before Train."""
    cls = RandomForestClassifier if n_classes else RandomForestRegressor
    spec = cls(**params)._spec(max(1, rows), max(1, features), max(1, n_classes))
    try:
        check_fits(_Adapter(limits), rows, features, spec)
    except LimitError as exc:
        return str(exc)
    return None


def forest_estimate(request: dict) -> dict:
    """The page's estimate before Train. request: {"rows" (training rows), "features", "params",
    "n_classes", "adapter_class" (gpu, software, cpu), "samples" (this adapter's measured runs),
    "limits" (the adapter's, or None on the CPU path)} -> {"seconds", "work", "learned" (the
    samples it learned from), "minutes" (past MINUTES), "refused" (why the adapter cannot hold
    it, or None)}; {"error": message} for a parameter fitting would refuse."""
    rows, features = int(request["rows"]), int(request["features"])
    params, K = request.get("params") or {}, int(request.get("n_classes") or 0)
    try:
        work = forest_work(rows, features, params, K)
        refused = forest_fits(request["limits"], rows, features, params, K) if request.get("limits") else None
    except (TypeError, ValueError) as exc:
        return {"error": str(exc)}
    samples = request.get("samples") or []
    rates = learn_rates(PRIOR[request.get("adapter_class", "gpu")], samples)
    s = seconds(rates, work)
    return {"seconds": s, "work": work, "learned": len(samples), "minutes": s > MINUTES, "refused": refused}


# Copies of a generated table the tab holds at once: its columns, then the prepared rows (train and
# test, 8 bytes a value each) that the forest job makes from them.
TABLE_COPIES = 2


def table_fits(dataset_id: str, room: int | None) -> str | None:
    """None, or why the tab cannot hold a synthetic table (`synthetic:NAME?...`) in the `room`
    bytes of Python memory left (None: not counted), asked before it is generated."""
    from ..data import GENERATORS
    from .jobs import synthetic_params
    name, params = synthetic_params(dataset_id)
    given = {**GENERATORS[name].params, **params}
    n, F = int(given["n_samples"]), int(given.get("n_features", 2))  # moons, circles: two
    need = TABLE_COPIES * 8 * n * (F + 1)
    if room is None or need <= room:
        return None
    return (f"{name} with {n:,} rows of {F} features needs about {size_text(need)} of the tab's "
            f"Python memory, and {size_text(room)} is left: use fewer rows or features")


class _Adapter:
    """What sizes.check_fits reads of a backend, from an adapter's limits: no memory budget, the
    forest read into JavaScript (the tab on WebGPU)."""
    name = "webgpu"
    host_js = True
    memory_budget = None

    def __init__(self, limits: dict):
        self.limits = limits

    def memory_room(self):
        return None
