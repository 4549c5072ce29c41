"""Reference of `boosting.wgsl`: gradient boosting's kernels in plain Python.

Each function does what the whole dispatch does, over `array.array` buffers in binding order
(the shader gives the shapes). Histograms hold exact integer sums (gradients and hessians in
fixed point, 64-bit), so what decides a tree (gains from those sums, in f32, each operation
rounded as the GPU rounds it: through `array('f')`) is the same on every backend for the
squared and absolute errors; for the log loss the gradients come from exp(), whose last bit
WGSL leaves open, so a tree may differ where two gains tie to the last bit.

One iteration, K trees at once (py_core/boosting/grower.py records it once):
`gradients` (g, h per row and output, their largest magnitudes, the roots' state), `hist_build`
(the root's histogram), `root_totals`, `split_find`, then max_leaf_nodes - 1 steps of `grow`
(the best open leaf of each tree is split: the children's sums, which child's histogram is built
and which is derived), `route` (the split leaf's rows move to its children), `hist_build` (the
smaller child), `split_find` (the larger child's histogram as parent - sibling; the best split of
each feature of both children); then `leaf_values` (absolute error: the leaves' medians first,
`med_count`/`med_step`), `update` (training rows' raw scores), `update_val` (validation rows'),
`store_tree`, `next_iter` and `loss` (per-workgroup sums of the rows' losses).
"""
from __future__ import annotations

import math
from array import array
from struct import Struct as _Struct

from ...rng import hash3
from .. import reference
from ..family import Family
from ..forest import BINS, HB_ROWS, HB_WORDS, SORT, f32_of_int, grid, sample_columns, signed64
from ..forest import sort_pass as _sort_pass
from ..forest import thresholds as _thresholds
from ..layout import Struct

PARAMS = Struct(
    "n:u32 F:u32 FW:u32 K:u32 B:u32 loss:u32 NN:u32 L:u32 max_depth:u32 msl:u32 mf:u32 seed:u32 "
    "I:u32 staged:u32 xd:u32 b16:u32 loff:u32 lw:u32 lr:f32 l2:f32 min_hess:f32 step:u32 SM:u32")
# n: the rows of this dispatch (training, validation or prediction rows); B: bins a feature, the
# last (B - 1) the missing values'; NN: nodes a tree (2 L - 1); L: leaves a tree at most;
# max_depth: NONE for none; msl: min_samples_leaf; mf: features a split draws (F: all);
# I, staged: predict's iterations, and whether it writes the raw score after each; xd, b16: the
# forest's sections' (X in f64; bins of 16 bits: never here, B <= 256); loff, lw: where this
# set's loss sums go in an iteration's block of lw words; step, SM: the binning subsample, every
# step-th row, SM values a feature (`sample`: the forest's sections, tree_quantiles).

SQUARED, ABSOLUTE, LOG = 0, 1, 2
LOSS_CODES = {"squared_error": SQUARED, "absolute_error": ABSOLUTE, "log_loss": LOG}
NONE = 0xFFFFFFFF
WG = 256
MAXK = 64          # outputs (classes) a kernel keeps in workgroup memory
NR = 29            # words of a node record (below)
TS = 10            # words of a tree's state: used, leaves, done, split, build, sub, pend0, pend1,
                   # the histogram slot of build, and a word unused
CW = 18            # words of a candidate split: valid, gain, bin, missing_left, n_left, G_left (2),
                   # H_left (2), the bins that go left (a categorical split: 8 words, 256 bits)
TW = 16            # words of a stored node: feature, threshold, flags (MISSING_LEFT, CATEGORY), left,
                   # right, value, gain, count, the categories that go left (8 words, 256 bits)
CAT_WORDS = 8      # a categorical split's set of bins (or of category codes, stored): 256 bits
MISSING_LEFT, CATEGORY = 1, 2  # a stored node's flags
MIN_CAT_SUPPORT = 10.0  # scikit-learn's: a category of less hessian (rows) goes right, and smooths
                        # the gradient / hessian ratios categories are sorted by
MW = 5             # words of a leaf's median search: answer (2), counts (2), passes done
H_WORDS = 5        # words of a histogram bin: gradient sum (i64), hessian sum (i64), count
UNUSED, PENDING, OPEN, LEAF, SPLIT = 0, 1, 2, 3, 4  # a node's state
MISSING, CATEGORICAL, INFINITE = 1, 2, 4  # fmiss: the feature has missing values among the
                             # training rows; it splits by category sets; it has infinite values
                             # (bin_rows finds them: the fit refuses them)
