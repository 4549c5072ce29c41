"""Growing a forest on a backend: buffers, the recorded plan of each level, the readback.

The method (kernels in `py_core/kernels/forest/forest.wgsl`):

1. The data go up as they are (f64 values are rounded to f32 by the kernels, as the CPU would).
   `check_finite` refuses NaN and infinities, `targets` turns regression y into exact fixed point,
   and `sample` + `sort_pass` sort a subsample of each feature on the device, `thresholds` picks
   each feature's bins from it there (as `binning.py` does on the CPU, for the reference backend)
   and only those come back (a bin per value for a feature of at most max(n_bins, exact_bins)
   values); `bin_features` bins the rows, four 8-bit bins a word, or two 16-bit ones where a
   feature has more than 256 bins (`b16`: then `split_scan_wg` scans that feature in one thread).
2. Trees grow in batches sized to the adapter's limits. For a batch, `bootstrap` counts n draws
   with replacement per tree into each row's state (slot << 8 | count), from a hash RNG.
3. Level by level, all trees of the batch at once, a plan recorded once per level runs:
   `hist_clear` (zeroes the histograms this level builds), `hist_build` (integer atomics into
   (tree, slot, feature, bin): only the smaller child of each split, or the root), `split_vary`
   (the other open slots' histograms as parent - sibling; per feature of an open slot its rank
   in the node's random permutation and whether it varies in the node), `split_rows` (the same
   for SMALL slots, nodes of at most `small_rows` rows, from their listed rows: and only the bins
   of the features the node scans, summed from those rows), `split_small` (in deep trees, a
   SMALL node of at most `row_scan_rows` rows gets its split with no histogram at all: a thread
   a scanned feature walks the bins present among its rows, each left side summed from them,
   scored as `split_scan` scores them), `split_scan` (the best split of each
   feature that varies among the first max_features of the node's random permutation, or of the
   first that varies if none of those does, as scikit-learn's splitter draws them: those
   features' bins summed along, an f32 gain per candidate, correctly rounded), `split_pick` (per
   slot: the best over its random feature subset, and the left child's totals), `alloc` (per
   tree, a prefix sum numbers the children and gives the open ones slots of the next level, and
   SMALL ones room in the tree's list of rows: counts, prefix sums, records) and `route_rows` (each row moves to its child's slot; into a SMALL one, it is
   listed there).
   Histograms stay raw: only the few scanned features of a node are ever summed along their
   bins, and a SMALL node has only those. On GPUs the three split kernels run as their `_wg`
   versions (`parallel_bins`).
   Nothing is read back between levels: the number of slots a level can need is bounded from
   n, min_samples_split and min_samples_leaf, so every grid is fixed, and a batch of trees of
   depth <= 16 is one submission. Deeper trees read their open pairs back past FIRST_LEVELS,
   each level's from a snapshot read while the next level (AHEAD; in a tree's tail TAIL_AHEAD)
   is already queued, its grids sized to the pairs read (doubled a level ahead).
   Memory (sizes.py): two levels of histograms, Tb x S_h x NB x C words each, sized to the
   histogram budget and the adapter's binding limit, and the batch's node records; the trees are
   grown in batches of Tb. A level with more slots than a buffer holds (S_h: 128 MiB adapters,
   deep trees, many classes on wide data) is done in passes of S_h slots; its children, and those
   of the level before it, are all built by atomics (no whole parent level to subtract from);
   every other level keeps the subtraction trick, and the forest is the same either way.
4. After a batch's last level, `finalize` turns its nodes into the (feature, threshold, left
   child, value) arrays that `predict` and `oob` walk, and `importance` sums each feature's
   impurity decrease. Trees of bounded depth whose worst case fits a buffer go into one pair of
   arrays at NC nodes a tree, made at the start (`Sizes.dense`: nothing read back until the end);
   other forests into a pair a batch sized by the nodes its trees have (their sizes read back,
   a few words: deep trees read them level by level anyway), each checked against the room left
   as the forest grows. It comes back in packs of PACK_BYTES (sizes.py), each de-interleaved
   into the planar arrays of `trees.Trees`, which the export hands over as they are: the host
   holds the forest once. In the tab (READ_BEHIND) a batch's packs are copied and mapped as
   soon as the batch is done and its size known, and held (READ_BEHIND_BYTES at most) while
   later batches grow; the rest comes back at the end, two packs at a time. There the packs and
   the arrays stay in JavaScript (`trees.JSTrees`): Pyodide passes no Python buffer above 2 GiB
   of its heap to JavaScript, and a forest of 1M rows grown to its leaves is 1.9 GiB.
5. Live plots (`on_trees`): the forest grows in at least LIVE_BATCHES batches, and after those
   that end a LIVE_BATCHES-th of the trees (but the last) the caller gets the trees finished so
   far (`Partial`): it predicts with their prediction arrays as they stand and sums their
   importances, which each batch leaves on the device; nothing else is read back. The trees are
   the same however they are batched.
"""
from __future__ import annotations

import asyncio
import contextlib
import math
import time
from array import array
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from itertools import accumulate

from ..errors import Stopped
from ..gpu import LimitError
from ..gpu.backend import by_label
from ..gpu.pacing import GROUP_SECONDS, Pacer
from ..kernels.forest import (
    BINS,
    ENTROPY,
    HC_SLOTS,
    MSE,
    NOT_FINITE_X,
    NOT_FINITE_Y,
    PARAMS,
    SORT,
    WG,
    grid,
    hist_groups,
    numbered,
    perm_rounds,
    record_words,
    wg_items,
)
from .binning import edges_from_sorted, sample_shape, sorted_columns
from .sizes import (
    DEEP_LEVELS,
    PACK_BYTES,
    READ_BEHIND_BYTES,
    GrowSpec,
    batch_buffers,
    cap_bytes,
    check_fits,
    forest_bytes,
    level_slots,
    plan_sizes,
    size_text,
)
from .trees import Chunk, DeviceTrees, JSTrees, Trees, matrix_words
from .trees import predict as predict_rows

NONE_DEPTH = 0xFFFFFFFF  # max_depth=None in the kernels' params
FIRST_LEVELS = 8  # levels a deep (max_depth > DEEP_LEVELS or None) batch grows before reading back open slots
AHEAD = 1        # levels a deep batch runs past the last whose open pairs the host has read ...
TAIL_AHEAD = 3   # ... or this many while a level's bound is at most TAIL_SLOTS slots a tree: the
TAIL_SLOTS = 512  # tail of a deep tree, levels of a few live slots whose GPU time (H200: under a
                  # millisecond) is shorter than a readback's round trip (about 5 ms in Chromium)
