"""Growing a forest on a backend: buffers, the recorded plan of each level, one readback.

The method (kernels in `shaders/forest.wgsl`):

1. The data go up as they are (f64 values are rounded to f32 by the kernels, as the CPU would).
   `check_finite` refuses NaN and infinities, `targets` turns regression y into exact fixed point,
   and `sample` + `sort_pass` sort a subsample of each feature on the device; the thresholds are
   picked from it on the CPU (`binning.py`, O(n_bins log m) values read) and `bin_features` bins
   the rows.
2. Trees grow in batches sized to the adapter's limits. For a batch, `bootstrap` counts n draws
   with replacement per tree into each row's state (slot << 8 | count), from a hash RNG.
3. Level by level, all trees of the batch at once, a plan recorded once per level runs:
   `hist_clear` (zeroes the histograms this level builds), `hist_build` (integer atomics into
   (tree, slot, feature, bin): only the smaller child of each split, or the root), `hist_prefix`
   (built histograms made cumulative along the bins), `split_scan` (per slot and feature: the
   larger child's histogram as parent - sibling, then the feature's best split, f32 gain in a
   fixed order), `split_pick` (per slot: the best over its random feature subset), `alloc` (per
   tree, a prefix sum numbers the children and gives the open ones slots of the next level) and
   `route_rows` (each row moves to its child's slot). On GPUs, hist_prefix and split_scan run
   as their `_wg` versions (`parallel_bins`). Nothing is read back between levels: the number
   of slots a level can need is bounded from n, min_samples_split and min_samples_leaf, so
   every grid is fixed, and a batch of trees of depth <= 16 is one submission.
   Memory: two levels of histograms, Tb x S x NB x C words each, sized to the histogram budget
   and the adapter's binding limit; the trees are grown in batches of Tb. Where one tree's level
   does not fit a buffer (128 MiB adapters, deep trees on wide data), a level's slots are done in
   passes of S_h slots with one histogram buffer; every open child is then built by atomics (no
   parent to subtract from) and the forest is the same.
4. `finalize` turns nodes into the (feature, threshold, left child, value) arrays that `predict`
   and `oob` walk and `importance` sums each feature's impurity decrease; all of it comes back to
   Python in one readback at the end and stays in flat arrays (`trees.Trees`).
"""
from __future__ import annotations

import math
import time
from array import array
from dataclasses import dataclass
from fractions import Fraction

from ..gpu import LimitError
from ..gpu.backend import by_label
from ..gpu.pacing import GROUP_SECONDS, Pacer
from ..kernels.forest import (ENTROPY, HC_SLOTS, IMP_CHUNK, MSE, NOT_FINITE_X, NOT_FINITE_Y,
                              PARAMS, SORT, WG, grid, half_bits)
from .binning import edges_from_sorted, sample_shape, sorted_columns
from .trees import Trees, matrix_words

HIST_BUDGET = 2**30  # bytes of one level's histograms per batch, at most (GPU backends): fewer,
                     # larger batches where the adapter binds that much (2 such buffers a fit)
REFERENCE_BUDGET = 64 * 2**20  # the reference backend keeps these in Python arrays
NONE_DEPTH = 0xFFFFFFFF  # max_depth=None in the kernels' params
CHECK_EVERY = 8  # levels between the small readbacks that end a deep (max_depth > 16 or None) batch
PACED = True  # levels in groups of about GROUP_SECONDS, the GPU waited for after each (see grow)
MAX_ROWS = 2**24 - 1  # weights and counts stay exact in f32
Y_BITS = 23  # regression targets as signed fixed point of this many bits (w * y fits in i32)
DEVICE_SORT = ("webgpu", "native", "cuda")  # backends that sort the binning subsample themselves

KERNELS = ("check_finite", "sample", "sort_pass", "targets", "bin_features", "bootstrap",
           "init_trees", "hist_clear", "hist_build", "split_pick", "alloc", "route_rows",
           "finalize", "importance", "oob")
LOOPING = ("hist_prefix", "split_scan")  # a thread per (tree, slot, feature): CPU adapters
PARALLEL = ("hist_prefix_wg", "split_scan_wg")  # a workgroup per (tree, slot, feature): GPUs
PARALLEL_BINS = None  # True/False: one set or the other everywhere; None: `parallel_bins`
CPU_ADAPTERS = ("swiftshader", "llvmpipe", "lavapipe")