# A node record: 0 state, 1 depth, 2 count, 3-4 G (i64), 5-6 H (i64), 7 feature, 8 bin,
# 9 missing_left, 10 left, 11 right, 12 gain (f32), 13 n_left, 14-15 G_left, 16-17 H_left,
# 18 value (f32), 19 parent, 20-27 the bins that go left (a categorical split), 28 its histogram's
# slot. Words 7-17 and 20-27 are the best split found (OPEN) or taken (SPLIT).
# Histograms: (K, slots, F, B, H_WORDS), a slot a leaf: max_leaf_nodes = (NN + 1) / 2 slots. The
# root has slot 0; a split's built child takes the next (its number among the leaves), the
# derived child its parent's (parent - sibling, in place).
Q_BITS = 29        # a row's gradient and hessian in fixed point: |q| < 2^30
GAIN_EPS = 2.0 ** -19  # a split counts when its gain beats this share of the children's scores:
                   # a node whose rows all have the same gradient gains 0, which f32 rounding
                   # makes a few ulps either way (and exp's last bit differs between GPUs)
FAMILY = Family(structs={"Params": PARAMS, "Sort": SORT, "Bins": BINS}, consts={
    "SQUARED": SQUARED, "ABSOLUTE": ABSOLUTE, "LOG": LOG, "NONE": NONE, "MAXK": MAXK, "NR": NR,
    "TS": TS, "CW": CW, "TW": TW, "MW": MW, "H_WORDS": H_WORDS, "UNUSED": UNUSED,
    "PENDING": PENDING, "OPEN": OPEN, "LEAF": LEAF, "SPLIT": SPLIT, "MISSING": MISSING,
    "Q_BITS": Q_BITS, "WG": WG, "GAIN_EPS": GAIN_EPS, "CATEGORICAL": CATEGORICAL,
    "CAT_WORDS": CAT_WORDS, "INFINITE": INFINITE, "MISSING_LEFT": MISSING_LEFT, "CATEGORY": CATEGORY,
    "MIN_CAT_SUPPORT": MIN_CAT_SUPPORT, "HB_WORDS": HB_WORDS, "HB_ROWS": HB_ROWS})


