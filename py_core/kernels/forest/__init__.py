"""Reference of `forest.wgsl`: the random forest's kernels in plain Python.

Each function does what the whole dispatch does, over `array.array` buffers in binding order
(see the shader for shapes). Where the WGSL decides a split it computes in f32; here every such
step is rounded through `array('f')` at the same points, so the same forest comes out. Elsewhere
(leaf values, importances, prediction) results agree within float tolerance. The hash RNG and
the feature permutation are shared with `py_core.forest` through this module.
"""
from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from fractions import Fraction
from itertools import accumulate
from struct import Struct as _Struct

from ...rng import hash3, pcg
from .. import reference
from ..family import Family
from ..layout import Struct

PARAMS = Struct(
    "n:u32 F:u32 FW:u32 NB:u32 C:u32 K:u32 crit:u32 T:u32 "
    "tree0:u32 seed:u32 boot:u32 mss:u32 msl:u32 max_depth:u32 mf:u32 pr:u32 "
    "S:u32 NC:u32 depth:u32 S_cur:u32 S_next:u32 T_all:u32 inv_scale:f32 mid:f32 "
    "xd:u32 ye:i32 ym_lo:u32 ym_hi:u32 step:u32 SM:u32 S_h:u32 s_lo:u32 small:u32 b16:u32 row_scan:u32 "
    "H_cur:u32 H_next:u32")
# xd: X is f64 (pairs of words); ye, ym_lo/ym_hi: regression y as fixed point round(y 2^ye) - ym;
# step, SM: every step-th row sampled into SM values a feature (binning); S_h, s_lo: the slots a
# histogram buffer holds and the first slot of this pass; small: a child of at most this many rows
# is split from its rows (SMALL: split_rows), 0 never; b16: the binned matrix holds two 16-bit bins
# a word (a feature has more than 256 bins), else four of 8 bits (bin_word, bin_in); row_scan: a
# SMALL node of at most this many rows is split from its rows without histograms (split_small);
# H_cur, H_next: where a level's histograms are numbered (`numbered`), the most it and the next
# level have (their passes: builder.Grower._level).
SORT = Struct("j:u32 k:u32 len:u32 count:u32")  # sort_pass's own parameters
BINS = Struct("m:u32 SM:u32 F:u32 nbins:u32 exact:u32")  # thresholds': m sorted values of SM a
# feature; a feature of at most `exact` distinct values gets a bin each, others nbins quantiles

LEAF = 0xFFFFFFFF  # no feature: a leaf; also "none"
DONE = 0xFFFFFF    # a row's slot once it rests in a leaf
OPEN, BUILT, SMALL = 1, 2, 4  # a slot's flags
VARIES, RANK_SHIFT = 2, 8  # a candidate's fourth word: rank << RANK_SHIFT | VARIES (0: no split)
SLOT_SHIFT, COUNT_MASK = 8, 0xFF  # a row's state: slot << SLOT_SHIFT | bootstrap count
MSE, GINI, ENTROPY = 0, 1, 2
CRITERIA = {"squared_error": MSE, "gini": GINI, "entropy": ENTROPY}
MAXK = 64          # classes predict keeps in registers
M32 = 0xFFFFFFFF
INF = float("inf")
WG = 256           # threads per workgroup of the flat kernels
IMP_CHUNK = 2048   # nodes summed by one thread of `importance`
HC_SLOTS = 8       # slots a workgroup of `hist_clear` zeroes
HC_WORDS = 2048    # words a workgroup of `hist_clear_wg` zeroes, at most
WG_TREE = 1024     # workgroups hist_clear_wg and split_vary_wg aim at a tree of the batch: a pass
                   # of a deep level, hundreds of slots a tree most of which need neither (SMALL,
                   # or derived), takes fewer, larger items rather than a workgroup per word run
                   # or feature that exits. A tree's, not the batch's: a batch's last may hold
                   # fewer trees than its grids were recorded for
HB_WORDS = 4096    # histogram words a workgroup of `hist_build_wg` holds (16 KiB, WebGPU's default)
HB_ROWS = 8192     # rows a workgroup of `hist_build_wg` adds
NOT_FINITE_X, NOT_FINITE_Y = 1, 2  # flags
FAMILY = Family(structs={"Params": PARAMS, "Sort": SORT, "Bins": BINS}, consts={
    "LEAF": LEAF, "DONE": DONE, "OPEN": OPEN, "BUILT": BUILT, "SMALL": SMALL, "VARIES": VARIES,
    "RANK_SHIFT": RANK_SHIFT, "SLOT_SHIFT": SLOT_SHIFT, "COUNT_MASK": COUNT_MASK, "MSE": MSE, "GINI": GINI,
    "ENTROPY": ENTROPY, "MAXK": MAXK, "HC_SLOTS": HC_SLOTS, "HC_WORDS": HC_WORDS, "WG_TREE": WG_TREE, "HB_WORDS": HB_WORDS, "HB_ROWS": HB_ROWS, "IMP_CHUNK": IMP_CHUNK,
    "NOT_FINITE_X": NOT_FINITE_X, "NOT_FINITE_Y": NOT_FINITE_Y})