MAX_ROWS = 2**24 - 1  # weights and counts stay exact in f32
Y_BITS = 23  # regression targets as signed fixed point of this many bits (w * y fits in i32)
DEVICE_SORT = ("webgpu", "native")  # backends that sort the binning subsample themselves
LIVE_BATCHES = 8  # batches a fit with live plots grows in (fewer when it has fewer trees): a
                  # surface that redraws about eight times, at a few waits' cost on a GPU
SMALL_ROWS = 2048  # a child of at most this many rows (small_rows: fewer where histograms are
                   # cheap) is split from its listed rows (split_rows) rather than from histograms
                   # of every feature; the forest is the same either way
MIN_SMALL = 256    # below this many, no node is (small_rows)
ROW_STEPS = 4096   # a deep tree's SMALL node is split from its rows without histograms (split_small)
                   # up to the rows whose scan takes a thread about this many steps a feature:
                   # rows x rows x (lanes + 1) (row_scan_rows: 32 rows for regression)
LEVEL_MARK = "@"   # a level's dispatches are labelled kernel@level (kernel_times)

READ_BEHIND = ("webgpu",)  # backends whose readbacks wait without blocking (the tab's mapAsync):
                          # there the forest's batches are read back while later ones grow
                          # (_issue). The native backend blocks on a map, so it reads all at
                          # the end, and holds the forest once (tests/test_forest_memory.py)
KERNELS = ("check_finite", "sample", "sort_pass", "thresholds", "targets", "bin_features", "bootstrap",
           "init_trees", "hist_build", "split_rows", "split_small", "alloc", "alloc_count", "alloc_scan",
           "alloc_write", "route_rows", "finalize", "importance", "oob")
ALLOC_SLOTS = 1024  # levels of more slots a tree number their children in three dispatches (a
                    # thread per slot), others in one (a workgroup per tree walking the slots)
# The level's clear and split kernels: a thread per (tree, slot[, feature]) or a workgroup per
# HC_SLOTS slots (CPUs), or a workgroup per item (GPUs: wg_items).
LOOPING = ("hist_clear", "split_vary", "split_scan", "split_pick")
PARALLEL = ("hist_clear_wg", "split_vary_wg", "split_scan_wg", "split_pick_wg")
CPU_ADAPTERS = ("swiftshader", "llvmpipe", "lavapipe")


def parallel_bins(backend) -> bool:
    """Whether the PARALLEL kernels run: on GPUs (2.5x faster on an H200, measured with the kernel
    set before raw histograms), not on CPU adapters, where a workgroup's barriers cost more than
    one thread's loop (25x slower on lavapipe)."""
    a = backend.adapter
    named = " ".join(str(a.get(k, "")) for k in ("vendor", "architecture", "device", "description"))
    return (backend.name in DEVICE_SORT and not a.get("is_fallback_adapter")
            and not any(cpu in named.lower() for cpu in CPU_ADAPTERS))