def parallel_bins(backend) -> bool:
    """Whether the PARALLEL kernels run: on GPUs (2.5x faster on an H200), not on CPU adapters,
    where a workgroup's barriers cost more than one thread's loop (25x slower on lavapipe)."""
    if PARALLEL_BINS is not None:
        return PARALLEL_BINS
    a = backend.adapter
    named = " ".join(str(a.get(k, "")) for k in ("vendor", "architecture", "device", "description"))
    return (backend.name in DEVICE_SORT and not a.get("is_fallback_adapter")
            and not any(cpu in named.lower() for cpu in CPU_ADAPTERS))


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
    S_h: int      # slots a histogram buffer holds per tree (S, or fewer: a level in passes)
    NC: int       # node capacity per tree
    Tb: int       # trees per batch
    levels: int | None  # None: grow until no node is open


def level_slots(d: int, n: int, s_min: int) -> int:
    """Slots level d can need per tree: pairs of children of the open nodes at level d - 1, of
    which there are at most 2^(d-1) and at most n // s_min (each holds s_min distinct rows)."""
    return 1 if d == 0 else 2 * min(2 ** (d - 1), n // s_min)


def _cap(backend) -> int:
    return min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])


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
    cap = min(_cap(backend), REFERENCE_BUDGET if backend.name == "reference" else HIST_BUDGET)
    per_slot = 4 * NB * C
    if per_slot > cap:
        raise LimitError(
            f"one node's histogram needs {per_slot / 2**20:.1f} MiB ({NB} bins x {C} channels) but at "
            f"most {cap / 2**20:.0f} MiB fit in a buffer here: lower n_bins or use fewer features")
    T = spec.n_estimators
    S_h = S if per_slot * S <= cap else cap // per_slot  # else each level in passes of S_h slots
    Tb = max(1, min(T, cap // (per_slot * S_h)))
    backend.check_size(4 * n * Tb, f"the bootstrap state of {n} rows")
    NW = 4 + C
    backend.check_size(4 * T * NC * NW, f"the nodes of {T} trees of up to {NC} nodes")
    backend.check_size(4 * T * NC * max(3, K), f"the prediction arrays of {T} trees")
    return Sizes(n, F, -(-F // 4), NB, C, K, S, S_h, NC, Tb, D)


def fixed_point_scale(y) -> tuple[int, int, float]:
    """(e, M, mid) for regression targets y as q = round(y 2^e) - M: |q| <= 2^Y_BITS - 1, M the
    fixed point of the middle of y's range, mid its f32; a value is q 2^-e + mid. The kernel
    computes q exactly from y's f64 bits, so every backend gets the same integers."""
    lo, hi = min(y), max(y)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("y has NaN or infinite values")
    c = lo / 2 + hi / 2
    half = max(hi - c, c - lo) or abs(c) or 1.0
    e = Y_BITS - math.frexp(half)[1]  # half 2^e < 2^Y_BITS
    if half * 2.0 ** e > 2 ** Y_BITS - 2:  # leave room for the two roundings
        e -= 1
    M = round(Fraction(c) * Fraction(2) ** e)  # exact, ties to even
    return e, M, math.ldexp(M, -e)


@dataclass
class Grown:
    """A grown forest as read back, and its prediction arrays on the device."""
    trees: Trees
    ptree: object          # device buffers
    pval: object
    importances: list      # F floats, summing to 1 (or all 0)
    oob: array | None      # (n, K + 1): summed out-of-bag predictions and their count
    timings: dict


class Grower:
    """One fit's buffers and plans on one backend."""

    def __init__(self, backend, spec: GrowSpec):
        self.b, self.spec = backend, spec

    async def grow(self, X: array, n: int, F: int, y, progress=None, should_stop=None,
                   pause=None, profile=False) -> Grown:
        """X: row-major n x F, array('f') or array('d'); y: array('d') targets (regression) or
        array('I') class indices."""
        b, spec = self.b, self.spec
        if n > MAX_ROWS:
            raise LimitError(f"{n} rows: the forest trains on at most {MAX_ROWS} rows")
        clock, timings = time.perf_counter, {}
        t0 = clock()
        wg = parallel_bins(b)
        k = {name: await b.kernel("forest", name) for name in KERNELS + (PARALLEL if wg else LOOPING)}
        T, K = spec.n_estimators, spec.n_classes
        step, m, SM = sample_shape(n)
        if spec.crit == MSE:
            ye, ym, mid = fixed_point_scale(y)
        else:
            ye, ym, mid = 0, 0, 0.0
        words, xd = matrix_words(b, X, n, F, f"the {n} x {F} training matrix")
        self.base = dict(n=n, F=F, FW=-(-F // 4), NB=0, C=0, K=K, crit=spec.crit, T=0, tree0=0,
                         seed=spec.seed, boot=int(spec.bootstrap), mss=spec.min_samples_split,
                         msl=spec.min_samples_leaf,
                         max_depth=NONE_DEPTH if spec.max_depth is None else spec.max_depth,
                         mf=spec.max_features, hb=half_bits(F), S=0, NC=0, depth=0, S_cur=1,
                         S_next=0, T_all=T, inv_scale=math.ldexp(1.0, -ye), mid=mid, xd=xd,
                         ye=ye, ym_lo=ym & 0xFFFFFFFF, ym_hi=(ym >> 32) & 0xFFFFFFFF, step=step,
                         SM=SM, S_h=0, s_lo=0)
        # Every buffer and plan of the fit is the fit scope's, freed at the end (on Stop and
        # failure too), but for the prediction arrays, handed to the caller's scope.
        outer = b.current_scope()
        fit = b.scope("forest fit").__enter__()  # current until `finally` closes it
        buf = b.buffer

        if profile:
            b.profile_start()
        try:
            # -- data up; checks, fixed-point targets and the sorted subsample --------------------
            P0 = buf("u32", data=PARAMS.pack(**self.base), uniform=True)
            Xb = buf("u32", data=words)
            flags = buf("u32", 1)
            prep = b.plan().dispatch(k["check_finite"], [P0, Xb, flags], self._grid(n * F))
            if spec.crit == MSE:
                tgt = buf("u32", n)
                yb = buf("u32", data=memoryview(y).cast("B"))
                prep.dispatch(k["targets"], [P0, yb, tgt, flags], self._grid(n))
            else:
                tgt = buf("u32", data=y)
            device_sort = b.name in DEVICE_SORT
            if device_sort:
                samp = buf("u32", F * SM + 1)  # the last word: a copy of the flags
                prep.dispatch(k["sample"], [P0, Xb, samp], self._grid(F * SM))
                for kk in (2 ** i for i in range(1, SM.bit_length())):
                    for j in (kk >> i for i in range(1, kk.bit_length())):
                        Ps = buf("u32", uniform=True, data=SORT.pack(j=j, k=kk, len=SM, count=F))
                        prep.dispatch(k["sort_pass"], [Ps, samp], self._grid(F * SM // 2))
                prep.copy(flags, samp, 1, dst_offset=F * SM)
            timings["upload"] = clock() - t0  # kernels (compiled once), data up, plans recorded
            await b.run(prep)
            if device_sort:
                got = await b.read(samp)
                bad = got[F * SM]
                values = array("f")
                values.frombytes(memoryview(got)[:F * SM].cast("B"))
                columns = [values[f * SM:f * SM + m] for f in range(F)]
            else:
                bad = (await b.read(flags))[0]
            if bad & NOT_FINITE_X:
                raise ValueError("X has NaN or infinite values (or values beyond float32): "
                                 "impute or drop them")
            if bad & NOT_FINITE_Y:
                raise ValueError("y has NaN or infinite values")
            if not device_sort:
                columns = sorted_columns(X, n, F)
            timings["sort"] = clock() - t0 - timings["upload"]  # checks, fixed point, the sort
            edges, fmeta, _ = edges_from_sorted(columns, spec.n_bins)
            timings["thresholds"] = clock() - t0

            NB = sum(fmeta[1::2])
            z = self.z = plan_sizes(b, n, F, NB, spec)
            C, NC, S, S_h, Tb = z.C, z.NC, z.S, z.S_h, z.Tb
            self.base.update(NB=NB, C=C, T=Tb, S=S, NC=NC, S_h=S_h)
            b.write(P0, PARAMS.pack(**self.base))
            eb = buf("f32", data=edges)
            fb = buf("u32", data=fmeta)
            binned = buf("u32", n * z.FW)
            await b.run(b.plan().dispatch(k["bin_features"], [P0, Xb, eb, fb, binned],
                                          self._grid(n * z.FW)))
            await b.finish()
            timings["binning"] = clock() - t0
            t1 = clock()

            # -- the trees, batch by batch, level by level ----------------------------------------
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
            passes = S_h < S  # a level's slots in several passes, one histogram buffer
            hist = [buf("u32", Tb * S_h * NB * C) for _ in range(1 if passes else 2)]
            prev = buf("u32", 4) if passes else None  # split_scan's parent level: not read then
            slots = [buf("u32", Tb * S * 4) for _ in range(2)]
            childmap = buf("u32", Tb * S * 2)
            left = buf("u32", Tb * S * C)
            cand = buf("u32", Tb * S * F * 4)

            init = (b.plan().clear(state)
                    .dispatch(k["bootstrap"], [P0, state], self._grid(Tb * n))
                    .dispatch(k["init_trees"], [P0, slots[0], nodes, meta], self._grid(Tb * S)))
            final = b.plan().dispatch(k["finalize"], [P0, nodes, meta, eb, fb, ptree, pval],
                                      self._grid(Tb * NC))
            if oobb is not None:
                final.dispatch(k["oob"], [P0, Xb, ptree, pval, state, oobb], self._grid(n))
            level_params, level_plans = [], []  # per level: [(uniform, params)], plan
            prefix, scan = (k[name] for name in (PARALLEL if wg else LOOPING))

            def per_feature(sp):  # a workgroup, or a thread, per (tree, slot of the pass, feature)
                return grid(Tb * sp * F, wgs) if wg else self._grid(Tb * sp * F)
            s_min = max(spec.min_samples_split, 2 * spec.min_samples_leaf)
            batch = [0, Tb]  # first tree, trees
            wgs = b.limits["maxComputeWorkgroupsPerDimension"]

            def level(d):
                """The recorded plan of level d: made once, run for every batch."""
                while len(level_plans) <= d:
                    e = len(level_plans)
                    s_cur = level_slots(e, n, s_min)
                    last = z.levels is not None and e == z.levels - 1
                    s_next = 0 if last else level_slots(e + 1, n, s_min)
                    cur, other = slots[e % 2], slots[1 - e % 2]
                    h = hist[e % len(hist)]
                    parent = prev if passes else hist[1 - e % 2]
                    plan, ups = b.plan(), []
                    for s_lo in range(0, s_cur, S_h):
                        sp = min(S_h, s_cur - s_lo)
                        pp = dict(depth=e, S_cur=s_cur, S_next=s_next, s_lo=s_lo)
                        P = buf("u32", uniform=True, data=PARAMS.pack(**self._params(pp, *batch)))
                        ups.append((P, pp))
                        (plan.dispatch(k["hist_clear"], [P, cur, h], grid(Tb * -(-sp // HC_SLOTS), wgs))
                         .dispatch(k["hist_build"], [P, binned, fb, tgt, state, cur, h], self._grid(Tb * n))
                         .dispatch(prefix, [P, fb, cur, h], per_feature(sp))
                         .dispatch(scan, [P, fb, cur, h, nodes, cand, xlogx, parent], per_feature(sp))
                         .dispatch(k["split_pick"], [P, fb, cur, h, nodes, cand, xlogx, left],
                                   self._grid(Tb * sp)))
                    P = ups[0][0]
                    plan.dispatch(k["alloc"], [P, cur, nodes, left, other, childmap, meta], grid(Tb, wgs))
                    if not last:
                        plan.dispatch(k["route_rows"], [P, binned, state, cur, nodes, childmap],
                                      self._grid(Tb * n))
                    level_params.append(ups)
                    level_plans.append(plan)
                return level_plans[d]

            # Levels go to the GPU in groups (py_core.gpu.pacing), each one submission sized to
            # take about GROUP_SECONDS at the measured rate; after each the fit waits for the GPU
            # (onSubmittedWorkDone), reports the levels it has done, and honours Stop and Pause.
            # Deeper or unbounded trees (> 16 levels) also read `meta` every CHECK_EVERY levels:
            # is any node still open? PACED = False: a batch of fixed depth is one submission
            # and nothing waits (the benchmark's comparison).
            deep = z.levels is None or z.levels > 16
            levels_total = z.levels or max(1, math.ceil(math.log2(max(2, n))) + 4)  # for progress
            pacer = Pacer(GROUP_SECONDS) if PACED else None
            while batch[0] < T:
                done = batch[0]
                batch[1] = nt = min(Tb, T - done)
                b.write(P0, PARAMS.pack(**self._params({}, done, nt)))
                for ups in level_params:
                    for P, pp in ups:
                        b.write(P, PARAMS.pack(**self._params(pp, done, nt)))
                d = 0  # levels of this batch submitted
                while True:
                    end = z.levels if z.levels is not None else d + CHECK_EVERY
                    stop_at = min(end, (d // CHECK_EVERY + 1) * CHECK_EVERY) if deep else end
                    g = pacer.size(stop_at - d) if pacer else stop_at - d
                    plans = ([init] if d == 0 else []) + [level(e) for e in range(d, d + g)]
                    d += g
                    last = z.levels is not None and d >= z.levels
                    t_group = clock()
                    await b.run(plans + ([final] if last else []))
                    if pacer:
                        await b.finish()
                        pacer.done(g, clock() - t_group)
                    if should_stop is not None and should_stop():
                        from ..jobs import Stopped
                        raise Stopped(f"stopped at level {d} of trees {done + 1}-{done + nt}, with "
                                      f"{done} of {T} trees finished: the forest is discarded "
                                      "(nothing is stored)")
                    if pause is not None:
                        await pause()  # waits while paused; raises Stopped
                    if progress is not None:
                        total = max(levels_total, d)
                        fraction = (done + nt * min(1.0, d / total)) / T
                        spent = clock() - t1
                        progress({"stage": f"trees {done + 1}-{done + nt} of {T}: level {d}/{total}",
                                  "trees": [done, T], "level": [d, total], "fraction": fraction,
                                  "eta_s": spent * (1 - fraction) / fraction if pacer else None})
                    if last:
                        break
                    if deep and d % CHECK_EVERY == 0:
                        m_ = await b.read(meta)  # a few words: is any node still open?
                        if not any(m_[2 * (done + t) + 1] for t in range(nt)):
                            await b.run(final)
                            break
                batch[0] = done + nt
            await b.finish()
            timings["levels"] = clock() - t1
            t1 = clock()

            # -- the one readback of the fit --------------------------------------------------------
            G = -(-NC // IMP_CHUNK)
            imp = buf("f32", T * G * F)
            Pi = buf("u32", uniform=True, data=PARAMS.pack(**self._params({}, 0, T)))
            await b.run(b.plan().dispatch(k["importance"], [Pi, nodes, meta, imp],
                                          grid(T * G * -(-F // WG), wgs)))
            parts = await self._read_all([meta, ptree, pval, imp] + ([oobb] if oobb else []))
            timings["readback"] = clock() - t1
            t1 = clock()
            counts = array("I", parts[0][0::2])
            trees = Trees(T, NC, K, counts, parts[1], _typed("f", parts[2]))
            importances = _importances(_typed("f", parts[3]), counts, T, G, F)
            oob = _typed("f", parts[4]) if oobb else None
            timings["host"] = clock() - t1
            if profile:
                for name, (seconds, count) in by_label(await b.profile_stop()).items():
                    timings["k_" + name.split(".")[-1]] = seconds
                profile = False
            if outer is not None:
                outer.own(ptree, pval)
            else:  # the caller frees them (b.free)
                fit._forget(ptree)
                fit._forget(pval)
            return Grown(trees, ptree, pval, importances, oob, timings)
        finally:  # also when stopped or failed
            if profile:
                await b.profile_stop()
            fit.__exit__(None, None, None)

    async def _read_all(self, bufs) -> list:
        """The buffers' words, in one readback when they fit one buffer."""
        b = self.b
        total = sum(x.length for x in bufs)
        if 4 * total > _cap(b):
            return [await b.read(x) for x in bufs]
        async with b.scope("readback"):
            pack = b.buffer("u32", total)
            plan, at = b.plan(), 0
            for x in bufs:
                plan.copy(x, pack, x.length, dst_offset=at)
                at += x.length
            await b.run(plan)
            words, out, at = await b.read(pack), [], 0
        for x in bufs:
            out.append(words[at:at + x.length])
            at += x.length
        return out

    def _params(self, level: dict, tree0, nt):
        return dict(self.base, **level, tree0=tree0, T=nt)

    def _grid(self, threads):
        return grid(-(-threads // WG), self.b.limits["maxComputeWorkgroupsPerDimension"])


def _typed(code: str, words: array) -> array:
    out = array(code)
    out.frombytes(memoryview(words).cast("B"))
    return out


def _importances(imp: array, counts: array, T: int, G: int, F: int) -> list[float]:
    """Mean decrease in impurity, as scikit-learn: per tree the decreases summed by feature and
    normalised, then averaged over the trees that split and normalised. imp: (T, G, F)."""
    total, used = [0.0] * F, 0
    for t in range(T):
        if counts[t] < 2:
            continue
        used += 1
        acc = imp[t * G * F:(t * G + 1) * F].tolist()
        for g in range(1, G):
            acc = [a + v for a, v in zip(acc, imp[(t * G + g) * F:(t * G + g + 1) * F])]
        s = sum(acc)
        if s > 0:
            total = [a + v / s for a, v in zip(total, acc)]
    s = sum(total)
    if not used or s <= 0:
        return total if used else [0.0] * F
    return [v / s for v in total]