def grid(workgroups: int, cap: int = 65535) -> tuple[int, int, int]:
    """A 2-D grid of at least `workgroups` (the kernels use wid.x + wid.y * nwg.x)."""
    workgroups = max(1, workgroups)
    if workgroups <= cap:
        return (workgroups, 1, 1)
    return (cap, -(-workgroups // cap), 1)


def wg_items(entry: str, T: int, sp: int, F: int, mf: int, words: int, n: int = 0,
             groups: int = 0) -> int:
    """Workgroups of a workgroup-per-item kernel (GPUs) over T trees and the sp slots of a pass:
    one per (tree, slot, feature) (split_vary_wg), per feature a node may scan (split_scan_wg:
    min(mf, F)), per slot (split_pick_wg), per run of HC_WORDS of a slot's `words` histogram
    words (hist_clear_wg), per (group of features, run of HB_ROWS of the n rows)
    (hist_build_wg, `groups` groups)."""
    per_slot = {"split_vary_wg": -(-F // vary_features(sp, F)), "split_scan_wg": min(mf, F),
                "split_pick_wg": 1, "hist_clear_wg": clear_runs(sp, words),
                "hist_build_wg": groups * -(-n // HB_ROWS)}[entry]
    return T * sp * per_slot


def clear_runs(sp: int, words: int) -> int:
    """Runs a slot's `words` histogram words are zeroed in by hist_clear_wg (a workgroup each):
    one per HC_WORDS, fewer where a pass has so many slots (sp) that WG_TREE workgroups a tree
    cover it (as the kernel computes it)."""
    return max(1, min(-(-words // HC_WORDS), -(-WG_TREE // sp)))


def vary_features(sp: int, F: int) -> int:
    """Features a workgroup of split_vary_wg takes in turn: one, or more where a pass of sp slots
    has more than WG_TREE (slot, feature) items a tree (as the kernel computes it)."""
    return max(1, min(F, sp * F // WG_TREE))


def hist_groups(fmeta, C: int) -> array | None:
    """hist_build_wg's groups of consecutive features whose words (bins x C) fit HB_WORDS: their
    number G, then G (first feature, end) pairs; None where one feature alone has more."""
    groups, f0, words = array("I", [0]), 0, 0
    F = len(fmeta) // 2
    for f in range(F):
        w = fmeta[2 * f + 1] * C
        if w > HB_WORDS:
            return None
        if words + w > HB_WORDS:
            groups.extend((f0, f))
            f0, words = f, 0
        words += w
    groups.extend((f0, F))
    groups[0] = len(groups) // 2
    return groups


# ---- hashing, as in the shader (pcg and hash3 are py_core.rng's) -----------------------------------
def swap_or_not(key: int, i: int, x: int, n: int) -> int:
    """Round i of the features' permutation (the shader's): x paired with (k - x) mod n, swapped
    or not by a bit of the pair; its own inverse."""
    h = pcg((key + i) & M32)
    y = (h % n + n - x) % n
    return y if pcg(h ^ max(x, y)) & 1 else x


def feature_rank(key: int, f: int, rounds: int, n_features: int) -> int:
    """Feature f's rank in the random permutation of `key` (a node's): `rounds` of swap-or-not."""
    for i in range(rounds):
        f = swap_or_not(key, i, f, n_features)
    return f


def rank_feature(key: int, r: int, rounds: int, n_features: int) -> int:
    """The inverse of feature_rank: the feature of rank r."""
    for i in reversed(range(rounds)):
        r = swap_or_not(key, i, r, n_features)
    return r


def perm_rounds(n_features: int) -> int:
    """Rounds of the features' permutation: enough that every feature is as likely as another
    among a node's first max_features (tests/test_forest_kernels.py measures it)."""
    return max(24, 3 * n_features.bit_length())


def f32(values) -> list:
    """Round each value to the nearest f32 (ties to even), as the GPU stores it."""
    return array("f", values).tolist()


def f32_of_int(v: int) -> float:
    """The f32 nearest an integer (ties to even), exactly: i64_to_f32 in the shader."""
    if -2**53 <= v <= 2**53:
        return f32([float(v)])[0]  # float(v) is exact: one rounding
    m = abs(v)
    sh = m.bit_length() - 24
    q, r = m >> sh, m & ((1 << sh) - 1)
    if 2 * r > (1 << sh) or (2 * r == (1 << sh) and q & 1):
        q += 1
    return math.copysign(float(q << sh), v)


_F32, _U32 = _Struct("<f"), _Struct("<I")


def _f32_bits(x: float) -> int:
    return _U32.unpack(_F32.pack(x))[0]


def _f32_from_bits(b: int) -> float:
    return _F32.unpack(_U32.pack(b))[0]


def _f32_step(x: float, up: bool) -> float:
    """The next f32 above (or below) the f32 x."""
    if x == 0:
        return _f32_from_bits(1 if up else 0x80000001)
    b = _f32_bits(x)
    return _f32_from_bits(b + 1 if (x > 0) == up else b - 1)


def mid_down(a: float, b: float) -> float:
    """The largest f32 <= (a + b) / 2, exactly (a < b finite f32): mid_down in the shader. An f32
    lies at or below it exactly when it lies at or below the real midpoint."""
    big, small = (a, b) if abs(a) >= abs(b) else (b, a)
    s = big + small
    if s - big == small:  # the f64 sum is exact (Fast2Sum), so is mid: compare in f64
        mid = s * 0.5
        t = _F32.unpack(_F32.pack(mid))[0] + 0.0  # the nearest f32: at most one step above mid
        return (_f32_step(t, False) if t > mid else t) + 0.0
    mid = (Fraction(a) + Fraction(b)) / 2  # exponents over 29 apart: exactly, in fractions (rare)
    t = _F32.unpack(_F32.pack(float(mid)))[0] + 0.0  # rounded twice: stepped to the answer
    while t > mid:
        t = _f32_step(t, False)
    while _f32_step(t, True) <= mid:
        t = _f32_step(t, True)
    return t + 0.0  # -0 made +0, as the shader


def signed64(lo: int, hi: int) -> int:
    v = lo | (hi << 32)
    return v - (1 << 64) if v >> 63 else v


def _unpack(bufs):
    return PARAMS.unpack(bufs[0])


def x_f32(X, p, rows: int | None = None) -> array:
    """The first `rows` rows (default n) of X as f32: the words themselves, or the f32 nearest
    each f64 (two words) when p["xd"]."""
    count = (p["n"] if rows is None else rows) * p["F"]
    if p["xd"]:
        return array("f", array("d", X[:2 * count].tobytes()))
    return array("f", X[:count].tobytes())


def fixed_point(y: float, e: int, m: int) -> int:
    """round(y 2^e) - m (ties to even), exactly, as u32 bits: the `targets` kernel's value."""
    num, den = y.as_integer_ratio()
    if e >= 0:
        num <<= e
    else:
        den <<= -e
    q, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and q & 1):
        q += 1
    return (q - m) & M32


def order_key(bits: int) -> int:
    """The unsigned integer that orders f32 bits as floats (sort_pass)."""
    return bits ^ M32 if bits >> 31 else bits ^ 0x80000000


# ---- kernels ----------------------------------------------------------------------------------
@reference("forest", "exact_ops")
def exact_ops(bufs, grid_, constants):
    _, ops, out = bufs
    n = _unpack(bufs)["n"]
    res = []
    for i in range(n):
        a, b = _f32_from_bits(ops[3 * i]), _f32_from_bits(ops[3 * i + 1])
        res += [_f32_bits(a / ops[3 * i + 2]), _f32_bits(mid_down(a, b))]
    out[:2 * n] = array("I", res)


@reference("forest", "check_finite")
def check_finite(bufs, grid_, constants):
    _, X, flags = bufs
    p = _unpack(bufs)
    if not all(v - v == 0 for v in x_f32(X, p)):  # inf - inf and nan - nan are nan
        flags[0] |= NOT_FINITE_X


@reference("forest", "sample")
def sample(bufs, grid_, constants):
    sample_columns(_unpack(bufs), bufs[1], bufs[2])


def sample_columns(p: dict, X, out) -> None:
    """`sample` (the shared section tree_quantiles) with its family's params p (n, F, xd, step,
    SM): every step-th row, -0 made +0, NaN made +inf (boosting's missing values: sorted
    last and left out by `thresholds`), padded with +inf to SM."""
    n, F, step, SM = p["n"], p["F"], p["step"], p["SM"]
    m = -(-n // step)
    x = x_f32(X, p)
    for f in range(F):
        col = array("f", [v + 0.0 if v == v else INF for v in x[f:n * F:F * step]])  # -0 + 0 is +0
        col.extend([INF] * (SM - m))
        out[f * SM:(f + 1) * SM] = array("I", col.tobytes())


@reference("forest", "sort_pass")
def sort_pass(bufs, grid_, constants):
    P, data = bufs
    s = SORT.unpack(P)
    j, k, length = s["j"], s["k"], s["len"]
    for seg in range(s["count"]):
        base = seg * length
        for t in range(length // 2):
            a = 2 * j * (t // j) + t % j
            x, y = data[base + a], data[base + a + j]
            if x != y and (order_key(x) > order_key(y)) == ((a & k) == 0):
                data[base + a], data[base + a + j] = y, x


def distinct_upto(values, limit: int) -> list[float] | None:
    """The distinct values of a sorted sequence if there are at most `limit`, else None: found
    by bisection, O(limit log m) steps."""
    out, i, m = [], 0, len(values)
    while i < m:
        if len(out) == limit:
            return None
        v = values[i]
        out.append(v)
        i = bisect_right(values, v, i)
    return out


def record_words(n_bins: int, exact: int, m: int) -> int:
    """Words of a feature's record from `thresholds` (its bins, then (threshold, lo, hi) a bin)
    for m sorted values: at most max(n_bins, exact) bins, and at most m."""
    return 1 + 3 * min(max(n_bins, exact), m)


def feature_bins(values, n_bins: int, exact: int = 0) -> tuple[list[float], list[float], list[float]]:
    """(thresholds, lo, hi) of one feature from its sorted f32 values (a list or an array):
    len(thresholds) + 1 bins, lo/hi the smallest and largest value in each (py_core.forest.binning
    says how; the `thresholds` kernel does the same on the device). A feature of at most
    max(n_bins, exact) distinct values gets a bin per value; others n_bins quantile bins. A
    threshold between two values is mid_down's: an f32 value goes to the same side of it as of
    the real midpoint (scikit-learn's f64 threshold)."""
    distinct = distinct_upto(values, max(n_bins, exact))
    if distinct is not None:
        return [mid_down(a, b) for a, b in zip(distinct, distinct[1:])], distinct, distinct
    m = len(values)
    cuts = set()
    for k in range(1, n_bins):
        h = (m - 1) * k / n_bins
        a, b = values[math.floor(h)], values[math.ceil(h)]
        cuts.add(a if a == b else mid_down(a, b))
    thresholds = sorted(cuts)
    if thresholds[-1] >= values[-1]:  # the top bin must hold the largest value
        thresholds.pop()
        below = values[bisect_left(values, values[-1]) - 1]  # exists: > n_bins distinct values
        if not thresholds or thresholds[-1] < below:
            thresholds.append(mid_down(below, values[-1]))
    # Bin j holds values[ends[j - 1]:ends[j]], the values above threshold j - 1 up to threshold j.
    ends = [bisect_right(values, t) for t in thresholds] + [m]
    lo, hi, start = [], [], 0
    for j, end in enumerate(ends):
        if end > start:
            lo.append(values[start])
            hi.append(values[end - 1])
        else:  # a bin empty in the sample: its bounds stand in for its values
            lo.append(thresholds[j - 1] if j else thresholds[0])
            hi.append(thresholds[j] if j < len(thresholds) else thresholds[-1])
        start = end
    return thresholds, lo, hi


@reference("forest", "thresholds")
def thresholds(bufs, grid_, constants):
    P, samp, out = bufs
    s = BINS.unpack(P)
    m, SM, nb, exact = s["m"], s["SM"], s["nbins"], s["exact"]
    values, W = array("f", samp.tobytes()), record_words(nb, exact, m)
    for f in range(s["F"]):
        col = values[f * SM:f * SM + m]
        m_f = bisect_left(col, INF)  # the values below +inf (`sample` made NaN +inf)
        if m_f == 0:
            out[f * W] = 0
            continue
        th, lo, hi = feature_bins(col[:m_f], nb, exact)
        rec = array("f", [v for j in range(len(th) + 1) for v in (th[j] if j < len(th) else INF, lo[j], hi[j])])
        out[f * W] = len(th) + 1
        out[f * W + 1:f * W + 1 + len(rec)] = array("I", rec.tobytes())


@reference("forest", "targets")
def targets(bufs, grid_, constants):
    _, y, out, flags = bufs
    p = _unpack(bufs)
    n, e, m = p["n"], p["ye"], p["ym_lo"] | (p["ym_hi"] << 32)
    values = array("d", y[:2 * n].tobytes())
    q = []
    for v in values:
        if v - v == 0:
            q.append(fixed_point(v, e, m))
        else:
            flags[0] |= NOT_FINITE_Y
            q.append(0)
    out[:n] = array("I", q)


@reference("forest", "bin_features")
def bin_features(bufs, grid_, constants):
    _, X, edges, fmeta, binned = bufs
    p = _unpack(bufs)
    n, F, FW = p["n"], p["F"], p["FW"]
    x = x_f32(X, p)
    words = [0] * (n * FW)
    for f in range(F):
        off, nb = fmeta[2 * f], fmeta[2 * f + 1]
        thresholds = edges[3 * off:3 * (off + nb - 1):3].tolist()
        col = x[f:n * F:F].tolist()
        w, shift, _ = bin_place(f, p["b16"])
        bins = [bisect_left(thresholds, x) << shift for x in col]
        words[w::FW] = [a | b for a, b in zip(words[w::FW], bins)]
    binned[:n * FW] = array("I", words)


@reference("forest", "bootstrap")
def bootstrap(bufs, grid_, constants):
    _, state = bufs
    p = _unpack(bufs)
    n, T = p["n"], p["T"]
    for t in range(T):
        if not p["boot"]:
            state[t * n:(t + 1) * n] = array("I", [1]) * n
            continue
        stream = pcg((pcg(p["seed"]) + 2 * (p["tree0"] + t)) & M32)
        counts = [0] * n
        for d in range(n):
            counts[pcg((stream + d) & M32) % n] += 1
        row = state[t * n:(t + 1) * n]
        state[t * n:(t + 1) * n] = array("I", [a + b for a, b in zip(row, counts)])


@reference("forest", "init_trees")
def init_trees(bufs, grid_, constants):
    _, slots, nodes, meta = bufs
    p = _unpack(bufs)
    S, NC, NW = p["S"], p["NC"], 4 + p["C"]
    for t in range(p["T"]):
        slots[t * S * 4:(t + 1) * S * 4] = array("I", bytes(16 * S))
        slots[t * S * 4 + 1] = OPEN | BUILT
        tree = p["tree0"] + t
        rec = t * NC * NW  # the batch's trees
        nodes[rec:rec + NW] = array("I", [LEAF] + [0] * (NW - 1))
        meta[2 * tree:2 * tree + 2] = array("I", [1, 1])


def numbered(p) -> bool:
    """Are the level's histograms numbered (deep trees, every SMALL slot split by split_small), not
    indexed by slot? The shader's `numbered`."""
    return p["row_scan"] != 0 and p["small"] <= p["row_scan"]


def hist_slots(p, nxt: bool = False) -> int:
    """The level's (nxt: the next level's) histogram slots, at most: H_cur (H_next) where
    numbered, else its slots (the shader's hist_slots)."""
    if numbered(p):
        return p["H_next" if nxt else "H_cur"]
    return p["S_next" if nxt else "S_cur"]


def pass_range(p) -> range:
    """The level's histogram numbers (its slots where not numbered) in this pass."""
    return range(p["s_lo"], p["s_lo"] + min(p["S_h"], hist_slots(p) - p["s_lo"]))


def slot_range(p) -> range:
    """The level's slots in this pass of split_rows and split_small."""
    return range(p["s_lo"], p["s_lo"] + min(p["S_h"], p["S_cur"] - p["s_lo"]))


def hist_slot(p, t: int, h: int) -> int:
    """Where histogram number h of tree t is in the pass's buffers."""
    return t * p["S_h"] + h - p["s_lo"]


def hslot(p, slots, t: int, s: int) -> int:
    """Where slot s of tree t has its histogram and candidates: by its number (word 3) where
    numbered, but a SMALL slot's candidates, by its slot."""
    sl = (t * p["S"] + s) * 4
    if numbered(p) and not slots[sl + 1] & SMALL:
        return hist_slot(p, t, slots[sl + 3])
    return hist_slot(p, t, s)


def pass_slots(p, slots, hmap, t: int) -> list:
    """[(number, slot)] of tree t's histograms in this pass: hmap's slots where numbered, those
    that have this number at this level (past the level's last number, hmap holds an older
    level's slots)."""
    if not numbered(p):
        return [(h, h) for h in pass_range(p)]
    out = []
    for h in pass_range(p):
        s = hmap[t * p["S"] + h]
        if s < p["S_cur"]:
            sl = (t * p["S"] + s) * 4
            flags = slots[sl + 1]
            if flags and not flags & SMALL and slots[sl + 3] == h:
                out.append((h, s))
    return out


@reference("forest", "hist_clear_wg")
@reference("forest", "hist_clear")
def hist_clear(bufs, grid_, constants):
    _, slots, hist, hmap = bufs
    p = _unpack(bufs)
    S, W = p["S"], p["NB"] * p["C"]
    zeros = array("I", bytes(4 * W))
    for t in range(p["T"]):
        for h, s in pass_slots(p, slots, hmap, t):
            if slots[(t * S + s) * 4 + 1] & BUILT:
                at = hist_slot(p, t, h) * W
                hist[at:at + W] = zeros


def bin_place(f: int, b16: int) -> tuple[int, int, int]:
    """Where feature f's bin lies in a row of the binned matrix: (word, shift, mask), four 8-bit
    bins a word, or two 16-bit ones (b16): the shader's bin_word and bin_in."""
    return f >> (2 - b16), (8 << b16) * (f & ((4 >> b16) - 1)), (1 << (8 << b16)) - 1


def _row_bins(binned, r, FW, F, b16):
    words = binned[r * FW:(r + 1) * FW]
    out = []
    for f in range(F):
        w, shift, mask = bin_place(f, b16)
        out.append((words[w] >> shift) & mask)
    return out


@reference("forest", "hist_build")
def hist_build(bufs, grid_, constants):
    _, binned, fmeta, target, state, slots, hist = bufs
    p = _unpack(bufs)
    n, F, FW, NB, S = p["n"], p["F"], p["FW"], p["NB"], p["S"]
    offs = fmeta[0:2 * F:2].tolist()
    hrange = pass_range(p)
    for t in range(p["T"]):
        # the built slots of the pass: their histograms' numbers (word 3) where numbered
        built = {}
        for s in range(p["S_cur"]) if numbered(p) else hrange:
            sl = (t * S + s) * 4
            h = slots[sl + 3] if numbered(p) else s
            if slots[sl + 1] & BUILT and h in hrange:
                built[s] = h
        if not built:
            continue
        rows = []  # (bin words of the row's features, target word, count)
        for r, st in enumerate(state[t * n:(t + 1) * n]):
            w, slot = st & COUNT_MASK, st >> SLOT_SHIFT
            if not w or slot not in built:
                continue
            base = hist_slot(p, t, built[slot]) * NB
            rows.append(([base + off + b for off, b in zip(offs, _row_bins(binned, r, FW, F, p["b16"]))], target[r], w))
        _add_rows(p, hist, rows)


def _add_rows(p, hist, rows):
    """What hist_build's atomics add: each (bins, target word, count) of `rows` into every bin of
    `bins` (first bin indices: C words each)."""
    C, mse = p["C"], p["crit"] == MSE
    sums: dict = {}  # word index -> what the atomics add up to
    for bins, tv, w in rows:
        if mse:
            v = (tv - (1 << 32) if tv >> 31 else tv) * w
            for b in bins:
                acc = sums.get(b * C)
                if acc is None:
                    sums[b * C] = [v, w, 1]
                else:
                    acc[0] += v
                    acc[1] += w
                    acc[2] += 1
        else:
            for b in bins:
                h = b * C
                sums[h + tv] = sums.get(h + tv, 0) + w
                sums[h + C - 1] = sums.get(h + C - 1, 0) + 1
    if mse:
        for h, (v, w, c) in sums.items():
            total = (signed64(hist[h], hist[h + 1]) + v) & ((1 << 64) - 1)
            hist[h], hist[h + 1] = total & M32, total >> 32
            hist[h + 2] = (hist[h + 2] + w) & M32
            hist[h + 3] = (hist[h + 3] + c) & M32
    else:
        for h, v in sums.items():
            hist[h] = (hist[h] + v) & M32



@reference("forest", "hist_build_wg")
def hist_build_wg(bufs, grid_, constants):
    """The same sums as hist_build (binding 7, the feature groups, only shapes the grid; 8, hmap,
    finds a numbered slot as its word 3 does)."""
    hist_build(bufs[:7], grid_, constants)


def _feature_range(p, fmeta, hbase, f):
    """Word offsets [h0, h1) of feature f's bins in a slot whose first bin is `hbase`."""
    h0 = (hbase + fmeta[2 * f]) * p["C"]
    return h0, h0 + fmeta[2 * f + 1] * p["C"]


def _summed(p, words):
    """A feature's raw bins (C words each) summed along the bins: bin j holds bins 0..j, each
    channel a running sum (regression's 64-bit sum in its (lo, hi) channels), words mod 2^32."""
    C, c0 = p["C"], 0
    out = array("I", words)
    if p["crit"] == MSE:  # unsigned: the same words mod 2^64
        sums = list(accumulate([lo | hi << 32 for lo, hi in zip(words[0::C], words[1::C])]))
        out[0::C] = array("I", [v & M32 for v in sums])
        out[1::C] = array("I", [(v >> 32) & M32 for v in sums])
        c0 = 2
    for c in range(c0, C):
        out[c::C] = array("I", [v & M32 for v in accumulate(words[c::C])])
    return out


def _derive(p, slots, prev, hist, t, s):
    """The slot's histogram as its parent's minus its sibling's, word by word."""
    S, C, W = p["S"], p["C"], p["NB"] * p["C"]
    sl = (t * S + s) * 4
    me, sib = hslot(p, slots, t, s) * W, hslot(p, slots, t, s ^ 1) * W
    par = (t * p["S_h"] + slots[sl + 2]) * W  # word 2: the parent's histogram number (or slot)
    a, b = prev[par:par + W], hist[sib:sib + W]
    out = [(x - y) & M32 for x, y in zip(a, b)]
    if p["crit"] == MSE:  # borrow from the low word of each bin's sum
        borrow = [1 if x < y else 0 for x, y in zip(a[0::C], b[0::C])]
        out[1::C] = [(x - c) & M32 for x, c in zip(out[1::C], borrow)]
    hist[me:me + W] = array("I", out)


def _eligible(p, tot):
    C, K = p["C"], p["K"]
    cnt = tot[C - 1]
    if cnt < p["mss"] or cnt < 2 * p["msl"] or p["depth"] >= p["max_depth"]:
        return False
    if p["crit"] == MSE:
        return True
    w = sum(tot[:K]) & M32
    return all(c != w for c in tot[:K])


class _Slot:
    """One open slot's raw histogram, its node's totals, and the split scan in f32 as the shader
    does it: a scanned feature's bins summed along, then a score per candidate."""

    def __init__(self, p, hist, fmeta, xlogx, hbase, tot):
        self.p, self.hist, self.fmeta, self.xlogx, self.hbase, self.tot = p, hist, fmeta, xlogx, hbase, tot

    def scan(self, f):
        """The best split of feature f, (score, b, b2), or None."""
        p, C = self.p, self.p["C"]
        h0, h1 = _feature_range(p, self.fmeta, self.hbase, f)
        raw = self.hist[h0:h1]
        nz = [j for j, r in enumerate(raw[C - 1::C]) if r]
        if len(nz) < 2:
            return None
        cum = _summed(p, raw)
        upto = cum[C - 1::C]
        msl, total = p["msl"], self.tot[C - 1]
        # Candidate i splits after non-empty bin nz[i]: its left side is summed bin nz[i].
        idx = [i for i in range(len(nz) - 1) if upto[nz[i]] >= msl and total - upto[nz[i]] >= msl]
        if not idx:
            return None
        lefts = [cum[nz[i] * C:nz[i] * C + C] for i in idx]
        scores = self._mse(lefts) if p["crit"] == MSE else self._classes(lefts)
        top = max(scores)
        i = idx[scores.index(top)]  # first of the best: the lowest bin
        return top, nz[i], nz[i + 1]

    def _mse(self, lefts):
        tot = self.tot
        total = signed64(tot[0], tot[1])
        s = [signed64(h[0], h[1]) for h in lefts]
        wl = [float(h[2]) for h in lefts]
        wr = [float(tot[2] - h[2]) for h in lefts]
        sl = f32([float(v) for v in s])
        sr = f32([float(total - v) for v in s])
        a = f32([x / w for x, w in zip(f32([x * x for x in sl]), wl)])
        b = f32([x / w for x, w in zip(f32([x * x for x in sr]), wr)])
        return f32([x + y for x, y in zip(a, b)])

    def _classes(self, lefts):
        K, tot = self.p["K"], self.tot
        left = [[h[k] for h in lefts] for k in range(K)]
        right = [[(tot[k] - v) & M32 for v in left[k]] for k in range(K)]
        wl = [sum(col) & M32 for col in zip(*left)]
        total = sum(tot[:K]) & M32
        wr = [(total - w) & M32 for w in wl]
        if self.p["crit"] == GINI:  # (sum_k c_k^2) / w a side: exact sums, one rounded division
            ql = [f32_of_int(sum(c * c for c in col)) for col in zip(*left)]
            qr = [f32_of_int(sum(c * c for c in col)) for col in zip(*right)]
            a = f32([x / w for x, w in zip(ql, wl)])
            b = f32([x / w for x, w in zip(qr, wr)])
            return f32([x + y for x, y in zip(a, b)])
        xl = self.xlogx
        acc = [0.0] * len(lefts)
        for side in (left, right):
            for k in range(K):
                acc = f32([a + xl[v] for a, v in zip(acc, side[k])])
        acc = f32([a - xl[v] for a, v in zip(acc, wl)])
        return f32([a - xl[v] for a, v in zip(acc, wr)])


def _open_slots(p, slots, hmap=None):
    """(tree, slot, node, flags) of the pass's open slots: those with histograms (hmap: a
    histogram kernel's, by number where numbered), or (None) of split_rows' and split_small's."""
    S = p["S"]
    for t in range(p["T"]):
        for s in (slot_range(p) if hmap is None else [s for _, s in pass_slots(p, slots, hmap, t)]):
            sl = (t * S + s) * 4
            if slots[sl + 1] & OPEN:
                yield t, s, slots[sl], slots[sl + 1]


@reference("forest", "split_vary_wg")
@reference("forest", "split_vary")
def split_vary(bufs, grid_, constants):
    _, fmeta, slots, hist, nodes, cand, xlogx, prev, hmap = bufs
    p = _unpack(bufs)
    F, C, NB = p["F"], p["C"], p["NB"]
    for t, s, node, flags in _open_slots(p, slots, hmap):
        if flags & SMALL:  # split_rows
            continue
        if not flags & BUILT:
            _derive(p, slots, prev, hist, t, s)
        hbase = hslot(p, slots, t, s) * NB
        if p["depth"] == 0:  # the root's totals: feature 0's bins summed
            h0, h1 = _feature_range(p, fmeta, hbase, 0)
            rec = (t * p["NC"] + node) * (4 + C)
            nodes[rec + 4:rec + 4 + C] = _summed(p, hist[h0:h1])[h1 - h0 - C:]
        key = hash3(p["seed"], 2 * (p["tree0"] + t) + 1, node)
        out = [0, 0, LEAF, 0] * F
        for f in range(F):  # rank in the node's permutation; VARIES: two or more bins hold rows
            h0, h1 = _feature_range(p, fmeta, hbase, f)
            varies = sum(1 for r in hist[h0 + C - 1:h1:C] if r) >= 2
            out[4 * f + 3] = (feature_rank(key, f, p["pr"], F) << RANK_SHIFT) | (VARIES if varies else 0)
        e = 4 * hslot(p, slots, t, s) * F
        cand[e:e + 4 * F] = array("I", out)


@reference("forest", "split_rows")
def split_rows(bufs, grid_, constants):
    _, fmeta, slots, target, nodes, cand, hist, binned, lst = bufs
    p = _unpack(bufs)
    n, F, FW, C, NB = p["n"], p["F"], p["FW"], p["C"], p["NB"]
    for t, s, node, flags in _open_slots(p, slots):
        rec = (t * p["NC"] + node) * (4 + C)
        tot = nodes[rec + 4:rec + 4 + C].tolist()
        if not flags & SMALL or not _eligible(p, tot):
            continue
        end = t * n + slots[(t * p["S"] + s) * 4 + 3]
        rows = [(e >> SLOT_SHIFT, e & COUNT_MASK) for e in lst[end - tot[C - 1]:end]]
        bins = [_row_bins(binned, r, FW, F, p["b16"]) for r, _ in rows]
        key = hash3(p["seed"], 2 * (p["tree0"] + t) + 1, node)
        out, varying = [0, 0, LEAF, 0] * F, []
        for f in range(F):
            rank = feature_rank(key, f, p["pr"], F)
            varies = len({b[f] for b in bins}) >= 2
            out[4 * f + 3] = (rank << RANK_SHIFT) | (VARIES if varies else 0)
            if varies:
                varying.append((rank, f))
        e = 4 * hist_slot(p, t, s) * F
        cand[e:e + 4 * F] = array("I", out)
        if tot[C - 1] <= p["row_scan"]:  # split_small's, from the rows
            continue
        base = hist_slot(p, t, s) * NB
        for _, f in scanned(sorted(varying), p["mf"]):  # the features split_scan scans: their bins alone
            h0, h1 = _feature_range(p, fmeta, base, f)
            hist[h0:h1] = array("I", bytes(4 * (h1 - h0)))
            _add_rows(p, hist, [([base + fmeta[2 * f] + b[f]], target[r], w) for b, (r, w) in zip(bins, rows)])


def scanned(varying: list, mf: int) -> list:
    """The features a node scans, as scikit-learn's splitter draws them (sklearn/tree/
    _splitter.pyx): of its random order, the first max_features features, constant ones counted,
    those that vary; where none of them varies, the first that does (it draws on only until one
    varies). varying: the (rank, feature) pairs of the features that vary, sorted."""
    return [x for x in varying if x[0] < mf] or varying[:1]


@reference("forest", "split_scan_wg")
@reference("forest", "split_scan")
def split_scan(bufs, grid_, constants):
    _, fmeta, slots, hist, nodes, cand, xlogx, prev, hmap = bufs
    p = _unpack(bufs)
    F, C, NC = p["F"], p["C"], p["NC"]
    xl = xlogx.tolist() if p["crit"] == ENTROPY else None
    for t, s, node, flags in _open_slots(p, slots, hmap):
        rec = (t * NC + node) * (4 + C)
        tot = nodes[rec + 4:rec + 4 + C].tolist()
        if not _eligible(p, tot) or _rows_scanned(p, flags, tot):
            continue
        e = 4 * hslot(p, slots, t, s) * F
        words = cand[e + 3:e + 4 * F:4].tolist()
        varying = sorted((w >> RANK_SHIFT, f) for f, w in enumerate(words) if w & VARIES)
        slot = _Slot(p, hist, fmeta, xl, hslot(p, slots, t, s) * p["NB"], tot)
        for _, f in scanned(varying, p["mf"]):
            _put_candidate(cand, e + 4 * f, slot.scan(f))


def _put_candidate(cand, e: int, got) -> None:
    """A feature's best split (score, b, b2), if any, into words e..e+2 of its candidate."""
    if got is not None:
        top, b, b2 = got
        cand[e:e + 3] = array("I", [array("I", array("f", [top]).tobytes())[0], b, b2])


@reference("forest", "split_pick_wg")
@reference("forest", "split_pick")
def split_pick(bufs, grid_, constants):
    _, fmeta, slots, hist, nodes, cand, xlogx, left, hmap = bufs
    p = _unpack(bufs)
    C, S, NC = p["C"], p["S"], p["NC"]
    for t, s, node, flags in _open_slots(p, slots, hmap):
        rec = (t * NC + node) * (4 + C)
        tot = nodes[rec + 4:rec + 4 + C].tolist()
        if not _eligible(p, tot) or _rows_scanned(p, flags, tot):
            continue
        best = _pick(p, cand, nodes, t, s, rec, hslot(p, slots, t, s))
        if best is None:
            continue
        f, b = best
        h0, _ = _feature_range(p, fmeta, hslot(p, slots, t, s) * p["NB"], f)
        left[(t * S + s) * C:(t * S + s + 1) * C] = _summed(p, hist[h0:h0 + (b + 1) * C])[b * C:]


def _pick(p, cand, nodes, t, s, rec, at):
    """The slot's split among its candidates (from `at`, hslot's) into its node record: (feature,
    bin), or None."""
    F = p["F"]
    e = 4 * at * F
    cands = cand[e:e + 4 * F].tolist()
    scores = array("f", array("I", cands[0::4]).tobytes()).tolist()
    best = None
    for f in range(F):  # the best score; ties: the feature first in the node's permutation
        if cands[4 * f + 2] == LEAF:  # not scanned, or no split
            continue
        key = (scores[f], -(cands[4 * f + 3] >> RANK_SHIFT))
        if best is None or key > best[1]:
            best = (f, key, cands[4 * f + 1], cands[4 * f + 2])
    if best is None:
        return None
    f, _, b, b2 = best
    nodes[rec:rec + 3] = array("I", [f, b, b2])
    return f, b


def _rows_scanned(p, flags, tot) -> bool:
    """Is a SMALL slot of these totals split from its rows without histograms (split_small)?"""
    return bool(flags & SMALL) and tot[p["C"] - 1] <= p["row_scan"]


@reference("forest", "split_small")
def split_small(bufs, grid_, constants):
    """What split_scan and split_pick find for a SMALL slot of at most row_scan rows, from its
    rows: here through a histogram of its scanned features' bins made from them (the same
    integers), the left child's channels summed from its rows."""
    _, binned, slots, target, nodes, cand, xlogx, left, lst = bufs
    p = _unpack(bufs)
    n, F, FW, C, S = p["n"], p["F"], p["FW"], p["C"], p["S"]
    xl = xlogx.tolist() if p["crit"] == ENTROPY else None
    for t, s, node, flags in _open_slots(p, slots):
        rec = (t * p["NC"] + node) * (4 + C)
        tot = nodes[rec + 4:rec + 4 + C].tolist()
        if not _rows_scanned(p, flags, tot) or not _eligible(p, tot):
            continue
        end = t * n + slots[(t * S + s) * 4 + 3]
        rows = [(e >> SLOT_SHIFT, e & COUNT_MASK) for e in lst[end - tot[C - 1]:end]]
        bins = [_row_bins(binned, r, FW, F, p["b16"]) for r, _ in rows]
        e = 4 * hist_slot(p, t, s) * F
        words = cand[e + 3:e + 4 * F:4].tolist()
        varying = sorted((w >> RANK_SHIFT, f) for f, w in enumerate(words) if w & VARIES)
        for _, f in scanned(varying, p["mf"]):  # a histogram of feature f's bins up to its rows' last
            nb = max(b[f] for b in bins) + 1
            hist = array("I", bytes(4 * C * nb))
            _add_rows(p, hist, [([b[f]], target[r], w) for b, (r, w) in zip(bins, rows)])
            _put_candidate(cand, e + 4 * f, _Slot(p, hist, array("I", [0, nb]), xl, 0, tot).scan(0))
        best = _pick(p, cand, nodes, t, s, rec, hist_slot(p, t, s))
        if best is not None:
            f, b = best
            acc = array("I", bytes(4 * C))
            _add_rows(p, acc, [([0], target[r], w) for bb, (r, w) in zip(bins, rows) if bb[f] <= b])
            left[(t * S + s) * C:(t * S + s + 1) * C] = acc


def _child_stats(p, nodes, left, t, s, rec):
    C = p["C"]
    lrec = (t * p["S"] + s) * C
    lst = left[lrec:lrec + C].tolist()
    tot = nodes[rec + 4:rec + 4 + C].tolist()
    rst = [(a - b) & M32 for a, b in zip(tot, lst)]
    if p["crit"] == MSE:
        rst[1] = (rst[1] - (1 if tot[0] < lst[0] else 0)) & M32
    return lst, rst


def _child_open(p, stats):
    if p["depth"] + 1 >= p["max_depth"]:
        return False
    cnt = stats[p["C"] - 1]
    if cnt < p["mss"] or cnt < 2 * p["msl"]:
        return False
    if p["crit"] != MSE:
        w = sum(stats[:p["K"]]) & M32
        if any(c == w for c in stats[:p["K"]]):
            return False
    return True


def _splits(p, slots, nodes, t, s):
    """The node record of slot s if its node split, else None."""
    sl = (t * p["S"] + s) * 4
    if not slots[sl + 1] & OPEN:
        return None
    rec = (t * p["NC"] + slots[sl]) * (4 + p["C"])
    return None if nodes[rec] == LEAF else rec


@reference("forest", "alloc")
def alloc(bufs, grid_, constants):
    """alloc_count, alloc_scan and alloc_write in one (the counts kept in the workgroup: binding 7
    as it was)."""
    count = bufs[7]
    kept = array(count.typecode, count)
    for step in (alloc_count, alloc_scan, alloc_write):
        step(bufs, grid_, constants)
    count[:] = kept


def _pair_flags(p, stats) -> tuple[list, int]:
    """The flags of a split's children (stats: their channels) in their next-level slots (2j,
    2j + 1), and the side in the even one (the child with fewer rows), as the shader's
    pair_flags."""
    C = p["C"]
    opens = [_child_open(p, st) for st in stats]
    small = [st[C - 1] <= p["small"] for st in stats]
    fewer = 0 if stats[0][C - 1] <= stats[1][C - 1] else 1
    # built: the child with fewer rows, or beside a SMALL one the other
    built = 1 - fewer if small[fewer] and not small[1 - fewer] else fewer
    # no whole parent level (or next one) to derive from
    passes = hist_slots(p) > p["S_h"] or hist_slots(p, True) > p["S_h"]
    flags = []
    for k in (0, 1):  # the even slot first
        side = fewer ^ k
        if opens[side] and small[side]:
            flags.append(OPEN | SMALL)
        elif opens[side]:
            flags.append(OPEN | (BUILT if side == built or passes else 0))
        else:  # built for an open sibling to derive from
            flags.append(BUILT if k == 0 and not any(small) and not passes else 0)
    return flags, fewer


def _has_hist(p, flags: int) -> bool:
    """Does a next-level slot of these flags take a histogram number (numbered levels)?"""
    return numbered(p) and flags != 0 and not flags & SMALL


@reference("forest", "alloc_count")
def alloc_count(bufs, grid_, constants):
    _, slots, nodes, left, nxt, childmap, meta, count, hmap = bufs
    p = _unpack(bufs)
    S, C = p["S"], p["C"]
    for t in range(p["T"]):
        for s in range(p["S_cur"]):
            rec, got = _splits(p, slots, nodes, t, s), [0, 0, 0, 0]
            if rec is not None:
                stats = _child_stats(p, nodes, left, t, s, rec)
                opens = [_child_open(p, st) for st in stats]
                hists = sum(_has_hist(p, f) for f in _pair_flags(p, stats)[0]) if any(opens) else 0
                got = [1, int(any(opens)),
                       sum(st[C - 1] for o, st in zip(opens, stats) if o and st[C - 1] <= p["small"]), hists]
            e = (t * S + s) * 4
            count[e:e + 4] = array("I", got)


@reference("forest", "alloc_scan")
def alloc_scan(bufs, grid_, constants):
    _, slots, nodes, left, nxt, childmap, meta, count, hmap = bufs
    p = _unpack(bufs)
    S = p["S"]
    for t in range(p["T"]):
        tree = p["tree0"] + t
        at = [meta[2 * tree], 0, 0, 0]
        for s in range(p["S_cur"]):
            e = (t * S + s) * 4
            c = count[e:e + 4].tolist()
            count[e:e + 4] = array("I", at)
            at = [at[0] + 2 * c[0], at[1] + c[1], at[2] + c[2], at[3] + c[3]]
        for s in range(2 * at[1], p["S_next"]):
            nxt[(t * S + s) * 4 + 1] = 0
        meta[2 * tree:2 * tree + 2] = array("I", at[:2])
        if numbered(p):  # its next level's histograms, after every tree's pair of words
            meta[2 * p["T_all"] + tree] = at[3]


@reference("forest", "alloc_write")
def alloc_write(bufs, grid_, constants):
    _, slots, nodes, left, nxt, childmap, meta, count, hmap = bufs
    p = _unpack(bufs)
    S, NC, C = p["S"], p["NC"], p["C"]
    NW = 4 + C
    for t in range(p["T"]):
        for s in range(p["S_cur"]):
            rec = _splits(p, slots, nodes, t, s)
            if rec is None:
                continue
            e0 = (t * S + s) * 4
            nid, j, at, hn = count[e0:e0 + 4].tolist()
            nodes[rec + 3] = nid
            stats = _child_stats(p, nodes, left, t, s, rec)
            for side in (0, 1):
                crec = (t * NC + nid + side) * NW
                nodes[crec:crec + NW] = array("I", [LEAF, 0, 0, 0] + stats[side])
            cm = (t * S + s) * 2
            childmap[cm:cm + 2] = array("I", [DONE, DONE])
            if not any(_child_open(p, st) for st in stats):
                continue
            pair, fewer = _pair_flags(p, stats)
            parent = slots[e0 + 3] if numbered(p) else s  # its histogram's number (or slot)
            for k, flags in enumerate(pair):
                side, ns, word3 = fewer ^ k, 2 * j + k, 0
                if flags & SMALL:  # its rows' list
                    word3 = at
                    at += stats[side][C - 1]
                elif _has_hist(p, flags):  # its histogram's number
                    word3 = hn
                    hmap[t * S + hn] = ns
                    hn += 1
                e = (t * S + ns) * 4
                nxt[e:e + 4] = array("I", [nid + side, flags, parent, word3])
                if flags:
                    childmap[cm + side] = ns


@reference("forest", "route_rows")
def route_rows(bufs, grid_, constants):
    _, binned, state, slots, nodes, childmap, nxt, lst = bufs
    p = _unpack(bufs)
    n, FW, S, NC, C = p["n"], p["FW"], p["S"], p["NC"], p["C"]
    for t in range(p["T"]):
        # Per slot: None (rows rest) or (feature, bin, left slot, right slot).
        route: dict = {}
        for r, st in enumerate(state[t * n:(t + 1) * n]):
            w, slot = st & COUNT_MASK, st >> SLOT_SHIFT
            if not w or slot == DONE:
                continue
            if slot not in route:
                sl = (t * S + slot) * 4
                rule = None
                if slots[sl + 1] & OPEN:
                    rec = (t * NC + slots[sl]) * (4 + C)
                    f = nodes[rec]
                    if f != LEAF:
                        cm = (t * S + slot) * 2
                        rule = (f, nodes[rec + 1], childmap[cm], childmap[cm + 1])
                route[slot] = rule
            rule = route[slot]
            if rule is None:
                to = DONE
            else:
                f, b, cl, cr = rule
                w_, shift, mask = bin_place(f, p["b16"])
                bin_ = (binned[r * FW + w_] >> shift) & mask
                to = cr if bin_ > b else cl
            state[t * n + r] = (to << SLOT_SHIFT) | w
            e = (t * S + to) * 4
            if to != DONE and nxt[e + 1] & SMALL:  # listed at word 3, which moves on
                lst[t * n + nxt[e + 3]] = (r << SLOT_SHIFT) | w
                nxt[e + 3] += 1


def _i64_value(lo, hi):
    return f32_of_int(signed64(lo, hi))


@reference("forest", "finalize")
def finalize(bufs, grid_, constants):
    _, nodes, meta, edges, fmeta, ptree, pval, offs = bufs
    p = _unpack(bufs)
    NC, C, K = p["NC"], p["C"], p["K"]
    NW = 4 + C
    for t in range(p["T"]):
        tree = p["tree0"] + t
        for node in range(meta[2 * tree]):
            rec = (t * NC + node) * NW
            out = offs[tree] + node
            f = nodes[rec]
            thr, left_ = 0, LEAF
            if f != LEAF:
                g = fmeta[2 * f] + nodes[rec + 1]
                g2 = fmeta[2 * f] + nodes[rec + 2]
                mid = mid_down(edges[3 * g + 2], edges[3 * g2 + 1])
                x = min(max(mid, edges[3 * g]), edges[3 * (g2 - 1)])
                thr = array("I", array("f", [x]).tobytes())[0]
                left_ = nodes[rec + 3]
            ptree[3 * out:3 * out + 3] = array("I", [f, thr, left_])
            if p["crit"] == MSE:
                v = f32([_i64_value(nodes[rec + 4], nodes[rec + 5]) / nodes[rec + 6]])[0]
                pval[out] = v * p["inv_scale"] + p["mid"]
            else:
                counts = nodes[rec + 4:rec + 4 + K].tolist()
                w = sum(counts)
                pval[out * K:(out + 1) * K] = array("f", [c / w for c in counts])


def _f32_ops():
    """Helpers that round each step to f32, as the shader computes."""
    box = array("f", [0.0])

    def r(v):
        box[0] = v
        return box[0]
    return r


@reference("forest", "importance")
def importance(bufs, grid_, constants):
    _, nodes, meta, out = bufs
    p = _unpack(bufs)
    NC, C, K, F, crit = p["NC"], p["C"], p["K"], p["F"], p["crit"]
    NW, G = 4 + C, -(-NC // IMP_CHUNK)
    r = _f32_ops()

    def decrease(lrec, rrec):
        if crit == MSE:
            wl, wr = float(nodes[lrec + 6]), float(nodes[rrec + 6])
            d = r(r(_i64_value(nodes[lrec + 4], nodes[lrec + 5]) / wl)
                  - r(_i64_value(nodes[rrec + 4], nodes[rrec + 5]) / wr))
            return r(r(r(wl * wr) / r(wl + wr)) * r(d * d))
        cls_l, cls_r = nodes[lrec + 4:lrec + 4 + K].tolist(), nodes[rrec + 4:rrec + 4 + K].tolist()
        fl, fr = r(float(sum(cls_l))), r(float(sum(cls_r)))
        fw = r(float((sum(cls_l) + sum(cls_r)) & M32))
        acc = 0.0
        for cl, cr in zip(map(r, map(float, cls_l)), map(r, map(float, cls_r))):
            if crit == GINI:
                d = r(r(cl / fl) - r(cr / fr))
                acc = r(acc + r(d * d))
            else:
                c = r(cl + cr)
                if cl > 0:
                    acc = r(acc + r(cl * r(math.log(r(r(cl * fw) / r(c * fl))))))
                if cr > 0:
                    acc = r(acc + r(cr * r(math.log(r(r(cr * fw) / r(c * fr))))))
        return r(r(r(fl * fr) / fw) * acc) if crit == GINI else acc

    for t in range(p["T"]):  # the batch's trees
        tree = p["tree0"] + t
        res = [0.0] * (G * F)
        for node in range(meta[2 * tree]):
            rec = (t * NC + node) * NW
            f = nodes[rec]
            if f == LEAF:
                continue
            lrec = (t * NC + nodes[rec + 3]) * NW
            i = node // IMP_CHUNK * F + f
            res[i] = r(res[i] + decrease(lrec, lrec + NW))
        out[tree * G * F:(tree + 1) * G * F] = array("f", res)


def _trees(ptree):
    """ptree as (feature, threshold, left) lists."""
    feats = ptree[0::3].tolist()
    thr = array("f", ptree[1::3].tobytes()).tolist()
    return feats, thr, ptree[2::3].tolist()


def _leaf(feats, thr, lefts, tree_base, row):
    node = 0
    while True:
        e = tree_base + node
        f = feats[e]
        if f == LEAF:
            return e
        node = lefts[e] if row[f] <= thr[e] else lefts[e] + 1


@reference("forest", "predict")
def predict(bufs, grid_, constants):
    _, X, ptree, pval, offs, out = bufs
    p = _unpack(bufs)
    n, F, K, T, tree0 = p["n"], p["F"], p["K"], p["T"], p["tree0"]
    feats, thr, lefts = _trees(ptree)
    vals = pval.tolist()
    x = x_f32(X, p)
    r = _f32_ops()
    last = tree0 + T >= p["T_all"]
    res = []
    for row in range(n):
        values = x[row * F:(row + 1) * F].tolist()
        acc = [0.0] * K
        if tree0:  # the sums of the chunks before this one, as f32 bits
            acc = array("f", out[2 * row * K:2 * (row + 1) * K:2].tobytes()).tolist()
        for tree in range(tree0, tree0 + T):
            e = _leaf(feats, thr, lefts, offs[tree], values)
            acc = [r(a + v) for a, v in zip(acc, vals[e * K:(e + 1) * K])]
        res.append(acc)
    if not last:
        for row, acc in enumerate(res):
            out[2 * row * K:2 * (row + 1) * K:2] = array("I", array("f", acc).tobytes())
        return
    flat = [r(a / p["T_all"]) for acc in res for a in acc]
    out[:2 * n * K] = array("I", array("d", flat).tobytes())


@reference("forest", "oob")
def oob(bufs, grid_, constants):
    _, X, ptree, pval, offs, state, out = bufs
    p = _unpack(bufs)
    n, F, K = p["n"], p["F"], p["K"]
    feats, thr, lefts = _trees(ptree)
    vals = pval.tolist()
    x = x_f32(X, p)
    f32_ = _f32_ops()  # f32 sums, as the shader's (the same bits however the trees are batched)
    acc = out[:n * (K + 1)].tolist()
    for t in range(p["T"]):
        base = offs[p["tree0"] + t]
        for r, st in enumerate(state[t * n:(t + 1) * n]):
            if st & COUNT_MASK:
                continue
            e = _leaf(feats, thr, lefts, base, x[r * F:(r + 1) * F].tolist())
            o = r * (K + 1)
            for k in range(K):
                acc[o + k] = f32_(acc[o + k] + vals[e * K + k])
            acc[o + K] += 1.0
    out[:n * (K + 1)] = array("f", acc)
