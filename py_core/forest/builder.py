"""Growing a forest on a backend: buffers, the recorded plan of each level, one readback.

The method (kernels in `shaders/forest.wgsl`):

1. Features are binned once (`binning.py` finds the thresholds; `bin_features` bins the rows).
2. Trees grow in batches sized to the adapter's limits. For a batch, `bootstrap` counts n draws
   with replacement per tree into each row's state (slot << 8 | count), from a hash RNG.
3. Level by level, all trees of the batch at once, a plan recorded once per level runs:
   `hist_build` (integer atomics into (tree, slot, feature, bin): only the smaller child of each
   split, or the root), `hist_prefix` (built histograms made cumulative along the bins),
   `split_scan` (per slot and feature: the larger child's histogram as parent - sibling, then
   the feature's best split, f32 gain in a fixed order), `split_pick` (per slot: the best over
   its random feature subset), `alloc` (per tree, a prefix sum numbers the children and gives
   the open ones slots of the next level), `hist_clear` (zeroes the histograms the next level
   builds) and `route_rows` (each row moves to its child's slot). Nothing is read back between levels: the number of slots a level
   can need is bounded from n, min_samples_split and min_samples_leaf, so every grid is fixed.
   Memory: two levels of histograms, Tb x S x NB x C words each, sized to HIST_BUDGET and the
   adapter's binding limit; the trees are grown in batches of Tb.
4. `finalize` turns nodes into the (feature, threshold, left child, value) arrays that `predict`
   and `oob` walk; the nodes come back to Python in one readback at the end.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

from ..gpu import LimitError
from ..kernels.forest import (ENTROPY, LEAF, MSE, PARAMS, WG, grid, half_bits)
from .binning import bin_edges

HIST_BUDGET = 512 * 2**20  # bytes of one level's histograms per batch, at most (GPU backends)
REFERENCE_BUDGET = 64 * 2**20  # the reference backend keeps these in Python arrays
NONE_DEPTH = 0xFFFFFFFF  # max_depth=None in the kernels' params
CHECK_EVERY = 8  # levels between the small readbacks that end a deep (max_depth > 16 or None) batch
MAX_ROWS = 2**24 - 1  # weights and counts stay exact in f32
Y_BITS = 23  # regression targets as signed fixed point of this many bits (w * y fits in i32)

KERNELS = ("bin_features", "bootstrap", "init_trees", "hist_build", "hist_prefix", "split_scan",
           "split_pick", "hist_clear",
           "alloc", "route_rows", "finalize", "predict", "oob")


@dataclass
class GrowSpec:
    """What the kernels need to know about a fit (validated by the estimator)."""
    crit: int               # MSE, GINI or ENTROPY
    n_classes: int          # K: 1 for regression
    n_estimators: int
    max_depth: int | None
    min_samples_split: int
    min_samples_leaf: int
    max_features: int       # features tried per split
    bootstrap: bool
    seed: int               # u32
    n_bins: int
    oob: bool


@dataclass
class Sizes:
    n: int
    F: int
    FW: int
    NB: int
    C: int
    K: int
    S: int        # slot stride: the most slots a level can need, per tree
    NC: int       # node capacity per tree
    Tb: int       # trees per batch
    levels: int | None  # None: grow until no node is open


def level_slots(d: int, n: int, s_min: int) -> int:
    """Slots level d can need per tree: pairs of children of the open nodes at level d - 1, of
    which there are at most 2^(d-1) and at most n // s_min (each holds s_min distinct rows)."""
    return 1 if d == 0 else 2 * min(2 ** (d - 1), n // s_min)


def plan_sizes(backend, n: int, F: int, NB: int, spec: GrowSpec) -> Sizes:
    """Buffer sizes from the data and the parameters, checked against the adapter's limits."""
    K = spec.n_classes
    C = 4 if spec.crit == MSE else K + 1
    s_min = max(spec.min_samples_split, 2 * spec.min_samples_leaf)
    D = spec.max_depth
    S = max(level_slots(d, n, s_min) for d in range(min(D, 64) if D else 64))
    NC = 2 * max(1, n // spec.min_samples_leaf) - 1
    if D is not None and D < 40:
        NC = min(NC, 2 ** (D + 1) - 1)
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"],
              REFERENCE_BUDGET if backend.name == "reference" else HIST_BUDGET)
    per_tree = 4 * S * NB * C
    Tb = min(spec.n_estimators, cap // per_tree, cap // (4 * n))
    if Tb < 1:
        raise LimitError(
            f"one tree's histograms need {per_tree / 2**20:.1f} MiB ({S} nodes a level x {NB} bins "
            f"x {C} channels) but at most {cap / 2**20:.0f} MiB fit in a buffer here: lower "
            f"n_bins or max_depth, or raise min_samples_leaf")
    T = spec.n_estimators
    NW = 4 + C
    backend.check_size(4 * T * NC * NW, f"the nodes of {T} trees of up to {NC} nodes")
    backend.check_size(4 * T * NC * max(3, K), f"the prediction arrays of {T} trees")
    backend.check_size(4 * n * F, f"the {n} x {F} training matrix")
    return Sizes(n, F, -(-F // 4), NB, C, K, S, NC, Tb, D)


def _fixed_point(y, n):
    """Targets as signed Y_BITS-bit integers around `mid`; value = q * inv_scale + mid."""
    lo, hi = min(y), max(y)
    mid = array("f", [(lo + hi) / 2])[0]
    half = max(hi - mid, mid - lo)
    scale = (2 ** Y_BITS - 1.5) / half if half > 0 else 1.0  # |q| <= 2^23 - 1 after rounding
    q = array("i", map(round, map(scale.__mul__, map((-mid).__add__, map(float, y)))))
    return array("I", q.tobytes()), scale, mid


@dataclass
class Grown:
    """A grown forest as read back: per tree (feature, threshold, left, value) lists and the
    nodes' statistics; and, on the device, the prediction arrays."""
    trees: list           # dicts with feature, threshold, left, right, value, stats
    NC: int
    ptree: object         # device buffers
    pval: object
    oob: array | None     # (n, K + 1): summed out-of-bag predictions and their count
    y_scale: float        # regression fixed point (1.0 for classes)
    timings: dict


class Grower:
    """One fit's buffers and plans on one backend."""

    def __init__(self, backend, spec: GrowSpec):
        self.b, self.spec = backend, spec

    async def grow(self, X: array, n: int, F: int, y, progress=None, should_stop=None,
                   pause=None) -> Grown:
        import time
        b, spec = self.b, self.spec
        if n > MAX_ROWS:
            raise LimitError(f"{n} rows: the forest trains on at most {MAX_ROWS} rows")
        k = {name: await b.kernel("forest", name) for name in KERNELS}
        t0 = time.perf_counter()
        edges, fmeta, _ = bin_edges(X, n, F, spec.n_bins)
        NB = len(fmeta) and sum(fmeta[1::2])
        z = self.z = plan_sizes(b, n, F, NB, spec)
        K, C, NC, S, Tb, T = z.K, z.C, z.NC, z.S, z.Tb, spec.n_estimators
        if spec.crit == MSE:
            target, scale, mid = _fixed_point(y, n)
        else:
            target, scale, mid = array("I", y), 1.0, 0.0
        self.base = dict(n=n, F=F, FW=z.FW, NB=NB, C=C, K=K, crit=spec.crit, T=Tb, tree0=0,
                         seed=spec.seed, boot=int(spec.bootstrap), mss=spec.min_samples_split,
                         msl=spec.min_samples_leaf,
                         max_depth=NONE_DEPTH if spec.max_depth is None else spec.max_depth,
                         mf=spec.max_features, hb=half_bits(F), S=S, NC=NC, depth=0, S_cur=1,
                         S_next=0, T_all=T, inv_scale=1.0 / scale, mid=mid)
        owned, kept = [], []  # every buffer of the fit is freed at the end, but the forest's own

        def buf(*args, **kwargs):
            made = b.buffer(*args, **kwargs)
            owned.append(made)
            return made

        try:
            P0 = buf("u32", data=PARAMS.pack(**self.base), uniform=True)
            Xb = buf("f32", data=X)
            eb = buf("f32", data=edges)
            fb = buf("u32", data=fmeta)
            binned = buf("u32", n * z.FW)
            await b.run(b.plan().dispatch(k["bin_features"], [P0, Xb, eb, fb, binned],
                                          self._grid(n * z.FW)))
            await b.finish()
            t_bin = time.perf_counter() - t0

            tgt = buf("u32", data=target)
            if spec.crit == ENTROPY:  # x ln x for every weight a node can have
                xlogx = buf("f32", data=array("f", [0.0] + [v * math.log(v) for v in range(1, n + 1)]))
            else:
                xlogx = buf("f32", 1)
            nodes = buf("u32", T * NC * (4 + C))
            meta = buf("u32", 2 * T)
            ptree = buf("u32", 3 * T * NC)
            pval = buf("f32", K * T * NC)
            oobb = buf("f32", n * (K + 1)) if spec.oob and spec.bootstrap else None
            state = buf("u32", Tb * n)
            hist = [buf("u32", Tb * S * NB * C) for _ in range(2)]
            slots = [buf("u32", Tb * S * 4) for _ in range(2)]
            childmap = buf("u32", Tb * S * 2)
            left = buf("u32", Tb * S * C)
            cand = buf("u32", Tb * S * F * 4)

            init = (b.plan().clear(state)
                    .dispatch(k["bootstrap"], [P0, state], self._grid(Tb * n))
                    .dispatch(k["init_trees"], [P0, slots[0], nodes, meta, hist[0]], self._grid(Tb * S)))
            final = b.plan().dispatch(k["finalize"], [P0, nodes, meta, eb, fb, ptree, pval],
                                      self._grid(Tb * NC))
            if oobb is not None:
                final.dispatch(k["oob"], [P0, Xb, ptree, pval, state, oobb], self._grid(n))
            level_params, level_plans = [], []  # per level: (uniform, slots, next slots), plan
            s_min = max(spec.min_samples_split, 2 * spec.min_samples_leaf)
            batch = [0, Tb]  # first tree, trees

            def level(d):
                """The recorded plan of level d: made once, run for every batch."""
                while len(level_plans) <= d:
                    e = len(level_plans)
                    s_cur = level_slots(e, n, s_min)
                    last = z.levels is not None and e == z.levels - 1
                    s_next = 0 if last else level_slots(e + 1, n, s_min)
                    P = buf("u32", uniform=True,
                                 data=PARAMS.pack(**self._params(e, s_cur, s_next, *batch)))
                    cur, other = e % 2, 1 - e % 2
                    plan = (b.plan()
                            .dispatch(k["hist_build"], [P, binned, fb, tgt, state, slots[cur], hist[cur]],
                                      self._grid(Tb * n))
                            .dispatch(k["hist_prefix"], [P, fb, slots[cur], hist[cur]],
                                      self._grid(Tb * s_cur * F))
                            .dispatch(k["split_scan"], [P, fb, slots[cur], hist[cur], nodes, cand, xlogx,
                                                        hist[other]], self._grid(Tb * s_cur * F))
                            .dispatch(k["split_pick"], [P, fb, slots[cur], hist[cur], nodes, cand, xlogx,
                                                        left], self._grid(Tb * s_cur))
                            .dispatch(k["alloc"], [P, slots[cur], nodes, left, slots[other], childmap, meta],
                                      grid(Tb, b.limits["maxComputeWorkgroupsPerDimension"])))
                    if not last:
                        plan.dispatch(k["hist_clear"], [P, meta, hist[other]],
                                      grid(Tb * (s_next // 2), b.limits["maxComputeWorkgroupsPerDimension"]))
                        plan.dispatch(k["route_rows"], [P, binned, state, slots[cur], nodes, childmap],
                                      self._grid(Tb * n))
                    level_params.append((P, s_cur, s_next))
                    level_plans.append(plan)
                return level_plans[d]

            levels_total = z.levels or max(1, math.ceil(math.log2(max(2, n))) + 4)  # for progress
            while batch[0] < T:
                done = batch[0]
                batch[1] = nt = min(Tb, T - done)
                b.write(P0, PARAMS.pack(**self._params(0, 1, 0, done, nt)))
                for d, (P, s_cur, s_next) in enumerate(level_params):
                    b.write(P, PARAMS.pack(**self._params(d, s_cur, s_next, done, nt)))
                await b.run(init)
                d = 0
                while z.levels is None or d < z.levels:
                    await b.run(level(d))
                    d += 1
                    if should_stop is not None and should_stop():
                        from ..jobs import Stopped
                        raise Stopped("stopped on request")
                    if pause is not None:
                        await pause()  # waits while paused; raises Stopped
                    if progress is not None:
                        total = max(levels_total, d)
                        progress({"stage": f"level {d}/{total}", "trees": [done, T],
                                  "fraction": (done + nt * min(1.0, d / total)) / T})
                    if (z.levels or 64) > 16 and d % CHECK_EVERY == 0:
                        m = await b.read(meta)  # a few words: is any node still open?
                        if not any(m[2 * (done + t) + 1] for t in range(nt)):
                            break
                await b.run(final)
                batch[0] = done + nt
            # The one readback of the fit.
            node_words, counts = await b.read(nodes), await b.read(meta)
            tree_words, values = await b.read(ptree), await b.read(pval)
            oob = await b.read(oobb) if oobb is not None else None
            trees = _host_trees(node_words, counts, tree_words, values, T, NC, C, K)
            kept = [ptree, pval]
            return Grown(trees, NC, ptree, pval, oob, scale, {"binning": t_bin})
        finally:  # also when stopped or failed
            for made in owned:
                if not any(made is keep for keep in kept):
                    b.free(made)

    def _params(self, depth, s_cur, s_next, tree0, nt):
        return dict(self.base, depth=depth, S_cur=s_cur, S_next=s_next, tree0=tree0, T=nt)

    def _grid(self, threads):
        return grid(-(-threads // WG), self.b.limits["maxComputeWorkgroupsPerDimension"])


def _host_trees(node_words, counts, tree_words, values, T, NC, C, K):
    NW = 4 + C
    thresholds = array("f", array("I", tree_words).tobytes())
    trees = []
    for t in range(T):
        m = counts[2 * t]
        base = t * NC
        feat = tree_words[3 * base:3 * (base + m):3].tolist()
        left = tree_words[3 * base + 2:3 * (base + m):3].tolist()
        leaf = [f == LEAF for f in feat]
        stats = [node_words[(base + i) * NW + 4:(base + i + 1) * NW].tolist() for i in range(m)]
        vals = values[K * base:K * (base + m)].tolist()
        trees.append({
            "feature": [-1 if lf else f for f, lf in zip(feat, leaf)],
            "threshold": [0.0 if lf else x for x, lf in zip(thresholds[3 * base + 1:3 * (base + m):3], leaf)],
            "left": [-1 if lf else c for c, lf in zip(left, leaf)],
            "right": [-1 if lf else c + 1 for c, lf in zip(left, leaf)],
            "value": vals if K == 1 else [vals[i * K:(i + 1) * K] for i in range(m)],
            "stats": stats,
        })
    return trees


def upload(backend, trees: list, n_classes: int):
    """(ptree, pval, NC): host trees as the device arrays `predict` walks."""
    K = n_classes
    NC = max(len(t["feature"]) for t in trees)
    ptree = array("I", bytes(12 * NC * len(trees)))
    pval = array("f", bytes(4 * K * NC * len(trees)))
    for i, t in enumerate(trees):
        base = i * NC
        m = len(t["feature"])
        ptree[3 * base:3 * (base + m):3] = array("I", [LEAF if f < 0 else f for f in t["feature"]])
        ptree[3 * base + 1:3 * (base + m):3] = array("I", array("f", t["threshold"]).tobytes())
        ptree[3 * base + 2:3 * (base + m):3] = array("I", [max(0, c) for c in t["left"]])
        flat = t["value"] if K == 1 else [v for row in t["value"] for v in row]
        pval[K * base:K * (base + m)] = array("f", flat)
    backend.check_size(4 * len(ptree), f"the prediction arrays of {len(trees)} trees")
    return backend.buffer("u32", data=ptree), backend.buffer("f32", data=pval), NC


async def predict(backend, ptree, pval, NC: int, n_trees: int, K: int, X: array, n: int, F: int) -> array:
    """(n, K) f32: the mean over the trees of each row's leaf value."""
    backend.check_size(4 * n * F, f"the {n} x {F} matrix to predict")
    kern = await backend.kernel("forest", "predict")
    P = backend.buffer("u32", uniform=True, data=PARAMS.pack(
        n=n, F=F, FW=0, NB=0, C=0, K=K, crit=0, T=0, tree0=0, seed=0, boot=0, mss=0, msl=0,
        max_depth=0, mf=0, hb=0, S=0, NC=NC, depth=0, S_cur=0, S_next=0, T_all=n_trees,
        inv_scale=1.0, mid=0.0))
    Xb = backend.buffer("f32", data=X)
    out = backend.buffer("f32", n * K)
    g = grid(-(-n // WG), backend.limits["maxComputeWorkgroupsPerDimension"])
    await backend.run(backend.plan().dispatch(kern, [P, Xb, ptree, pval, out], g))
    result = await backend.read(out)
    for buf in (P, Xb, out):
        backend.free(buf)
    return result
