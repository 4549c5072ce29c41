"""Boosting on a backend: the buffers of a fit, the iteration's recorded plan, the readbacks.

The method (kernels in shaders/boosting.wgsl, their reference in py_core/kernels/boosting):

1. The training and validation rows go up as they are (f64 values are rounded to f32 by the
   kernels). Each feature's thresholds (binning.py: quantile bins of the non-missing values of a
   subsample, a bin per value where there are at most max_bins) are found on the device, with
   the forest's kernels: `sample` + `sort_pass` sort each feature's subsample (missing values
   last), `thresholds` picks its bins; only those come back, in one readback (the reference
   backend bins on the host, binning.thresholds: the same bits). `bin_rows` bins the rows, four
   8-bit bins a word, a missing value into bin B - 1, and marks the features that have missing
   values. The matrices are freed.
2. One plan, recorded once, is an iteration: gradients and hessians from the running raw scores
   (K outputs at once), the roots' histograms (fixed-point sums in 64-bit integer atomics: exact,
   so every backend sums the same words), then max_leaf_nodes - 1 best-first steps of each tree
   (`grow`: the open leaf of largest gain splits; `route`: its rows move; `hist_build`: the smaller
   child's histogram; `split_find`: the larger child's as parent - sibling, and both children's
   best splits), the leaves' values, the raw scores of the training rows (by the leaf each row
   rests in) and of the validation rows (walking the new trees), the trees into the model's
   arrays, and each set's loss as per-workgroup sums. A tree that stops early (no split of
   positive gain) makes the steps after it no-ops: the grids are fixed, nothing is read back in
   an iteration, and Python makes one `run` call an iteration.
3. The losses come back every few iterations (a group sized by the measured rate, `Pacer`):
   early stopping (scikit-learn's rule) is decided then, and the iterations grown past the stop
   are dropped. The trees come back once, at the end. Every buffer is the fit scope's, freed when
   the fit ends, stops or fails.
"""
from __future__ import annotations

import math
import time
from array import array
from dataclasses import dataclass, field

from ..errors import Stopped
from ..forest.binning import sample_shape
from ..forest.builder import DEVICE_SORT
from ..forest.builder import parallel_bins as forest_parallel_bins
from ..forest.sizes import cap_bytes
from ..forest.trees import matrix_words
from ..gpu.pacing import Pacer
from ..kernels.boosting import (
    ABSOLUTE,
    BINS,
    CATEGORICAL,
    CW,
    H_WORDS,
    INFINITE,
    MW,
    NONE,
    NR,
    PARAMS,
    SORT,
    TS,
    TW,
    WG,
    grid,
    hist_wg_items,
)
from ..kernels.forest import record_words
from . import binning

MED_PASSES = 32    # absolute error: a bit of the medians' f32 keys a pass
GROUP_SECONDS = 0.5  # GPU time between loss readbacks (progress, Stop, early stopping)


@dataclass
class Spec:
    """What a fit grows (the estimator resolves its parameters into these)."""
    loss: int              # kernels' code: SQUARED, ABSOLUTE, LOG
    K: int                 # trees an iteration
    max_iter: int
    leaves: int            # max leaves a tree (max_leaf_nodes, or the cap without one)
    max_depth: int | None
    min_samples_leaf: int
    features: int          # features a split draws
    learning_rate: float
    l2: float
    seed: int
    early_stopping: bool
    n_iter_no_change: int
    tol: float
    limited: bool = True   # max_leaf_nodes given (else `leaves` is only the grid's bound)


@dataclass
class Fitted:
    """A fit as read back."""
    n_iter: int
    sizes: array                # (n_iter, K) nodes a tree
    trees: array                # (n_iter, K, NN, TW) words
    NN: int
    train_loss: list            # loss before any tree, then after each iteration kept
    validation_loss: list | None
    early_stopped: bool
    values: list = field(default_factory=list)       # a feature's value of each bin where it has
                                                     # a bin per value, else None (binning.py)
    categorical: list = field(default_factory=list)  # a feature split by category sets
    timings: dict = field(default_factory=dict)