def hist_groups(F: int, B: int) -> int:
    """hist_build_wg's groups of features whose bins fit a workgroup's HB_WORDS words."""
    return -(-F // max(1, HB_WORDS // (B * H_WORDS)))


def hist_wg_items(K: int, F: int, B: int, n: int) -> int:
    """Workgroups of hist_build_wg: one per (output, group of features, run of HB_ROWS rows)."""
    return K * hist_groups(F, B) * -(-n // HB_ROWS)

_F32, _U32 = _Struct("<f"), _Struct("<I")


def _f32_bytes(x: float) -> bytes:
    """x as an f32, rounded as IEEE rounds it: past the largest f32 an infinity, as the GPU's
    arithmetic gives (struct refuses it: a squared error of a target past 1.8e19 stopped the
    reference backend with an OverflowError where the GPUs trained on)."""
    try:
        return _F32.pack(x)
    except OverflowError:
        return _F32.pack(math.copysign(math.inf, x))


def bits(x: float) -> int:
    return _U32.unpack(_f32_bytes(x))[0]


def from_bits(b: int) -> float:
    return _F32.unpack(_U32.pack(b & 0xFFFFFFFF))[0]


def r32(x: float) -> float:
    """x rounded to f32 (one IEEE operation's result when x is its exact f64 result)."""
    return _F32.unpack(_f32_bytes(x))[0]


def order_key(b: int) -> int:
    """The unsigned integer that orders f32 bits as floats."""
    return b ^ 0xFFFFFFFF if b >> 31 else b ^ 0x80000000


def from_key(k: int) -> float:
    return from_bits(k ^ 0x80000000 if k >> 31 else k ^ 0xFFFFFFFF)


def scale_exp(max_bits: int) -> int:
    """The fixed-point exponent e of values at most from_bits(max_bits) in magnitude: their
    value 2^e is below 2^(Q_BITS + 1)."""
    if max_bits == 0:
        return 0
    return Q_BITS - (((max_bits >> 23) & 0xFF) - 127)


def quantize(v: float, e: int) -> int:
    return round(math.ldexp(v, e))  # exact product; ties to even, as WGSL's round()


def dequantize(total: int, e: int) -> float:
    return r32(math.ldexp(f32_of_int(total), -e))


def feature_selected(seed: int, key: int, f: int, F: int, mf: int) -> bool:
    """Whether feature f is among the mf a node draws (key: the node's): those of the mf
    smallest hashes (ties: the smaller feature)."""
    if mf >= F:
        return True
    h = hash3(seed, key, f)
    rank = sum(1 for j in range(F) if (hj := hash3(seed, key, j)) < h or (hj == h and j < f))
    return rank < mf


def node_key(it: int, K: int, k: int, NN: int, node: int) -> int:
    return ((it * K + k) * NN + node) & 0xFFFFFFFF


def node_value(G: float, H: float, l2: float) -> float:
    """-G / (H + l2), in f32 (compute_node_value)."""
    return r32(-G / r32(H + l2))


def node_score(G: float, H: float, l2: float) -> float:
    """G^2 / (H + l2), in f32: minus the node's loss at its value (scikit-learn's
    _loss_from_value). No product feeds a sum, so no GPU compiler fuses one (fma)."""
    return r32(r32(G * G) / r32(H + l2))


def split_gain(GL, HL, GR, HR, cur, l2) -> float:
    """The loss reduction of a split, cur being the node's score (0 at the root, whose value
    scikit-learn takes as 0); 0 where it is within rounding of nothing (GAIN_EPS)."""
    both = r32(node_score(GL, HL, l2) + node_score(GR, HR, l2))
    gain = r32(both - cur)
    return gain if gain > r32(GAIN_EPS * both) else 0.0


def _p(bufs):
    return PARAMS.unpack(bufs[0])


def slots(p) -> int:
    """Histogram slots a tree: one a leaf."""
    return (p["NN"] + 1) // 2


def _i64(words, at):
    return signed64(words[at], words[at + 1])


def _put64(words, at, v):
    words[at] = v & 0xFFFFFFFF
    words[at + 1] = (v >> 32) & 0xFFFFFFFF


def _bin(binned, r, FW, f):
    return (binned[r * FW + (f >> 2)] >> (8 * (f & 3))) & 0xFF


def x_rows(X, p) -> array:
    """The first n rows of X as f32 (f64 words rounded: the f32 nearest each)."""
    count = p["n"] * p["F"]
    if p["xd"]:
        return array("f", array("d", X[:2 * count].tobytes()))
    return array("f", X[:count].tobytes())


def _nan(x: float) -> bool:
    return x != x


# ---- data ---------------------------------------------------------------------------------------
# The thresholds, on the device: the forest's kernels (the section tree_quantiles), their references.
@reference("boosting", "sample")
def sample(bufs, grid_, constants):
    sample_columns(PARAMS.unpack(bufs[0]), bufs[1], bufs[2])


reference("boosting", "sort_pass")(_sort_pass)
reference("boosting", "thresholds")(_thresholds)


@reference("boosting", "bin_rows")
def bin_rows(bufs, grid_, constants):
    """Each row's bins, four to a word: the thresholds below its value, or B - 1 when missing."""
    _, X, edges, fmeta, binned, fmiss = bufs
    p = _p(bufs)
    n, F, FW, B = p["n"], p["F"], p["FW"], p["B"]
    xs = x_rows(X, p)
    from bisect import bisect_left
    for f in range(F):
        thr = edges[f * B:f * B + fmeta[f]].tolist()
        for r in range(n):
            x = xs[r * F + f]
            if _nan(x):
                b = B - 1
                fmiss[f] |= MISSING
            else:
                if math.isinf(x):
                    fmiss[f] |= INFINITE
                b = bisect_left(thr, x)  # thresholds below x
            binned[r * FW + (f >> 2)] |= b << (8 * (f & 3))


# ---- an iteration ----------------------------------------------------------------------------------
def gradient_rows(p, raw, y, r):
    """[(g, h)] of row r for each output, in f32."""
    K, loss = p["K"], p["loss"]
    if loss == SQUARED:
        return [(r32(raw[r] - y[r]), 1.0)]
    if loss == ABSOLUTE:
        return [(1.0 if raw[r] > y[r] else -1.0, 1.0)]  # scikit-learn's: -1 at equality
    if K == 1:
        pr = r32(1.0 / r32(1.0 + r32(math.exp(-raw[r]))))
        return [(r32(pr - y[r]), r32(pr * r32(1.0 - pr)))]
    row = raw[r * K:(r + 1) * K]
    m = max(row)
    ex = [r32(math.exp(r32(v - m))) for v in row]
    s = 0.0
    for v in ex:
        s = r32(s + v)
    out = []
    for k in range(K):
        pk = r32(ex[k] / s)
        out.append((r32(pk - (1.0 if int(y[r]) == k else 0.0)), r32(pk * r32(1.0 - pk))))
    return out


@reference("boosting", "gradients")
def gradients(bufs, grid_, constants):
    """g and h of every row and output, their largest |g| and h an output (f32 bits), every row
    at its tree's root, and each tree's state: the root to build."""
    _, raw, y, gh, qs, node_of, ts = bufs
    p = _p(bufs)
    n, K = p["n"], p["K"]
    for r in range(n):
        for k, (g, h) in enumerate(gradient_rows(p, raw, y, r)):
            gh[2 * (r * K + k)] = g
            gh[2 * (r * K + k) + 1] = h
            qs[2 * k] = max(qs[2 * k], bits(abs(g)))
            qs[2 * k + 1] = max(qs[2 * k + 1], bits(h))
            node_of[k * n + r] = 0
    for k in range(K):
        ts[k * TS:(k + 1) * TS] = array("I", [1, 1, 0, NONE, 0, NONE, 0, NONE, 0, 0])


@reference("boosting", "hist_build_wg")
@reference("boosting", "hist_build")
def hist_build(bufs, grid_, constants):
    """The rows of each tree's node to build add their (g, h, 1) into its histogram."""
    _, binned, gh, qs, node_of, ts, hist = bufs
    p = _p(bufs)
    n, F, FW, K, B = p["n"], p["F"], p["FW"], p["K"], p["B"]
    for k in range(K):
        node = ts[k * TS + 4]
        if node == NONE:
            continue
        eg, eh = scale_exp(qs[2 * k]), scale_exp(qs[2 * k + 1])
        base = (k * slots(p) + ts[k * TS + 8]) * F * B
        for r in range(n):
            if node_of[k * n + r] != node:
                continue
            qg = quantize(gh[2 * (r * K + k)], eg)
            qh = quantize(gh[2 * (r * K + k) + 1], eh)
            for f in range(F):
                at = (base + f * B + _bin(binned, r, FW, f)) * H_WORDS
                _put64(hist, at, _i64(hist, at) + qg)
                _put64(hist, at + 2, _i64(hist, at + 2) + qh)
                hist[at + 4] += 1


@reference("boosting", "root_totals")
def root_totals(bufs, grid_, constants):
    """Each root's sums (from its histogram of feature 0): pending, or a leaf when it is too
    small to split (2 min_samples_leaf rows, min_hessian_to_split)."""
    _, hist, nodes, ts, qs = bufs
    p = _p(bufs)
    F, K, B, NN = p["F"], p["K"], p["B"], p["NN"]
    for k in range(K):
        base = k * slots(p) * F * B * H_WORDS
        G = sum(_i64(hist, base + b * H_WORDS) for b in range(B))
        H = sum(_i64(hist, base + b * H_WORDS + 2) for b in range(B))
        cnt = sum(hist[base + b * H_WORDS + 4] for b in range(B))
        rec = k * NN * NR
        nodes[rec + 1], nodes[rec + 2], nodes[rec + 19] = 0, cnt, NONE
        _put64(nodes, rec + 3, G)
        _put64(nodes, rec + 5, H)
        small = cnt < 2 * p["msl"] or dequantize(H, scale_exp(qs[2 * k + 1])) < p["min_hess"]
        nodes[rec] = LEAF if small else PENDING
        if small:
            ts[k * TS + 6] = NONE


def _derive(p, hist, slot, built, k):
    """The histogram in `slot` (the parent's, now its child's) minus the sibling's (every
    feature, every bin)."""
    words = p["F"] * p["B"] * H_WORDS
    at, bu = [(k * slots(p) + x) * words for x in (slot, built)]
    for i in range(0, words, H_WORDS):
        _put64(hist, at + i, _i64(hist, at + i) - _i64(hist, bu + i))
        _put64(hist, at + i + 2, _i64(hist, at + i + 2) - _i64(hist, bu + i + 2))
        hist[at + i + 4] = (hist[at + i + 4] - hist[bu + i + 4]) & 0xFFFFFFFF


def scan_feature(p, h, nb, has_missing, tot, cur, eg, eh):
    """The best split of one feature of a node (scikit-learn's two scans): None, or (gain, bin,
    missing_left, n_left, G_left, H_left) with integer sums. h: the feature's B bins, each
    (G, H, count); tot: the node's (G, H, count)."""
    msl, mh, l2 = p["msl"], p["min_hess"], p["l2"]
    Gt, Ht, nt = tot
    best, out = -1.0, None

    def consider(gl, hl, cl, b, ml):
        nonlocal best, out
        GL, HL = dequantize(gl, eg), dequantize(hl, eh)
        GR, HR = dequantize(Gt - gl, eg), dequantize(Ht - hl, eh)
        gain = split_gain(GL, HL, GR, HR, cur, l2)
        if gain > best and gain > 0.0:
            best, out = gain, (gain, b, ml, cl, gl, hl)

    gl = hl = cl = 0
    for b in range(nb - 1 + has_missing):  # left to right: missing values go right
        gl, hl, cl = gl + h[b][0], hl + h[b][1], cl + h[b][2]
        if cl < msl:
            continue
        if nt - cl < msl:
            break
        if dequantize(hl, eh) < mh:
            continue
        if dequantize(Ht - hl, eh) < mh:
            break
        consider(gl, hl, cl, b, 0)
    if has_missing:  # right to left: missing values go left
        gr = hr = cr = 0
        for b in range(nb - 2, -1, -1):
            gr, hr, cr = gr + h[b + 1][0], hr + h[b + 1][1], cr + h[b + 1][2]
            if cr < msl:
                continue
            if nt - cr < msl:
                break
            if dequantize(hr, eh) < mh:
                continue
            if dequantize(Ht - hr, eh) < mh:
                break
            consider(Gt - gr, Ht - hr, nt - cr, b, 1)
    return out


def scan_categorical(p, h, nb, has_missing, tot, cur, eg, eh, B):
    """scikit-learn's categorical split of one feature: the categories of enough support (the
    missing values' bin among them) sorted by G / (H + MIN_CAT_SUPPORT), scanned from either end
    up to the middle. None, or (gain, 0, missing_left, n_left, G_left, H_left, left bins)."""
    msl, mh, l2 = p["msl"], p["min_hess"], p["l2"]
    Gt, Ht, nt = tot
    support = r32(nt / dequantize(Ht, eh))
    used = []
    for b in list(range(nb)) + ([B - 1] if has_missing else []):
        Hb = dequantize(h[b][1], eh)
        if r32(Hb * support) >= MIN_CAT_SUPPORT:
            used.append((r32(dequantize(h[b][0], eg) / r32(Hb + MIN_CAT_SUPPORT)), b))
    if len(used) <= 1:
        return None
    used.sort(key=lambda v: v[0])  # stable: equal ratios keep the bins' order
    best, out = -1.0, None
    for direction in (1, -1):
        middle = (len(used) + 1) // 2 - (direction == -1)
        gl = hl = cl = 0
        for i in range(middle):
            b = used[i if direction == 1 else len(used) - 1 - i][1]
            gl, hl, cl = gl + h[b][0], hl + h[b][1], cl + h[b][2]
            if cl < msl or dequantize(hl, eh) < mh:
                continue
            if nt - cl < msl or dequantize(Ht - hl, eh) < mh:
                break
            GL, HL = dequantize(gl, eg), dequantize(hl, eh)
            gain = split_gain(GL, HL, dequantize(Gt - gl, eg), dequantize(Ht - hl, eh), cur, l2)
            if gain > best and gain > 0.0:
                left = [used[j if direction == 1 else len(used) - 1 - j][1] for j in range(i + 1)]
                best, out = gain, (gain, 0, int(B - 1 in left), cl, gl, hl, left)
    return out


def bitset(members) -> list[int]:
    words = [0] * CAT_WORDS
    for m in members:
        words[m >> 5] |= 1 << (m & 31)
    return words


def in_bitset(words, at: int, m: int) -> bool:
    return m < 32 * CAT_WORDS and bool(words[at + (m >> 5)] >> (m & 31) & 1)


@reference("boosting", "split_find")
def split_find(bufs, grid_, constants):
    """For each tree's pending nodes (two children, or the root): the derived histogram of the
    larger child, then each feature's best split among the features the node draws."""
    _, hist, nodes, ts, cand, fmeta, fmiss, qs, ctr = bufs
    p = _p(bufs)
    F, K, B, NN = p["F"], p["K"], p["B"], p["NN"]
    for k in range(K):
        eg, eh = scale_exp(qs[2 * k]), scale_exp(qs[2 * k + 1])
        for which in range(2):
            node = ts[k * TS + 6 + which]
            for f in range(F):
                cand[((k * 2 + which) * F + f) * CW] = 0
            if node == NONE:
                continue
            rec = (k * NN + node) * NR
            if node == ts[k * TS + 5]:
                _derive(p, hist, nodes[rec + 28], ts[k * TS + 8], k)
            tot = (_i64(nodes, rec + 3), _i64(nodes, rec + 5), nodes[rec + 2])
            cur = 0.0 if node == 0 else node_score(dequantize(tot[0], eg), dequantize(tot[1], eh), p["l2"])
            key = node_key(ctr[0], K, k, NN, node)
            for f in range(F):
                if not feature_selected(p["seed"], key, f, F, p["mf"]):
                    continue
                base = ((k * slots(p) + nodes[rec + 28]) * F + f) * B * H_WORDS
                h = [(_i64(hist, base + b * H_WORDS), _i64(hist, base + b * H_WORDS + 2),
                      hist[base + b * H_WORDS + 4]) for b in range(B)]
                if fmiss[f] & CATEGORICAL:
                    best = scan_categorical(p, h, fmeta[f] + 1, fmiss[f] & MISSING, tot, cur, eg, eh, B)
                else:
                    best = scan_feature(p, h, fmeta[f] + 1, fmiss[f] & MISSING, tot, cur, eg, eh)
                if best is None:
                    continue
                gain, b, ml, cl, gl, hl = best[:6]
                at = ((k * 2 + which) * F + f) * CW
                cand[at:at + 4] = array("I", [1, bits(gain), b, ml])
                cand[at + 4] = cl
                _put64(cand, at + 5, gl)
                _put64(cand, at + 7, hl)
                cand[at + 10:at + 18] = array("I", bitset(best[6] if len(best) > 6 else ()))


def _node(nodes, k, NN, node):
    return (k * NN + node) * NR


def _set_child(p, nodes, k, child, parent, depth, cnt, G, H, state, slot):
    rec = _node(nodes, k, p["NN"], child)
    nodes[rec:rec + NR] = array("I", [0] * NR)
    nodes[rec], nodes[rec + 1], nodes[rec + 2], nodes[rec + 19] = state, depth, cnt, parent
    nodes[rec + 28] = slot
    _put64(nodes, rec + 3, G)
    _put64(nodes, rec + 5, H)


@reference("boosting", "grow")
def grow(bufs, grid_, constants):
    """Per tree: its pending nodes take their best split (OPEN) or become leaves; then the open
    leaf of the largest gain (the first of equals) splits: its children's sums, which one's
    histogram is built and which derived, and which are pending. No open leaf, or the leaves
    max_leaf_nodes: the tree is done."""
    _, nodes, ts, cand, fmiss = bufs
    p = _p(bufs)
    F, K, NN, L, msl = p["F"], p["K"], p["NN"], p["L"], p["msl"]
    for k in range(K):
        t = k * TS
        if ts[t + 2]:
            ts[t + 3:t + 8] = array("I", [NONE] * 5)
            continue
        for which in range(2):
            node = ts[t + 6 + which]
            if node == NONE:
                continue
            best, bg = NONE, 0.0
            for f in range(F):
                at = ((k * 2 + which) * F + f) * CW
                if cand[at] and (best == NONE or from_bits(cand[at + 1]) > bg):
                    best, bg = f, from_bits(cand[at + 1])
            rec = _node(nodes, k, NN, node)
            if best == NONE:
                nodes[rec] = LEAF
            else:
                at = ((k * 2 + which) * F + best) * CW
                nodes[rec] = OPEN
                nodes[rec + 7], nodes[rec + 8], nodes[rec + 9] = best, cand[at + 2], cand[at + 3]
                nodes[rec + 12], nodes[rec + 13] = cand[at + 1], cand[at + 4]
                nodes[rec + 14:rec + 18] = cand[at + 5:at + 9]
                nodes[rec + 20:rec + 28] = cand[at + 10:at + 18]
            ts[t + 6 + which] = NONE
        s, sg = NONE, 0.0
        for node in range(ts[t]):
            rec = _node(nodes, k, NN, node)
            if nodes[rec] == OPEN and (s == NONE or from_bits(nodes[rec + 12]) > sg):
                s, sg = node, from_bits(nodes[rec + 12])
        if s == NONE:
            ts[t + 2] = 1
            ts[t + 3:t + 6] = array("I", [NONE] * 3)
            continue
        rec = _node(nodes, k, NN, s)
        left, right = ts[t], ts[t] + 1
        ts[t] += 2
        ts[t + 1] += 1
        cnt, nl = nodes[rec + 2], nodes[rec + 13]
        nr = cnt - nl
        G, H = _i64(nodes, rec + 3), _i64(nodes, rec + 5)
        GL, HL = _i64(nodes, rec + 14), _i64(nodes, rec + 16)
        if not fmiss[nodes[rec + 7]] & MISSING:  # none seen: they go where most rows went
            nodes[rec + 9] = int(nl > nr)
        nodes[rec], nodes[rec + 10], nodes[rec + 11] = SPLIT, left, right
        depth = nodes[rec + 1] + 1
        full = L != NONE and ts[t + 1] >= L
        deep = p["max_depth"] != NONE and depth >= p["max_depth"]
        states = [LEAF if full or deep or c < 2 * msl else PENDING for c in (nl, nr)]
        small = left if nl < nr else right  # its histogram built, the other's derived
        fresh, kept = ts[t + 1] - 1, nodes[rec + 28]
        _set_child(p, nodes, k, left, s, depth, nl, GL, HL, states[0], fresh if small == left else kept)
        _set_child(p, nodes, k, right, s, depth, nr, G - GL, H - HL, states[1], fresh if small == right else kept)
        ts[t + 3], ts[t + 8] = s, fresh
        if PENDING in states:
            ts[t + 4], ts[t + 5] = small, right + left - small
        else:
            ts[t + 4] = ts[t + 5] = NONE
        ts[t + 6] = left if states[0] == PENDING else NONE
        ts[t + 7] = right if states[1] == PENDING else NONE
        if full:
            ts[t + 2] = 1
            for node in range(ts[t]):
                if nodes[_node(nodes, k, NN, node)] == OPEN:
                    nodes[_node(nodes, k, NN, node)] = LEAF


def goes_left(nodes, rec: int, b: int, B: int, fmiss) -> bool:
    """Whether a row of bin b goes left at the split of node record rec."""
    if b == B - 1:
        return bool(nodes[rec + 9])
    if fmiss[nodes[rec + 7]] & CATEGORICAL:
        return in_bitset(nodes, rec + 20, b)
    return b <= nodes[rec + 8]


@reference("boosting", "route")
def route(bufs, grid_, constants):
    """The rows of each tree's split node move to its children."""
    _, binned, nodes, ts, node_of, fmiss = bufs
    p = _p(bufs)
    n, FW, K, B, NN = p["n"], p["FW"], p["K"], p["B"], p["NN"]
    for k in range(K):
        s = ts[k * TS + 3]
        if s == NONE:
            continue
        rec = _node(nodes, k, NN, s)
        f = nodes[rec + 7]
        for r in range(n):
            if node_of[k * n + r] == s:
                left = goes_left(nodes, rec, _bin(binned, r, FW, f), B, fmiss)
                node_of[k * n + r] = nodes[rec + 10] if left else nodes[rec + 11]


def is_leaf(state: int) -> bool:
    return state in (PENDING, OPEN, LEAF)


@reference("boosting", "med_count")
def med_count(bufs, grid_, constants):
    """Absolute error: one step of each leaf's search for its two middle residuals y - raw (bit
    by bit, over the f32 order keys): the rows at or below each candidate."""
    _, y, raw, node_of, med = bufs
    p = _p(bufs)
    for r in range(p["n"]):
        m = node_of[r] * MW
        mask = (1 << (31 - med[m + 4])) - 1
        key = order_key(bits(r32(y[r] - raw[r])))
        for j in range(2):
            if key <= (med[m + j] | mask):
                med[m + 2 + j] += 1


@reference("boosting", "med_step")
def med_step(bufs, grid_, constants):
    """The step's bit of each leaf's two middle keys (ranks (n - 1) // 2 and n // 2)."""
    _, nodes, ts, med = bufs
    for node in range(ts[0]):
        rec, m = node * NR, node * MW
        cnt = nodes[rec + 2]
        bit = 31 - med[m + 4]
        for j, rank in enumerate(((cnt - 1) // 2, cnt // 2)):
            if med[m + 2 + j] < rank + 1:
                med[m + j] |= 1 << bit
            med[m + 2 + j] = 0
        med[m + 4] += 1


@reference("boosting", "leaf_values")
def leaf_values(bufs, grid_, constants):
    """Each leaf's value, learning rate included: -G / (H + l2), or (absolute error) the median
    of its residuals."""
    _, nodes, ts, qs, med = bufs
    p = _p(bufs)
    K, NN, lr, l2 = p["K"], p["NN"], p["lr"], p["l2"]
    for k in range(K):
        eg, eh = scale_exp(qs[2 * k]), scale_exp(qs[2 * k + 1])
        for node in range(ts[k * TS]):
            rec = _node(nodes, k, NN, node)
            if not is_leaf(nodes[rec]):
                continue
            if p["loss"] == ABSOLUTE:
                m = node * MW
                v = r32(r32(from_key(med[m]) + from_key(med[m + 1])) * 0.5)
            else:
                v = node_value(dequantize(_i64(nodes, rec + 3), eg), dequantize(_i64(nodes, rec + 5), eh), l2)
            nodes[rec + 18] = bits(r32(v * lr))


@reference("boosting", "update")
def update(bufs, grid_, constants):
    """Each training row's raw scores plus the value of the leaf it rests in."""
    _, nodes, node_of, raw = bufs
    p = _p(bufs)
    n, K, NN = p["n"], p["K"], p["NN"]
    for k in range(K):
        for r in range(n):
            v = from_bits(nodes[_node(nodes, k, NN, node_of[k * n + r]) + 18])
            raw[r * K + k] = r32(raw[r * K + k] + v)


@reference("boosting", "update_val")
def update_val(bufs, grid_, constants):
    """Each validation row's raw scores plus the value of the leaf its bins reach."""
    _, binned, nodes, raw, fmiss = bufs
    p = _p(bufs)
    n, FW, K, B, NN = p["n"], p["FW"], p["K"], p["B"], p["NN"]
    for k in range(K):
        for r in range(n):
            node = 0
            while nodes[_node(nodes, k, NN, node)] == SPLIT:
                rec = _node(nodes, k, NN, node)
                left = goes_left(nodes, rec, _bin(binned, r, FW, nodes[rec + 7]), B, fmiss)
                node = nodes[rec + 10] if left else nodes[rec + 11]
            v = from_bits(nodes[_node(nodes, k, NN, node) + 18])
            raw[r * K + k] = r32(raw[r * K + k] + v)


@reference("boosting", "store_tree")
def store_tree(bufs, grid_, constants):
    """The iteration's trees into the model's arrays (TW words a node; a split's threshold is
    its bin's upper edge, a categorical split's set the bins that go left) and their node
    counts."""
    _, nodes, ts, trees, sizes, ctr, edges, fmiss = bufs
    p = _p(bufs)
    K, NN, B = p["K"], p["NN"], p["B"]
    it = ctr[0]
    for k in range(K):
        used = ts[k * TS]
        sizes[it * K + k] = used
        for node in range(NN):
            out = ((it * K + k) * NN + node) * TW
            rec = _node(nodes, k, NN, node)
            cats = [0] * CAT_WORDS
            if node >= used:
                words = [NONE, 0, 0, NONE, NONE, 0, 0, 0]
            elif nodes[rec] == SPLIT:
                f = nodes[rec + 7]
                cat = fmiss[f] & CATEGORICAL
                flags = nodes[rec + 9] * MISSING_LEFT | (CATEGORY if cat else 0)
                words = [f, bits(edges[f * B + nodes[rec + 8]]), flags, nodes[rec + 10],
                         nodes[rec + 11], 0, nodes[rec + 12], nodes[rec + 2]]
                if cat:
                    cats = nodes[rec + 20:rec + 28].tolist()
            else:
                words = [NONE, 0, 0, NONE, NONE, nodes[rec + 18], 0, nodes[rec + 2]]
            trees[out:out + TW] = array("I", words + cats)


@reference("boosting", "next_iter")
def next_iter(bufs, grid_, constants):
    bufs[1][0] += 1


def row_loss(p, raw, y, r) -> float:
    """Row r's loss (scikit-learn's: half squared error, absolute error, log loss), in f32."""
    K, loss = p["K"], p["loss"]
    if loss in (SQUARED, ABSOLUTE):
        d = r32(y[r] - raw[r])
        return r32(0.5 * r32(d * d)) if loss == SQUARED else abs(d)
    if K == 1:
        z = raw[r]
        soft = r32(max(z, 0.0) + r32(math.log(r32(1.0 + r32(math.exp(-abs(z)))))))
        return r32(soft - r32(y[r] * z))
    row = raw[r * K:(r + 1) * K]
    m = max(row)
    s = 0.0
    for v in row:
        s = r32(s + r32(math.exp(r32(v - m))))
    return r32(r32(m + r32(math.log(s))) - row[int(y[r])])


def wg_sum(values) -> float:
    """The f32 sum of a workgroup's WG values in wg_sum's tree order (shaders/common.wgsl)."""
    red = list(values) + [0.0] * (WG - len(values))
    s = WG // 2
    while s:
        for i in range(s):
            red[i] = r32(red[i] + red[i + s])
        s //= 2
    return red[0]


@reference("boosting", "loss")
def loss(bufs, grid_, constants):
    """Each workgroup's sum of its rows' losses, into this iteration's block."""
    _, raw, y, out, ctr = bufs
    p = _p(bufs)
    n = p["n"]
    at = ctr[0] * p["lw"] + p["loff"]
    for w in range(-(-n // WG)):
        out[at + w] = wg_sum([row_loss(p, raw, y, r) for r in range(w * WG, min(n, (w + 1) * WG))])


# ---- prediction ---------------------------------------------------------------------------------
def leaf_value(trees, first: int, xs, row: int, F: int) -> float:
    """The value of the leaf row `row` of xs (f32, n x F) reaches in the tree from node `first`."""
    node = 0
    while True:
        rec = (first + node) * TW
        f = trees[rec]
        if f == NONE:
            return from_bits(trees[rec + 5])
        x = xs[row * F + f]
        if _nan(x):
            left = bool(trees[rec + 2] & MISSING_LEFT)
        elif trees[rec + 2] & CATEGORY:  # a category code: in the set, or else right
            left = x >= 0 and x == int(x) and in_bitset(trees, rec + 8, int(x))
        else:
            left = x <= from_bits(trees[rec + 1])
        node = trees[rec + 3] if left else trees[rec + 4]


@reference("boosting", "predict")
def predict(bufs, grid_, constants):
    """Each row's raw scores: baseline plus its leaves' values, output by output (staged: after
    each of the I iterations)."""
    _, X, trees, offs, base, out = bufs
    p = _p(bufs)
    n, F, K, iters = p["n"], p["F"], p["K"], p["I"]
    xs = x_rows(X, p)
    for r in range(n):
        for k in range(K):
            acc = base[k]
            for it in range(iters):
                acc = r32(acc + leaf_value(trees, offs[it * K + k], xs, r, F))
                if p["staged"]:
                    out[(r * iters + it) * K + k] = acc
            if not p["staged"]:
                out[r * K + k] = acc


__all__ = ["FAMILY", "PARAMS", "grid"]