def row_scan_rows(C: int, crit: int) -> int:
    """Rows up to which a SMALL node of a deep tree is split from its rows alone (split_small): a
    thread scans a feature in about rows x rows x (lanes + 1) steps (a pass over the rows for
    each bin present and lane), at most ROW_STEPS; a histogram node clears, builds, derives and
    scans NB x C words. Most nodes of a tree grown to its leaves hold a few rows."""
    lanes = C - 1 if crit == MSE else C + (C - 1 if crit == ENTROPY else 0)
    return math.isqrt(ROW_STEPS // (lanes + 1))


def forest_kernels(backend, wide: bool | None = None) -> list:
    """[(family, entry, constants), ...]: the kernels a fit on `backend` compiles (wide: the
    PARALLEL set; None: as parallel_bins picks), and predict's: what the tab compiles ahead of a
    forest job (Backend.warm). None has override constants, so the set is the adapter's alone."""
    wide = parallel_bins(backend) if wide is None else wide
    names = KERNELS + (PARALLEL + ("hist_build_wg",) if wide else LOOPING) + ("predict",)
    return [("forest", name, None) for name in names]


def small_rows(NB: int, C: int, F: int, max_features: int, crit: int, deep: bool) -> int:
    """Rows up to which a node is split from its rows (split_rows; 0: none is): in deep trees
    (max_depth None or over DEEP_LEVELS, grown a level a submission) only those split without
    histograms (row_scan_rows: from rows summed into histograms, they measured slower there, 200k
    x 50 with 10 classes 16.9 s against 13.4 s), else where adding them
    into the bins of the features it scans (min(max_features, F); 2 atomics a row and feature for
    classes, 4 for regression) costs less than a histogram node's NB x C words (zeroed and summed,
    or derived as parent - sibling), with a margin of 8 for listing the rows and ranking every
    feature among them; at most SMALL_ROWS, and none below MIN_SMALL, where listing every row of
    the tree's deep nodes costs more than it saves. On the H200
    (bench/results/2026-11-27-h200-rows.md): 10 classes on 50 features (NB x C = 140,800, 1,257
    rows) 13-16% faster; regression on 20 features (20,480 words, 106 rows) 10% slower."""
    if deep:
        return row_scan_rows(C, crit)
    atoms = 4 if crit == MSE else 2
    rows = min(SMALL_ROWS, NB * C // (8 * min(max_features, F) * atoms))
    return rows if rows >= MIN_SMALL else 0


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
class Flight:
    """A submission of levels not yet waited for (Grower._wait)."""
    done: object     # awaitable: the work up to it is done (backend.finish_soon; not awaited by
                     # a wait for all, which is one backend.finish)
    levels: int      # levels it holds
    where: tuple     # (first tree, trees, levels submitted of the batch) once it is done
    finished: list   # [(first tree, trees)]: batches whose trees it finishes
    t: float         # when it was submitted


@dataclass
class Grown:
    """A grown forest as read back, and its prediction arrays on the device."""
    trees: Trees
    device: DeviceTrees    # the same on the device, for prediction
    importances: list      # F floats, summing to 1 (or all 0)
    oob: array | None      # (n, K + 1): summed out-of-bag predictions and their count
    timings: dict


class Partial:
    """The first `trees` trees of a fit in progress, finished on the device: what live plots need.
    Valid only during the `on_trees` call that receives it."""

    def __init__(self, grower: "Grower", trees: int):
        self._g, self.trees, self.n_estimators = grower, trees, grower.T

    async def predict(self, X: array, n: int) -> array:
        """(n, K) f64: the mean of these trees' leaf values for each of the n rows of X (n x F,
        row-major), as the finished forest's `_predict_raw`."""
        g = self._g
        return await predict_rows(g.b, DeviceTrees(g.T, g.K, g.offs, g.chunks).first(self.trees),
                                  X, n, g.F)

    async def importances(self) -> list[float]:
        """These trees' feature importances (as `feature_importances_`)."""
        g = self._g
        meta, imp = array("I"), array("f")
        await g._read_into(g._whole(g.meta, meta.frombytes) + g._whole(g.imp, imp.frombytes))
        return _importances(imp, meta[:2 * g.T:2], self.trees, g.z.G, g.F)


class Grower:
    """One fit's buffers and plans on one backend."""

    def __init__(self, backend, spec: GrowSpec, parallel_bins: bool | None = None):
        self.b, self.spec = backend, spec
        self.wg = parallel_bins  # True/False: one kernel set or the other; None: by adapter

    async def grow(self, X: array, n: int, F: int, y, progress=None, should_stop=None,
                   pause=None, profile=False, on_trees=None) -> Grown:
        """X: row-major n x F, array('f') or array('d'); y: array('d') targets (regression) or
        array('I') class indices. The steps below, in order; every buffer they make is freed at
        the end (also when stopped or failed) but the forest's own prediction arrays.
        `await on_trees(Partial)` about LIVE_BATCHES times, as batches of trees finish (live
        plots); the time it takes is timings["live"], not part of "levels"."""
        b = self.b
        self.live = on_trees
        if n > MAX_ROWS:
            raise LimitError(f"{n} rows: the forest trains on at most {MAX_ROWS} rows")
        # Before any data goes up: the data (X, its bins, targets) and the least the trees need.
        check_fits(b, n, F, self.spec, X.itemsize * n * F + 4 * n * (-(-F // 4) + 4))
        self.clock, self.timings, self.t0 = time.perf_counter, {}, time.perf_counter()
        self.n, self.F, self.T, self.K = n, F, self.spec.n_estimators, self.spec.n_classes
        # Every buffer and plan of the fit is the fit scope's, freed at the end (on Stop and
        # failure too), but for the prediction arrays, handed to the caller's scope.
        outer = b.current_scope()
        fit = b.scope("forest fit").__enter__()  # current until `finally` closes it
        # Reading behind (READ_BEHIND): batches finished but not yet read, and those being read
        self.rb = b.name in READ_BEHIND
        self.batches, self.held, self.held_bytes = [], {}, 0
        self.flights, self.sizes = [], None  # submissions not yet waited for, sizes being read (_wait)
        if profile:
            b.profile_start()
        try:
            await self._compile()
            self.timings["compile"] = self.clock() - self.t0  # compiling: the first fit of a backend only
            await self._bin(*await self._upload_and_sort(X, y))
            t1 = self.t_levels = self.clock()
            self._tree_buffers()
            self._fixed_plans()
            self.pacer = Pacer(GROUP_SECONDS)  # levels a submission, from the measured rate
            self.t_ready = self.clock()  # when the GPU was last seen to have finished its work
            self.levels_total = self.z.levels or max(1, math.ceil(math.log2(max(2, n))) + 4)
            live, every = 0.0, -(-self.T // LIVE_BATCHES)  # a redraw each `every` trees
            for done in range(0, self.T, self.z.Tb):
                nt = min(self.z.Tb, self.T - done)
                self.batches.append((done, nt))
                await self._grow_batch(done, nt, progress, should_stop, pause)
                if on_trees is not None and (done + nt) // every > done // every and done + nt < self.T:
                    await self._wait()
                    t_live = self.clock()
                    await on_trees(Partial(self, done + nt))
                    live += self.clock() - t_live
            t_drain = self.clock()
            await b.finish()
            self.timings["drain"] = self.clock() - t_drain  # a round trip: the GPU was done
            self.timings["levels"] = self.clock() - t1 - live
            if on_trees is not None:
                self.timings["live"] = live
            grown = await self._read_back()
            if profile:
                got = await b.profile_stop()
                grown.timings.update(kernel_times(by_label(got)), span=got["span"])
                profile = False
            for x in grown.device.buffers():
                if outer is not None:
                    outer.own(x)
                else:  # the caller frees them (b.free)
                    fit._forget(x)
            return grown
        finally:  # also when stopped or failed
            await self._settle()
            if profile:
                await b.profile_stop()
            fit.__exit__(None, None, None)

    def _buf(self, *args, **kwargs):
        """A buffer of this fit (the fit's scope frees it when the fit ends)."""
        return self.b.buffer(*args, **kwargs)

    async def _compile(self) -> None:
        """The kernels (the parallel-bins set on GPUs) and the parameters every kernel shares."""
        b, spec, n, F = self.b, self.spec, self.n, self.F
        self.wide = parallel_bins(b) if self.wg is None else self.wg
        kernels = forest_kernels(b, self.wide)
        b.warm(kernels)  # side by side, not one after another (compiled ahead: found done)
        self.k = {name: await b.kernel(family, name) for family, name, _ in kernels}
        self.step, self.m, SM = sample_shape(n)
        self.base = dict(n=n, F=F, FW=-(-F // 4), NB=0, C=0, K=self.K, crit=spec.crit, T=0,
                         tree0=0, seed=spec.seed, boot=int(spec.bootstrap),
                         mss=spec.min_samples_split, msl=spec.min_samples_leaf,
                         max_depth=NONE_DEPTH if spec.max_depth is None else spec.max_depth,
                         mf=spec.max_features, pr=perm_rounds(F), S=0, NC=0, depth=0, S_cur=1,
                         S_next=0, T_all=self.T, inv_scale=1.0, mid=0.0, xd=0, ye=0, ym_lo=0,
                         ym_hi=0, step=self.step, SM=SM, S_h=0, s_lo=0, small=0, b16=0, row_scan=0,
                         H_cur=0, H_next=0)

    async def _upload_and_sort(self, X: array, y) -> tuple[array, array]:
        """Data up; finite checks, fixed-point regression targets and, on GPU backends, the
        binning subsample sorted and each feature's bins picked from it on the device (one
        submission, one readback). Returns the bins: (edges, fmeta), as edges_from_sorted."""
        b, spec, n, F, k, SM = self.b, self.spec, self.n, self.F, self.k, self.base["SM"]
        buf, clock = self._buf, self.clock
        if spec.crit == MSE:
            ye, ym, mid = fixed_point_scale(y)
            self.base.update(inv_scale=math.ldexp(1.0, -ye), mid=mid, ye=ye, ym_lo=ym & 0xFFFFFFFF,
                             ym_hi=(ym >> 32) & 0xFFFFFFFF)
        words, self.base["xd"] = matrix_words(b, X, n, F, f"the {n} x {F} training matrix")
        self.P0 = P0 = buf("u32", data=PARAMS.pack(**self.base), uniform=True)
        self.Xb = Xb = buf("u32", data=words)
        flags = buf("u32", 1)
        prep = b.plan().dispatch(k["check_finite"], [P0, Xb, flags], self._grid(n * F))
        if spec.crit == MSE:
            self.tgt = buf("u32", n)
            yb = buf("u32", data=memoryview(y).cast("B"))
            prep.dispatch(k["targets"], [P0, yb, self.tgt, flags], self._grid(n))
        else:
            self.tgt = buf("u32", data=y)
        device_sort = b.name in DEVICE_SORT
        nb, exact, m = self.spec.n_bins, self.spec.exact_bins, self.m
        nbm = min(nb, m)  # the same bins (m values have at most m distinct ones)
        W = record_words(nbm, exact, m)  # a feature's record: its bins, then (threshold, lo, hi) a bin
        # Each feature's bins picked on the device (`thresholds`), unless their records do not
        # fit a buffer (tens of thousands of features): then the sorted samples come back whole
        on_device = device_sort and 4 * (F * W + 1) <= cap_bytes(b)
        if device_sort:
            samp = buf("u32", F * SM + 1)  # the last word: a copy of the flags
            prep.dispatch(k["sample"], [P0, Xb, samp], self._grid(F * SM))
            for kk in (2 ** i for i in range(1, SM.bit_length())):
                for j in (kk >> i for i in range(1, kk.bit_length())):
                    Ps = buf("u32", uniform=True, data=SORT.pack(j=j, k=kk, len=SM, count=F))
                    prep.dispatch(k["sort_pass"], [Ps, samp], self._grid(F * SM // 2))
            back = samp
            if on_device:
                back = buf("u32", F * W + 1)
                Pb = buf("u32", uniform=True, data=BINS.pack(m=m, SM=SM, F=F, nbins=nbm, exact=exact))
                prep.dispatch(k["thresholds"], [Pb, samp, back],
                              grid(F, b.limits["maxComputeWorkgroupsPerDimension"]))
            prep.copy(flags, back, 1, dst_offset=back.length - 1)
        self.timings["upload"] = clock() - self.t0  # kernels (compiled once), data up, plans
        await b.run(prep)
        got = await b.read(back if device_sort else flags)
        if got[-1] & NOT_FINITE_X:
            raise ValueError("X has NaN or infinite values (or values beyond float32): "
                             "impute or drop them")
        if got[-1] & NOT_FINITE_Y:
            raise ValueError("y has NaN or infinite values")
        if on_device:
            edges, fmeta = array("f"), array("I")
            words = memoryview(got).cast("B").cast("f")
            for f in range(F):
                fmeta.extend((len(edges) // 3, got[f * W]))
                edges.extend(words[f * W + 1:f * W + 1 + 3 * got[f * W]])
        else:
            if device_sort:
                values = memoryview(got).cast("B").cast("f")  # views, not copies
                columns = [values[f * SM:f * SM + m] for f in range(F)]
            else:
                columns = sorted_columns(X, n, F)
            edges, fmeta, _ = edges_from_sorted(columns, nb, exact)
        self.timings["sort"] = clock() - self.t0 - self.timings["upload"]  # checks, fixed point, bins
        return edges, fmeta

    async def _bin(self, edges: array, fmeta: array) -> None:
        """The sizes the bins imply, and the binned matrix."""
        b, n = self.b, self.n
        self.timings["thresholds"] = self.clock() - self.t0
        NB = sum(fmeta[1::2])
        b16 = max(fmeta[1::2]) > 256  # 16-bit bins (a feature of more than 256 values, exact_bins)
        z = self.z = plan_sizes(b, n, self.F, NB, self.spec, b.memory_room(), b16=b16)
        if self.live is not None:  # several batches, each a redraw of the live plots
            z.Tb = min(z.Tb, -(-self.T // LIVE_BATCHES))
        deep = z.levels is None or z.levels > DEEP_LEVELS  # grown a level a submission
        small = small_rows(NB, z.C, self.F, self.spec.max_features, self.spec.crit, deep)
        self.base.update(NB=NB, FW=z.FW, b16=int(b16), C=z.C, T=z.Tb, S=z.S, NC=z.NC, S_h=z.S_h, small=small,
                         row_scan=min(small, row_scan_rows(z.C, self.spec.crit)) if deep else 0)
        b.write(self.P0, PARAMS.pack(**self.base))
        self.eb = self._buf("f32", data=edges)
        self.fb = self._buf("u32", data=fmeta)
        groups = hist_groups(fmeta, z.C) if self.wide else None
        self.groups = groups and (groups[0], self._buf("u32", data=groups))
        self.binned = self._buf("u32", n * z.FW)
        await b.run(b.plan().dispatch(self.k["bin_features"], [self.P0, self.Xb, self.eb, self.fb,
                                                               self.binned], self._grid(n * z.FW)))
        await b.finish()
        self.timings["binning"] = self.clock() - self.t0

    def _tree_buffers(self) -> None:
        """One batch's working set (sizes.batch_buffers: bootstrap state, histograms of two levels,
        slots, node records), each tree's size, first node and importances, the out-of-bag sums,
        and, for a dense forest, its prediction arrays (else made batch by batch: `_chunk`)."""
        spec, z, n, F, T, K, buf = self.spec, self.z, self.n, self.F, self.T, self.K, self._buf
        C, NC, Tb = z.C, z.NC, z.Tb
        if spec.crit == ENTROPY:  # x ln x for every weight a node can have
            self.xlogx = buf("f32", data=array("f", [0.0] + [v * math.log(v) for v in range(1, n + 1)]))
        else:
            self.xlogx = buf("f32", 1)
        deep = z.levels is None or z.levels > DEEP_LEVELS
        words = {what: Tb * w for what, (w, _) in batch_buffers(n, F, z.NB, C, z.S, z.S_h, NC, deep).items()}
        self.state = buf("u32", words["bootstrap state"])
        # Two histogram buffers, this level's and its parent's; a level with more slots than
        # one holds (S_h) runs in passes, and then (and just after) every child is built.
        self.hist = [buf("u32", words["histograms"]) for _ in range(2)]
        self.slots = [buf("u32", words["slots"]) for _ in range(2)]
        self.childmap = buf("u32", words["child map"])
        self.counts = buf("u32", words["slots"])  # alloc's counts a slot, then their prefix sums
        self.left = buf("u32", words["left sides"])
        self.cand = buf("u32", words["split candidates"])  # a pass's slots
        # the slot of each histogram number (numbered levels: `_level`), made by alloc
        self.hmap = buf("u32", words.get("histogram slots", 1))
        # the rows of SMALL slots (planned for in sizes.py either way; none where no node is)
        self.rows = buf("u32", words["row lists"] if self.base["small"] else 1)
        self.nodes = buf("u32", words["node records"])  # the batch's trees
        # per tree its nodes and open pairs; in deep trees then, per tree, its next level's
        # histogram slots (numbered levels: `_level`)
        self.meta = buf("u32", (3 if deep else 2) * T)
        # meta after each of the deep levels in flight (_grow_batch): one is read before the
        # level that writes it again is queued
        self.snap = [buf("u32", self.meta.length) for _ in range(TAIL_AHEAD + 1)]
        self.imp = buf("f32", T * z.G * F)
        self.oobb = buf("f32", n * (K + 1)) if spec.oob and spec.bootstrap else None
        if z.dense:  # tree t from node t * NC on
            self.offs = buf("u32", data=array("I", range(0, T * NC, NC)))
            self.chunks = [Chunk(0, T, buf("u32", 3 * T * NC), buf("f32", K * T * NC))]
        else:
            self.offs, self.chunks = buf("u32", T), []

    def _fixed_plans(self) -> None:
        """The plans every batch runs as they are: `init` (bootstrap, roots) and, for a dense
        forest, `final` (`_final`); the level plans are made on first use (`_level`)."""
        b, k, z, P0, n, Tb = self.b, self.k, self.z, self.P0, self.n, self.z.Tb
        self.wgs = b.limits["maxComputeWorkgroupsPerDimension"]
        self.s_min = max(self.spec.min_samples_split, 2 * self.spec.min_samples_leaf)
        self.init = (b.plan().clear(self.state).clear(self.hmap)  # hmap: the root is number 0
                     .dispatch(k["bootstrap"], [P0, self.state], self._grid(Tb * n))
                     .dispatch(k["init_trees"], [P0, self.slots[0], self.nodes, self.meta],
                               self._grid(Tb * z.S)))
        self.final = self._final(self.chunks[0]) if z.dense else None
        self.level_params, self.level_plans = [], {}  # [(uniform, params)] per plan; (d, slots) -> plan
        self.batch = (0, Tb)  # first tree, trees: what the level uniforms are packed for
        # A batch's levels go in paced groups (_grow_batch) when its depth is fixed (<= 16).
        # Deeper or unbounded trees run their first FIRST_LEVELS levels so, then one level a
        # submission: a small readback of `meta` says how many slots the next level has open,
        # and its plan covers only those (rounded up to a power of two, so plans are reused):
        # deep levels, where few rows are left, cost what their live nodes need, not 2^depth.
        deep = z.levels is None or z.levels > DEEP_LEVELS
        self.head = z.levels if not deep else min(FIRST_LEVELS, z.levels or FIRST_LEVELS)

    def _final(self, chunk: Chunk):
        """The plan that ends a batch: its trees into `chunk`'s prediction arrays (finalize),
        their importances, and the out-of-bag sums of its trees."""
        k, z, P0, Tb = self.k, self.z, self.P0, self.z.Tb
        plan = (self.b.plan()
                .dispatch(k["finalize"], [P0, self.nodes, self.meta, self.eb, self.fb, chunk.ptree,
                                          chunk.pval, self.offs], self._grid(Tb * z.NC))
                .dispatch(k["importance"], [P0, self.nodes, self.meta, self.imp],
                          grid(Tb * z.G * -(-self.F // WG), self.wgs)))
        if self.oobb is not None:
            plan.dispatch(k["oob"], [P0, self.Xb, chunk.ptree, chunk.pval, self.offs, self.state,
                                     self.oobb], self._grid(self.n))
        return plan

    async def _chunk(self, done: int, nt: int, counts) -> None:
        """Trees done .. done + nt - 1, grown, into prediction arrays of their own, sized by their
        node counts (read back): the forest's next chunk, checked against the room left."""
        b, K = self.b, self.K
        nodes = sum(counts)
        room = b.memory_room()
        if room is not None and forest_bytes(1, nodes, K) > room:
            used = sum(x.nbytes for c in self.chunks for x in (c.ptree, c.pval))
            trees = f"trees {done + 1}-{done + nt}" if nt > 1 else f"tree {done + 1}"
            raise LimitError(
                f"the forest outgrew the device memory after {done} of {self.T} trees: {trees} "
                f"{'have' if nt > 1 else 'has'} {nodes} nodes ({size_text(forest_bytes(1, nodes, K))}), "
                f"the trees before take {size_text(used)}, and the backend's memory_budget "
                f"({size_text(b.memory_budget)}) leaves {size_text(room)}: use fewer trees, a "
                f"max_depth or a larger min_samples_leaf (the forest is discarded)")
        b.write(self.offs, array("I", [0, *accumulate(counts)][:-1]), offset=done)
        chunk = Chunk(done, nt, self._buf("u32", 3 * nodes), self._buf("f32", K * nodes))
        self.chunks.append(chunk)
        plan = self._final(chunk)
        await b.run(plan)
        b.free_plan(plan)  # run once: its bind groups go (the submitted work keeps what it needs)
        if self.rb:  # the GPU has just the final: its trees come back while the next batch grows
            self._issue(done, counts)

    def _split_grids(self, sp: int) -> list:
        """The grids of the clear, vary, scan and pick kernels over sp slots of a pass: a
        workgroup per item (GPUs, wg_items), or a thread per (tree, slot[, feature]) and a
        workgroup per HC_SLOTS slots for the clear (CPUs)."""
        Tb, F, wgs = self.z.Tb, self.F, self.wgs
        if self.wide:
            return [grid(wg_items(name, Tb, sp, F, self.spec.max_features, self.z.NB * self.z.C), wgs)
                    for name in PARALLEL]
        return [grid(Tb * -(-sp // HC_SLOTS), wgs), self._grid(Tb * sp * F), self._grid(Tb * sp * F),
                self._grid(Tb * sp)]

    def _hist_read(self, meta, done: int, nt: int) -> int:
        """The most histogram slots any tree done .. done + nt - 1 has at its next level, as
        alloc counts them where they are numbered (after the trees' pairs in meta), rounded up
        to a power of two so that level plans are reused (0 where not numbered: unused)."""
        if not numbered(self.base):
            return 0
        most = max(meta[2 * self.T + done + t] for t in range(nt))
        return 1 << (most - 1).bit_length() if most else 0

    def _hist_bound(self, slots: int) -> int:
        """The histogram slots a level of `slots` slots has at most where they are numbered:
        those of more than `small` rows (but the root), disjoint nodes of the tree's rows."""
        return min(slots, max(1, self.n // (self.base["small"] + 1)))

    def _level(self, e: int, s_cur: int, H: int | None = None):
        """The recorded plan of level e over its first s_cur slots: made once, run for every
        batch (its uniforms rewritten per batch). Its histograms go in passes of S_h slots a
        tree; where they are numbered (deep trees: kernels.forest.numbered), the passes cover
        its histogram slots alone, H of them at most (by default `_hist_bound`'s), and its
        SMALL slots (split_rows, split_small) go in passes of their own over its slots, a cheap
        pair of dispatches each: friedman1's level 12 a histogram pass, not nine, each with
        hist_build over every row of the batch."""
        by_number = numbered(self.base)
        H = (self._hist_bound(s_cur) if H is None else H) if by_number else s_cur
        if (e, s_cur, H) in self.level_plans:
            return self.level_plans[(e, s_cur, H)]
        z, k, n, Tb, wgs = self.z, self.k, self.n, self.z.Tb, self.wgs
        clear, vary, scan, pick = (k[name] for name in (PARALLEL if self.wide else LOOPING))
        last = z.levels is not None and e == z.levels - 1
        # The next level has at most twice these slots (an open slot makes at most one pair of
        # children): a deep level of a few hundred live slots, far below level_slots' bound,
        # keeps the subtraction trick (alloc derives a child when both levels fit S_h).
        s_next = 0 if last else min(level_slots(e + 1, n, self.s_min), 2 * s_cur)
        cur, other = self.slots[e % 2], self.slots[1 - e % 2]
        h, parent = self.hist[e % 2], self.hist[1 - e % 2]
        fb, nodes, cand, xlogx = self.fb, self.nodes, self.cand, self.xlogx
        plan, ups = self.b.plan(), []
        at = lambda kernel: f"{kernel.name}{LEVEL_MARK}{e}"  # noqa: E731 (profiles: a level's time)
        hmap = self.hmap
        # the next level's histograms: at most twice those of this one (its open ones' children)
        H_next = min(self._hist_bound(s_next), 2 * H) if by_number else s_next

        def uniforms(s_lo):
            pp = dict(depth=e, S_cur=s_cur, S_next=s_next, s_lo=s_lo, H_cur=H, H_next=H_next)
            P = self._buf("u32", uniform=True, data=PARAMS.pack(**self._params(pp, *self.batch)))
            ups.append((P, pp))
            return P

        def rows(P, sp):  # SMALL slots: split from their listed rows
            if self.base["small"]:
                plan.dispatch(k["split_rows"], [P, fb, cur, self.tgt, nodes, cand, h, self.binned,
                                                self.rows], grid(Tb * sp, wgs), at(k["split_rows"]))
            if self.base["row_scan"]:
                plan.dispatch(k["split_small"], [P, self.binned, cur, self.tgt, nodes, cand, xlogx, self.left,
                                                 self.rows], grid(Tb * sp, wgs), at(k["split_small"]))

        for s_lo in range(0, H, z.S_h):
            sp = min(z.S_h, H - s_lo)
            P = uniforms(s_lo)
            g_clear, g_vary, g_scan, g_pick = self._split_grids(sp)
            build = [P, self.binned, fb, self.tgt, self.state, cur, h]
            plan.dispatch(clear, [P, cur, h, hmap], g_clear, at(clear))
            if self.groups and s_cur <= 2:  # a slot or two a tree: sums in workgroup memory first
                G, gb = self.groups
                plan.dispatch(k["hist_build_wg"], build + [gb, hmap],
                              grid(wg_items("hist_build_wg", Tb, sp, self.F, 0, 0, n, G), wgs),
                              at(k["hist_build_wg"]))
            else:
                plan.dispatch(k["hist_build"], build, self._grid(Tb * n), at(k["hist_build"]))
            plan.dispatch(vary, [P, fb, cur, h, nodes, cand, xlogx, parent, hmap], g_vary, at(vary))
            if not by_number:
                rows(P, sp)
            (plan.dispatch(scan, [P, fb, cur, h, nodes, cand, xlogx, parent, hmap], g_scan, at(scan))
             .dispatch(pick, [P, fb, cur, h, nodes, cand, xlogx, self.left, hmap], g_pick, at(pick)))
        if by_number:
            for s_lo in range(0, s_cur, z.S_h):
                rows(uniforms(s_lo), min(z.S_h, s_cur - s_lo))
        P = ups[0][0]
        numbering = [P, cur, nodes, self.left, other, self.childmap, self.meta, self.counts, hmap]
        if s_cur > ALLOC_SLOTS:
            (plan.dispatch(k["alloc_count"], numbering, self._grid(Tb * s_cur), at(k["alloc_count"]))
             .dispatch(k["alloc_scan"], numbering, grid(Tb, wgs), at(k["alloc_scan"]))
             .dispatch(k["alloc_write"], numbering, self._grid(Tb * s_cur), at(k["alloc_write"])))
        else:
            plan.dispatch(k["alloc"], numbering, grid(Tb, wgs), at(k["alloc"]))
        if not last:
            plan.dispatch(k["route_rows"], [P, self.binned, self.state, cur, nodes, self.childmap,
                                            other, self.rows], self._grid(Tb * n), at(k["route_rows"]))
        if e >= self.head:  # the open pairs after this level, read while the next one runs
            plan.copy(self.meta, self.snap[e % len(self.snap)], self.meta.length)
        self.level_params.append(ups)
        self.level_plans[(e, s_cur, H)] = plan
        return plan

    async def _grow_batch(self, done: int, nt: int, progress, should_stop, pause) -> None:
        """Trees done .. done + nt - 1, level by level. The first `head` levels go to the GPU in
        groups (py_core.gpu.pacing), each one submission sized to take about GROUP_SECONDS at
        the measured rate, the GPU waited for after each; deep trees then go a level a
        submission sized by the open slots (a small readback of `meta`), until none is open.
        After every submission the fit reports what the GPU has done and honours Stop and
        Pause: within a level on a software adapter, within a quarter second on a GPU."""
        b, z = self.b, self.z
        self.batch = (done, nt)
        b.write(self.P0, PARAMS.pack(**self._params({}, done, nt)))
        for ups in self.level_params:
            for P, pp in ups:
                b.write(P, PARAMS.pack(**self._params(pp, done, nt)))
        pacer = self.pacer
        d = 0  # levels submitted
        while d < self.head:
            g = pacer.size(self.head - d)
            plans = ([self.init] if d == 0 else []) + [
                self._level(e, level_slots(e, self.n, self.s_min)) for e in range(d, d + g)]
            d += g
            if d == z.levels and z.dense:
                plans.append(self.final)
            await b.run(plans)
            finished = [(done, nt)] if d == z.levels and z.dense and self.rb else []  # read once sized
            self.flights.append(Flight(b.finish_soon(), g, (done, nt, d), finished, self.clock()))
            # The GPU is waited for once the work submitted since the last wait is a group's
            # worth: small batches (many trees) share a wait rather than each draining the queue.
            # In a fit of bounded depth (dense), a wait leaves the newest submission queued
            # (ahead): the GPU works on it while the next is recorded, rather than idling from
            # the wait to the next submission (10 classes on the H200: 1.446 s against 1.510).
            # Deep fits, whose later levels wait for each level anyway, wait for all: ahead,
            # they measured 6% slower (bench/results/2026-11-27-h200-ahead.md). The fit's last
            # group is waited for whole, so progress ends at 1.
            if sum(f.levels for f in self.flights) >= pacer.next or d < self.head or done + nt == self.T:
                where = await self._wait(ahead=z.dense and done + nt < self.T)
                await self._between(*(where or (done, nt, d)), progress if where else None, should_stop, pause)
            elif should_stop is not None and should_stop():
                await self._between(done, nt, d, None, should_stop, None)
        if z.dense:  # its trees went to the forest's arrays with the last group
            return
        await self._wait()
        m_ = await b.read(self.meta)  # a few words: the open pairs of each tree's next level
        # Past the head, the levels run AHEAD (TAIL_AHEAD) of what the host knows: while it waits
        # for the open pairs after level e - 1 (the snapshot `_level` copies them into), level e
        # is already queued, sized by the pairs of the last level read, doubled for each level
        # past it (each open slot makes at most one pair: twice its slots at most). The GPU is
        # not left idle through a round trip a level; a level queued past the last open one
        # finds no open slot and does nothing.
        # the open pairs of level `known`, the latest read, and its histogram slots (numbered):
        # the next levels' at most double a level
        known, P, Hk = d, _open_pairs(m_, done, nt), self._hist_read(m_, done, nt)
        s_prev = level_slots(d - 1, self.n, self.s_min)  # the last level's slots
        h_prev = self._hist_bound(s_prev)  # and histogram slots (where numbered)
        reads = []  # [(level, the read of its open pairs)], oldest first
        try:
            while P and known != z.levels:
                while d != z.levels:
                    s_cur = min(level_slots(d, self.n, self.s_min), 2 * s_prev,
                                1 << (2 * P - 1).bit_length() + d - known)
                    if d > known + (TAIL_AHEAD if s_cur <= TAIL_SLOTS else AHEAD):
                        break
                    h_cur = min(self._hist_bound(s_cur), 2 * h_prev, Hk << d - known)
                    await b.run(self._level(d, s_cur, h_cur))
                    s_prev, h_prev, d = s_cur, h_cur, d + 1
                    snap = self.snap[(d - 1) % len(self.snap)]
                    reads.append((d, b.read_soon([(snap, 0, snap.length)])))
                    if d != z.levels:
                        await self._between(done, nt, d, progress, should_stop, pause)
                known, read = reads.pop(0)
                m_ = await read
                P, Hk = _open_pairs(m_, done, nt), self._hist_read(m_, done, nt)
        finally:  # the reads still out (a level queued past the last open one, or Stop)
            for _, read in reads:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await read
        await self._chunk(done, nt, m_[2 * done:2 * (done + nt):2])

    async def _wait(self, ahead: bool = False):
        """Wait for the GPU to finish the work submitted (ahead: all but the newest submission,
        which stays queued); the pacer learns its rate, and the sizes of the batches finished are
        read (ahead: started, and taken at the next wait), their trees' reads started (_issue).
        Returns (first tree, trees, levels) of the last submission waited for; None if none was."""
        keep = 1 if ahead else 0
        if len(self.flights) <= keep:
            return None
        waited, self.flights = self.flights[:len(self.flights) - keep], self.flights[len(self.flights) - keep:]
        t_wait = self.clock()
        if ahead:  # the queue runs in order: the others are done once the last is
            await waited[-1].done
        else:  # one round trip for all, not one a submission
            await self.b.finish()
        now = self.clock()
        self.timings["waited"] = self.timings.get("waited", 0.0) + now - t_wait  # the host blocked
        self.timings["waits"] = self.timings.get("waits", 0) + 1
        self.pacer.done(sum(f.levels for f in waited), now - max(self.t_ready, waited[0].t))
        self.t_ready = now
        await self._take_sizes()
        finished = [x for f in waited for x in f.finished]
        if finished:
            last = finished[-1]
            self.sizes = (self.b.read_soon([(self.meta, 0, 2 * (last[0] + last[1]))]), finished)
            if not ahead:  # the GPU is idle: read them now
                await self._take_sizes()
        return waited[-1].where

    async def _take_sizes(self) -> None:
        """The node counts of the batches whose sizes are being read (_wait): their trees' reads
        started (_issue)."""
        if self.sizes is None:
            return
        (read, batches), self.sizes = self.sizes, None
        m_ = await read
        for done, nt in batches:
            self._issue(done, m_[2 * done:2 * (done + nt):2])

    async def _settle(self) -> None:
        """Every read the fit started, awaited (a failure or Stop: their errors dropped); the
        submissions not waited for are let go (their awaitables run nothing unless awaited)."""
        self.flights = []
        if self.sizes is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self.sizes[0]
            self.sizes = None
        for reads in self.held.values():  # every read started is awaited
            for read in reads:
                if read is not None:
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await read

    async def _between(self, done: int, nt: int, d: int, progress, should_stop, pause) -> None:
        """After a submission the GPU has finished: Stop, Pause, and progress with an estimate."""
        T = self.T
        if should_stop is not None and should_stop():
            raise Stopped(f"stopped at level {d} of trees {done + 1}-{done + nt}, with {done} of "
                          f"{T} trees finished: the forest is discarded (nothing is stored)")
        if pause is not None:
            await pause()  # waits while paused; raises Stopped
        if progress is not None:
            total = max(self.levels_total, d)
            fraction = (done + nt * min(1.0, d / total)) / T
            spent = self.clock() - self.t_levels
            progress({"stage": f"trees {done + 1}-{done + nt} of {T}: level {d}/{total}",
                      "trees": [done, T], "level": [d, total], "fraction": fraction,
                      "eta_s": spent * (1 - fraction) / fraction if fraction > 0 else None})

    def _issue(self, done: int, counts) -> None:
        """Start reading back trees done .. done + nt - 1 (of these node counts), finished on the
        GPU, while later batches grow (READ_BEHIND backends): their packs are copied and mapped
        now (`read_soon`), so each read waits on this batch's work alone, and what comes back is
        held until `_read_back`, READ_BEHIND_BYTES at most (the batches past that: at the end)."""
        nbytes = 4 * (3 + self.K) * sum(counts)
        if self.held_bytes + nbytes > READ_BEHIND_BYTES:
            return
        self.held_bytes += nbytes
        self.held[done] = [self.b.read_soon([x[:3] for x in group], self.b.host_js)
                           for group in self._groups(self._forest_pieces(done, counts, None, None))]

    async def _read_back(self) -> Grown:
        """The fit's readback: tree sizes, importances and out-of-bag sums, then the forest's
        prediction arrays, chunk after chunk, in packs of at most PACK_BYTES, each de-interleaved
        into the planar arrays of `Trees` (allocated once at their size) as it arrives: Python
        holds the forest once and a pack, never a second whole copy (1M rows x 100 trees: 2 GB).
        The batches read while later ones grew (`_issue`, READ_BEHIND_BYTES at most) are
        de-interleaved from what was held."""
        T, K, F, clock = self.T, self.K, self.F, self.clock
        t1 = clock()
        meta, imp, oob = array("I"), array("f"), array("f")
        small = [(self.meta, meta), (self.imp, imp)] + ([(self.oobb, oob)] if self.oobb else [])
        await self._read_into([p for x, sink in small for p in self._whole(x, sink.frombytes)])
        self.timings["readback_sizes"] = clock() - t1  # sizes, importances, out-of-bag sums
        counts = meta[:2 * T:2]
        js = self.b.host_js  # the tab on WebGPU: the forest's host arrays stay in JavaScript
        trees = JSTrees.empty(K, counts, self.b.rt) if js else Trees.empty(K, counts)
        starts, pieces = trees.starts, []
        t2 = clock()
        waited = 0.0  # on reads started behind
        for done, nt in self.batches:
            mine = self._forest_pieces(done, counts[done:done + nt],
                                       lambda node, data, at=starts[done]: trees.put_nodes(at + node, data),
                                       lambda node, data, at=starts[done]: trees.put_values(at + node, data))
            held = self.held.get(done)
            if held is None:
                pieces += mine
                continue
            for i, group in enumerate(self._groups(mine)):
                t3 = clock()
                data = await held[i]
                waited += clock() - t3
                self._put(group, data, js)
                held[i] = None  # its pack goes once put
        self.held = {}
        t3 = clock()
        await self._read_into(pieces, js)
        self.timings["readback"] = clock() - t1
        self.timings.update(readback_alloc=t2 - t1 - self.timings["readback_sizes"], readback_behind=waited,
                            readback_put=t3 - t2 - waited, readback_rest=clock() - t3)
        t1 = clock()
        importances = _importances(imp, counts, T, self.z.G, F)
        self.timings["host"] = clock() - t1
        return Grown(trees, DeviceTrees(T, K, self.offs, self.chunks), importances,
                     oob if self.oobb else None, self.timings)

    def _forest_pieces(self, t0: int, counts, put_nodes, put_values) -> list:
        """The pieces (`_read_into`) that bring the prediction arrays of trees t0 .. t0 +
        len(counts) - 1 (a batch, of these node counts): each run of nodes that follow one
        another (a batch's chunk holds its trees end to end; the dense one has tree t from node
        t * NC on, so a run ends at a tree with fewer than NC), cut at whole nodes into packs.
        put_nodes(node, data), put_values(node, data): node counted from tree t0's first (None:
        pieces without puts, for `_issue`)."""
        z, K = self.z, self.K
        chunk = self.chunks[0] if z.dense else next(c for c in self.chunks if c.tree0 == t0)
        runs, at = [], 0  # [first node in the chunk, nodes, first node counted from tree t0's]
        for i, m in enumerate(counts):
            first = (t0 + i) * z.NC if z.dense else at
            if runs and runs[-1][0] + runs[-1][1] == first:
                runs[-1][1] += m
            else:
                runs.append([first, m, at])
            at += m
        step = self._pack_words() // max(3, K)  # nodes a piece
        pieces = []
        for first, nodes, node in runs:
            for lo in range(0, nodes, step):
                m = min(step, nodes - lo)
                pieces.append((chunk.ptree, 3 * (first + lo), 3 * m, put_nodes and partial(put_nodes, node + lo)))
                pieces.append((chunk.pval, K * (first + lo), K * m, put_values and partial(put_values, node + lo)))
        return pieces

    def _pack_words(self) -> int:
        """Words a readback brings at most: PACK_BYTES, or a buffer's worth where less."""
        return min(PACK_BYTES, cap_bytes(self.b)) // 4

    def _whole(self, buf, put) -> list:
        """The pieces (`_read_into`) that bring all of buf, in order, a pack at most each."""
        pack = self._pack_words()
        return [(buf, at, min(pack, buf.length - at), put) for at in range(0, buf.length, pack)]

    def _groups(self, pieces) -> list:
        """`pieces` cut into runs of consecutive ones of a pack at most: a readback each."""
        pack, groups, total = self._pack_words(), [], 0
        for piece in pieces:
            if not groups or total + piece[2] > pack:
                groups.append([])
                total = 0
            groups[-1].append(piece)
            total += piece[2]
        return groups

    @staticmethod
    def _put(group, data, js: bool) -> None:
        """Each piece's put(bytes) from `data`, the group's words end to end (a view of it, valid
        during the call; js: a Uint8Array)."""
        at = 0
        for _, _, words, put in group:
            put(data.subarray(4 * at, 4 * (at + words)) if js else
                memoryview(data).cast("B")[4 * at:4 * (at + words)])
            at += words

    async def _read_into(self, pieces, js: bool = False) -> None:
        """put(bytes) for each (buffer, first word, words, put) of `pieces` (a pack at most each),
        in order: consecutive pieces are copied into one buffer of a pack at most and read back
        together, the next pack's read started before this one's pieces are put. js: each pack is
        read into JavaScript and put gets a Uint8Array view of it (JSTrees)."""
        groups = self._groups(pieces)
        start = lambda i: self.b.read_soon([x[:3] for x in groups[i]], js)  # noqa: E731
        reads = [start(i) for i in range(min(2, len(groups)))]
        try:
            for i, group in enumerate(groups):
                data = await reads[i]
                reads[i] = None  # its pack goes once put
                if i + 2 < len(groups):
                    reads.append(start(i + 2))
                self._put(group, data, js)
        finally:  # every read started is awaited (a failure: the others' are dropped)
            for read in reads[i + 1:] if groups else []:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await read

    def _params(self, level: dict, tree0, nt):
        return dict(self.base, **level, tree0=tree0, T=nt)

    def _grid(self, threads):
        return grid(-(-threads // WG), self.b.limits["maxComputeWorkgroupsPerDimension"])


def _open_pairs(meta, done: int, nt: int) -> int:
    """The most open pairs of children any tree done .. done + nt - 1 has at its next level."""
    return max(meta[2 * (done + t) + 1] for t in range(nt))


def kernel_times(labels: dict) -> dict:
    """A profile's {label: [seconds, dispatches]} (by_label) as timings: k_KERNEL, the kernel's
    seconds over the fit; for a level's dispatches (labelled KERNEL@LEVEL), also kl_LEVEL and
    kn_LEVEL, the level's seconds and dispatches over every batch, and kLEVEL_KERNEL. (The fit's
    `span` beside them: its submissions' first start to last end, summed: the GPU's busy time
    with the gaps between dispatches.)"""
    out: dict = {}
    for label, (seconds, count) in labels.items():
        name, _, level = label.partition(LEVEL_MARK)
        name = name.split(".")[-1]
        out["k_" + name] = out.get("k_" + name, 0.0) + seconds
        if level:
            for key, v in ((f"kl_{level}", seconds), (f"kn_{level}", count), (f"k{level}_{name}", seconds)):
                out[key] = out.get(key, 0) + v
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