def should_stop(scores: list, n_iter_no_change: int, tol: float) -> bool:
    """scikit-learn's rule (scores: minus the losses): none of the last n_iter_no_change scores
    beats the one before them by more than tol."""
    ref = n_iter_no_change + 1
    if len(scores) < ref:
        return False
    reference = scores[-ref] + tol
    return not any(s > reference for s in scores[-ref + 1:])


class Grower:
    """One fit's buffers and plans on one backend."""

    def __init__(self, backend, spec: Spec, parallel_bins: bool | None = None):
        self.b, self.spec = backend, spec
        # hist_build_wg (workgroup-memory histograms) on GPUs, hist_build on CPU adapters, as
        # the forest picks its kernel sets (forest.builder.parallel_bins); True/False forces one
        self.wide = forest_parallel_bins(backend) if parallel_bins is None else parallel_bins
        # the thresholds sorted on GPUs; CPU adapters sort on the host, which measured faster
        # there (100k x 20 on lavapipe: 0.5 s against 2.8 s for the bitonic sort's 153 passes)
        self.device_sort = forest_parallel_bins(backend)

    async def grow(self, X: array, n: int, F: int, y: array, Xv: array | None, nv: int, yv,
                   max_bins: int, baseline: list, categorical: list,
                   progress=None, should_stop_=None, on_losses=None) -> Fitted:
        """X: row-major n x F training rows (array 'f' or 'd', NaN missing), y: array('f')
        targets (class indices for log loss); Xv, yv: the validation rows (None: none);
        max_bins: bins a feature's non-missing values take at most; baseline: K raw scores;
        categorical: (F) bools, the features asked to split by category sets (those whose bins
        are category codes do: Fitted.categorical).
        progress(dict) and on_losses(train, validation) hear of each group of iterations;
        should_stop_() -> True raises Stopped between iterations."""
        b = self.b
        clock, t0 = time.perf_counter, time.perf_counter()
        timings = {}
        with b.scope("boosting fit"):  # every buffer and plan of the fit, freed at the end
            self.k = {name: await b.kernel("boosting", name) for name in KERNELS}
            timings["compile"] = clock() - t0  # the first fit of a backend only
            self._upload(X, n, F)
            thresholds, values = await self._thresholds(X, max_bins)
            edges, nthr, B = binning.edges(thresholds)
            asked = [bool(c) and binning.category_codes(v) for c, v in zip(categorical, values)]
            flags = array("I", (CATEGORICAL if c else 0 for c in asked))
            self._buffers(y, Xv, nv, yv, edges, nthr, B, baseline, flags)
            await b.run(self._prepare())
            flags = await b.read(self.fmiss)  # a few words: the data's check
            bad = [f for f in range(F) if flags[f] & INFINITE]
            if bad:
                raise ValueError(f"X has infinite values (feature {', '.join(map(str, bad[:5]))}"
                                 f"{', ...' if len(bad) > 5 else ''}): only NaN, a missing value, is allowed")
            b.free(self.X)
            if self.Xv is not None:
                b.free(self.Xv)
            timings["binning"] = clock() - t0 - timings["compile"]
            plan = self._iteration()
            fitted = await self._iterate(plan, progress, should_stop_, on_losses, timings)
            t1 = clock()
            fitted.sizes, fitted.trees = await self._read_trees(fitted.n_iter)
            timings["readback"] = clock() - t1
            fitted.timings, fitted.values, fitted.categorical = timings, values, asked
            return fitted

    def _upload(self, X, n, F):
        """The training rows up, and the parameters the binning reads (the rest once B is known)."""
        b, s, K = self.b, self.spec, self.spec.K
        L = s.leaves
        self.NN = 2 * L - 1
        self.n, self.F = n, F
        self.step, self.m, SM = sample_shape(n)
        self.base = dict(n=n, F=F, FW=-(-F // 4), K=K, B=0, loss=s.loss, NN=self.NN,
                         L=L if s.limited else NONE, max_depth=NONE if s.max_depth is None else s.max_depth,
                         msl=s.min_samples_leaf, mf=s.features, seed=s.seed & 0xFFFFFFFF, I=0, staged=0,
                         xd=0, b16=0, loff=0, lw=0, lr=s.learning_rate, l2=s.l2, min_hess=1e-3,
                         step=self.step, SM=SM)
        words, self.base["xd"] = matrix_words(b, X, n, F, f"the {n} x {F} training matrix")
        self.P = b.buffer("u32", uniform=True, data=PARAMS.pack(**self.base))
        self.X = b.buffer("u32", data=words)

    async def _thresholds(self, X, max_bins: int) -> tuple[list, list]:
        """binning.thresholds' (thresholds, values), the same bits: from the device on GPUs (one
        submission, one readback of the bins), else on the host (CPU adapters, the reference
        backend; or a subsample or records past a buffer's size: tens of thousands of features)."""
        b, k, F, m, SM = self.b, self.k, self.F, self.m, self.base["SM"]
        nbm = min(max_bins, m)  # the same bins (m values have at most m distinct ones)
        W = record_words(nbm, 0, m)  # a feature's record: its bins, then (threshold, lo, hi) a bin
        if not self.device_sort or b.name not in DEVICE_SORT or 4 * F * max(SM, W) > cap_bytes(b):
            return binning.thresholds(X, self.n, F, max_bins)
        samp, back = b.buffer("u32", F * SM), b.buffer("u32", F * W)
        plan = b.plan().dispatch(k["sample"], [self.P, self.X, samp], self._grid(F * SM))
        for kk in (2 ** i for i in range(1, SM.bit_length())):  # the bitonic sort's passes
            for j in (kk >> i for i in range(1, kk.bit_length())):
                Ps = b.buffer("u32", uniform=True, data=SORT.pack(j=j, k=kk, len=SM, count=F))
                plan.dispatch(k["sort_pass"], [Ps, samp], self._grid(F * SM // 2))
        Pb = b.buffer("u32", uniform=True, data=BINS.pack(m=m, SM=SM, F=F, nbins=nbm, exact=0))
        plan.dispatch(k["thresholds"], [Pb, samp, back],
                      grid(F, b.limits["maxComputeWorkgroupsPerDimension"]))
        await b.run(plan)
        got = await b.read(back)
        b.free(samp)
        words = memoryview(got).cast("B").cast("f")
        out, values = [], []
        for f in range(F):
            bins, at = got[f * W], f * W + 1  # 0 bins: no value of the subsample is finite
            th = words[at:at + 3 * max(0, bins - 1):3].tolist()  # the last bin's: +inf
            lo, hi = words[at + 1:at + 3 * bins:3].tolist(), words[at + 2:at + 3 * bins:3].tolist()
            out.append(th)
            values.append(lo if bins and lo == hi else None)
        return out, values

    def _buffers(self, y, Xv, nv, yv, edges, nthr, B, baseline, categorical):
        b, s, K, n, F = self.b, self.spec, self.spec.K, self.n, self.F
        L, NN, FW = s.leaves, self.NN, -(-F // 4)
        self.nv, self.B = nv, B
        self.WT, self.WV = -(-n // WG), -(-nv // WG) if nv else 0
        lw = self.WT + self.WV
        base = self.base = dict(self.base, B=B, lw=lw)
        b.write(self.P, PARAMS.pack(**base))
        buf = b.buffer
        self.edges = buf("f32", data=edges)
        self.fmeta = buf("u32", data=nthr)
        self.fmiss = buf("u32", data=categorical)  # bin_rows adds MISSING
        self.binned = buf("u32", n * FW)
        self.y = buf("f32", data=y)
        self.raw = buf("f32", data=array("f", baseline * n))
        self.gh = buf("f32", 2 * n * K)
        self.qs = buf("u32", 2 * K)
        self.node_of = buf("u32", K * n)
        self.ts = buf("u32", K * TS)
        self.nodes = buf("u32", K * NN * NR)
        self.hist = buf("u32", K * L * F * B * H_WORDS)  # a slot a leaf
        self.cand = buf("u32", K * 2 * F * CW)
        self.ctr = buf("u32", 1)
        self.trees = buf("u32", s.max_iter * K * NN * TW)
        self.sizes = buf("u32", s.max_iter * K)
        self.med = buf("u32", NN * MW if s.loss == ABSOLUTE else 1)
        self.losses = buf("f32", (s.max_iter + 1) * lw)
        self.Xv = self.PV = None
        if nv:
            words, xd = matrix_words(b, Xv, nv, F, f"the {nv} x {F} validation matrix")
            self.PV = buf("u32", uniform=True, data=PARAMS.pack(**dict(base, n=nv, xd=xd, loff=self.WT)))
            self.Xv = buf("u32", data=words)
            self.binned_v = buf("u32", nv * FW)
            self.yv = buf("f32", data=yv)
            self.raw_v = buf("f32", data=array("f", baseline * nv))

    def _grid(self, threads: int):
        return grid(-(-threads // WG), self.b.limits["maxComputeWorkgroupsPerDimension"])

    def _prepare(self):
        """Both sets binned, and their losses at the baseline (slot 0)."""
        k, P, plan = self.k, self.P, self.b.plan()
        FW = -(-self.F // 4)
        plan.dispatch(k["bin_rows"], [P, self.X, self.edges, self.fmeta, self.binned, self.fmiss],
                      self._grid(self.n * FW))
        if self.nv:
            plan.dispatch(k["bin_rows"], [self.PV, self.Xv, self.edges, self.fmeta, self.binned_v,
                                          self.fmiss], self._grid(self.nv * FW))
        return self._losses(plan)

    def _losses(self, plan):
        plan.dispatch(self.k["loss"], [self.P, self.raw, self.y, self.losses, self.ctr], self._grid(self.n))
        if self.nv:
            plan.dispatch(self.k["loss"], [self.PV, self.raw_v, self.yv, self.losses, self.ctr],
                          self._grid(self.nv))
        return plan

    def _iteration(self):
        """One iteration's plan, recorded once (its dispatches labelled for profiles)."""
        k, P, s, K, n = self.k, self.P, self.spec, self.spec.K, self.n
        plan = self.b.plan().clear(self.qs).clear(self.hist).clear(self.nodes)
        build = [P, self.binned, self.gh, self.qs, self.node_of, self.ts, self.hist]
        hist_build = k["hist_build_wg" if self.wide else "hist_build"]
        hist_grid = (grid(hist_wg_items(K, self.F, self.B, n), self.b.limits["maxComputeWorkgroupsPerDimension"])
                     if self.wide else self._grid(K * n))
        find = [P, self.hist, self.nodes, self.ts, self.cand, self.fmeta, self.fmiss, self.qs, self.ctr]
        rows, pairs = self._grid(K * n), self._grid(K * 2 * self.F)
        plan.dispatch(k["gradients"], [P, self.raw, self.y, self.gh, self.qs, self.node_of, self.ts],
                      self._grid(n))
        plan.dispatch(hist_build, build, hist_grid)
        plan.dispatch(k["root_totals"], [P, self.hist, self.nodes, self.ts, self.qs], self._grid(K))
        plan.dispatch(k["split_find"], find, pairs)
        for step in range(s.leaves - 1):
            plan.dispatch(k["grow"], [P, self.nodes, self.ts, self.cand, self.fmiss], self._grid(K))
            plan.dispatch(k["route"], [P, self.binned, self.nodes, self.ts, self.node_of, self.fmiss], rows)
            if step < s.leaves - 2:  # the last split's children cannot split
                plan.dispatch(hist_build, build, hist_grid)
                plan.dispatch(k["split_find"], find, pairs)
        per_node = self._grid(K * self.NN)
        if s.loss == ABSOLUTE:
            plan.clear(self.med)
            for _ in range(MED_PASSES):
                plan.dispatch(k["med_count"], [P, self.y, self.raw, self.node_of, self.med], self._grid(n))
                plan.dispatch(k["med_step"], [P, self.nodes, self.ts, self.med], per_node)
        plan.dispatch(k["leaf_values"], [P, self.nodes, self.ts, self.qs, self.med], per_node)
        plan.dispatch(k["update"], [P, self.nodes, self.node_of, self.raw], rows)
        if self.nv:
            plan.dispatch(k["update_val"], [self.PV, self.binned_v, self.nodes, self.raw_v, self.fmiss],
                          self._grid(K * self.nv))
        plan.dispatch(k["store_tree"], [P, self.nodes, self.ts, self.trees, self.sizes, self.ctr,
                                        self.edges, self.fmiss], per_node)
        plan.dispatch(k["next_iter"], [P, self.ctr], (1, 1, 1))
        return self._losses(plan)

    async def _iterate(self, plan, progress, stop, on_losses, timings) -> Fitted:
        """Iterations in groups (a loss readback each), until max_iter or early stopping."""
        b, s, clock = self.b, self.spec, time.perf_counter
        t0 = clock()
        train, val = [], [] if self.nv else None
        scores = []  # minus the loss early stopping watches (validation's, else training's)
        pacer, done, read, stopped_at = Pacer(GROUP_SECONDS), 0, 0, None
        while done < s.max_iter and stopped_at is None:
            group = pacer.size(s.max_iter - done)
            t1 = clock()
            for _ in range(group):
                if stop is not None and stop():
                    raise Stopped(f"stopped after {done} of {s.max_iter} iterations: the model is "
                                  "discarded (nothing is stored)")
                await b.run(plan)
                done += 1
            got = await self._read_losses(read, done + 1)
            pacer.done(group, clock() - t1)
            for i in range(done + 1 - read):
                tl, vl = got[i]
                # Scores that outgrew f32 (a learning rate of 1e19): the GPUs would grow NaN trees
                # on. A loss infinite from the start is a target past f32's squares (1e20): its
                # trees are finite, the loss alone is not.
                if math.isnan(tl) or (math.isinf(tl) and train and math.isfinite(train[0])):
                    raise ValueError(
                        f"the training loss is {tl} after {read + i} iteration"
                        f"{'s' * (read + i != 1)}: the scores outgrew 32-bit floats (learning_rate "
                        f"{s.learning_rate:g}); a smaller learning_rate, or the target scaled "
                        "down, keeps them finite")
                train.append(tl)
                if val is not None:
                    val.append(vl)
                scores.append(-(vl if val is not None else tl))
                if s.early_stopping and should_stop(scores, s.n_iter_no_change, s.tol):
                    stopped_at = read + i  # iterations kept
                    break
            read = done + 1
            if on_losses is not None:
                await on_losses(train, val)
            if progress is not None:
                fraction = done / s.max_iter
                spent = clock() - t0
                progress({"stage": f"iteration {done} of {s.max_iter}", "iteration": done,
                          "fraction": fraction, "eta_s": spent * (1 - fraction) / fraction})
        n_iter = done if stopped_at is None else stopped_at
        timings["iterations"] = clock() - t0
        return Fitted(n_iter, array("I"), array("I"), self.NN, train[:n_iter + 1],
                      val[:n_iter + 1] if val is not None else None, stopped_at is not None)

    async def _read_losses(self, first: int, end: int) -> list:
        """[(training loss, validation loss or None)] of slots first .. end - 1 (a readback)."""
        lw, WT = self.WT + self.WV, self.WT
        got = await self.b.read_soon([(self.losses, first * lw, (end - first) * lw)])
        sums = memoryview(got).cast("B").cast("f")
        out = []
        for i in range(end - first):
            block = sums[i * lw:(i + 1) * lw]
            tl = math.fsum(block[:WT]) / self.n
            out.append((tl, math.fsum(block[WT:]) / self.nv if self.nv else None))
        return out

    async def _read_trees(self, n_iter: int) -> tuple[array, array]:
        if not n_iter:
            return array("I"), array("I")
        K, NN = self.spec.K, self.NN
        sizes = await self.b.read(self.sizes, n_iter * K)
        trees = await self.b.read(self.trees, n_iter * K * NN * TW)
        return array("I", sizes), array("I", trees)


KERNELS = ("sample", "sort_pass", "thresholds", "bin_rows", "gradients", "hist_build", "hist_build_wg", "root_totals", "split_find", "grow", "route",
           "med_count", "med_step", "leaf_values", "update", "update_val", "store_tree",
           "next_iter", "loss")


def boosting_kernels() -> list:
    """[(family, entry, constants), ...]: the kernels a fit and predict compile, whatever the
    adapter (no override constants): what the tab compiles ahead of a boosting job (Backend.warm)."""
    return [("boosting", name, None) for name in KERNELS + ("predict",)]
