"""Torch version of `shaders/forest.wgsl`, entry by entry, for the cuda backend.

It mirrors the reference (`py_core/kernels/forest.py`) and the WGSL: the same hash RNG and
feature permutation, the same integer histograms (exact 64-bit sums, wrapping u32 channels), the
same f32 split scores computed op by op in the same order, the same tie rules (lowest feature,
then lowest bin), the same node numbering (a prefix sum per tree). So a seed grows the same forest
here as in the browser. Work is vectorised over whole levels; temporaries are cut into chunks of
at most CHUNK elements so that a 1M-row forest fits in GPU memory.
"""
from __future__ import annotations

import math

import torch

from ..forest import (BUILT, DONE, ENTROPY, GINI, IMP_CHUNK, LEAF, M32, MSE, NOT_FINITE_X,
                      NOT_FINITE_Y, OPEN, PARAMS, SORT)
from . import params, to_u32, torch_kernel, u32

WRITTEN_FOR = "c4ab06104bbfd357"  # fingerprint of the forest.wgsl mirrored here
CHUNK = 1 << 24  # elements of the largest int64 temporary (128 MiB)
I64 = torch.int64
F32 = torch.float32


def _pcg(x):
    """PCG hash of u32 values (int64 tensors or ints), as `pcg` in the shader."""
    s = (x * 747796405 + 2891336453) & M32
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & M32
    return (w >> 22) ^ w


def _hash3(a, b, c):
    return _pcg((_pcg((_pcg(a) + b) & M32) + c) & M32)


def _feature_rank(key, f, hb: int, n_features: int):
    """Rank of feature f in the node's permutation (key, f: broadcastable int64 tensors)."""
    mask = (1 << hb) - 1

    def feistel(x):
        left, right = x >> hb, x & mask
        for i in range(4):
            left, right = right, left ^ (_pcg(right ^ ((key + i) & M32)) & mask)
        return (left << hb) | right

    x = feistel(f)
    while True:  # cycle-walk until inside [0, F)
        over = x >= n_features
        if not bool(over.any()):
            return x
        x = torch.where(over, feistel(x), x)


def _signed64(lo, hi):
    """Two u32 words (int64 tensors) as the signed 64-bit value they hold."""
    return (((hi ^ 0x80000000) - 0x80000000) << 32) | lo


def _bins(binned_rows, f, FW: int):
    """Bin of feature f (int64, broadcast with binned_rows' leading dims) in rows' packed words."""
    word = torch.gather(binned_rows, -1, (f >> 2).expand(binned_rows.shape[:-1] + f.shape[-1:]))
    return (word >> ((f & 3) << 3)) & 255


def _arange(n: int, like):
    return torch.arange(n, dtype=I64, device=like.device)


def _x_f32(X, p, rows: int | None = None):
    """The first `rows` rows (default n) of X as f32: its words, or the f32 nearest each f64
    (two words) when p["xd"] (double-to-float rounds to nearest even, as the CPU's)."""
    count = (p["n"] if rows is None else rows) * p["F"]
    if p["xd"]:
        return X[:2 * count].view(torch.float64).to(F32)
    return X[:count].view(F32)


def _pass(p):
    """(first slot, slots) of the level that have histograms in this pass."""
    return p["s_lo"], max(0, min(p["S_h"], p["S_cur"] - p["s_lo"]))


# ---- data checks, fixed-point targets, the binning subsample ----------------------------------

@torch_kernel("forest", "check_finite")
def check_finite(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    X, flags = bufs[1].t, bufs[2].t
    bad = ~torch.isfinite(_x_f32(X, p)).all()
    flags[0] |= (bad * NOT_FINITE_X).to(torch.int32)  # on the device: no read back


@torch_kernel("forest", "sample")
def sample(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    X, out = bufs[1].t, bufs[2].t
    n, F, step, SM = p["n"], p["F"], p["step"], p["SM"]
    x = _x_f32(X, p).view(n, F)[::step] + 0.0  # (m, F); -0 + 0 is +0
    cols = torch.full((F, SM), float("inf"), dtype=F32, device=X.device)
    cols[:, :x.shape[0]] = x.t()
    out[:F * SM] = cols.view(-1).view(torch.int32)


def _order_key(bits):
    """u32 bits (int64) -> the unsigned integer that orders them as f32 values."""
    return torch.where(bits >> 31 == 1, bits ^ M32, bits ^ 0x80000000)


@torch_kernel("forest", "sort_pass")
def sort_pass(bufs, grid, constants):
    s = params(bufs[0], SORT)
    data = bufs[1].t
    j, k, length, count = s["j"], s["k"], s["len"], s["count"]
    D = data[:count * length].view(count, length)
    t = _arange(length // 2, data)
    a = 2 * j * (t // j) + t % j  # the lower index of each compared pair
    x, y = u32(D[:, a]), u32(D[:, a + j])
    swap = (x != y) & ((_order_key(x) > _order_key(y)) == ((a & k) == 0)[None, :])
    D[:, a], D[:, a + j] = to_u32(torch.where(swap, y, x)), to_u32(torch.where(swap, x, y))


@torch_kernel("forest", "targets")
def targets(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    y, out, flags = (b.t for b in bufs[1:])
    n = p["n"]
    v = y[:2 * n].view(torch.float64)
    ok = torch.isfinite(v)
    # round(y 2^e) - m, ties to even: scaling by a power of two is exact in f64.
    q = torch.round(torch.where(ok, v, 0.0) * math.ldexp(1.0, p["ye"]))
    out[:n] = to_u32(torch.where(ok, q.to(I64) - p["ym_lo"], 0))
    flags[0] |= ((~ok).any() * NOT_FINITE_Y).to(torch.int32)


# ---- kernels ------------------------------------------------------------------------------------

@torch_kernel("forest", "bin_features")
def bin_features(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    X, edges, fmeta, binned = (b.t for b in bufs[1:])
    n, F, FW = p["n"], p["F"], p["FW"]
    fm = fmeta[:2 * F].tolist()
    Xv = _x_f32(X, p).view(n, F)
    words = torch.zeros(n, FW, dtype=I64, device=X.device)
    for f in range(F):
        off, nb = fm[2 * f], fm[2 * f + 1]
        if nb <= 1:
            continue  # one bin: every row in bin 0
        thresholds = edges[3 * off:3 * (off + nb - 1):3].contiguous()
        col = Xv[:, f].contiguous()
        b = torch.searchsorted(thresholds, col)  # thresholds below x (the shader's lower bound)
        b = torch.where(torch.isnan(col), 0, b)  # NaN compares false: the search ends at 0
        words[:, f // 4] |= b << (8 * (f % 4))
    binned[:n * FW] = to_u32(words.view(-1))


@torch_kernel("forest", "bootstrap")
def bootstrap(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    state = bufs[1].t
    n, T = p["n"], p["T"]
    if not p["boot"]:
        state[:T * n] = 1
        return
    trees_per = max(1, CHUNK // max(n, 1))
    draws = _arange(n, state)
    for t0 in range(0, T, trees_per):
        t1 = min(T, t0 + trees_per)
        trees = _arange(t1 - t0, state)
        stream = _pcg((_pcg(p["seed"]) + 2 * (p["tree0"] + t0 + trees)) & M32)  # (nt,)
        rows = _pcg((stream[:, None] + draws[None, :]) & M32) % n  # (nt, n) drawn rows
        counts = torch.bincount((trees[:, None] * n + rows).view(-1), minlength=(t1 - t0) * n)
        seg = state[t0 * n:t1 * n]
        seg.copy_(to_u32(u32(seg) + counts))


@torch_kernel("forest", "init_trees")
def init_trees(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    slots, nodes, meta = (b.t for b in bufs[1:])
    T, S, NC, NW, t0 = p["T"], p["S"], p["NC"], 4 + p["C"], p["tree0"]
    sv = slots[:T * S * 4].view(T, S, 4)
    sv.zero_()
    sv[:, 0, 1] = OPEN | BUILT
    roots = nodes.view(-1, NC, NW)[t0:t0 + T, 0]
    roots.zero_()
    roots[:, 0] = -1  # LEAF
    meta.view(-1, 2)[t0:t0 + T] = 1


def _hist_slots(p, slots, want: int):
    """(t, s) of the pass's slots whose flags have `want`, and the histogram view (T, S_h, NB, C)
    of `hist` they index as (t, s - s_lo)."""
    T, S = p["T"], p["S"]
    lo, count = _pass(p)
    flags = slots[:T * S * 4].view(T, S, 4)[:, lo:lo + count, 1]
    t, s = ((flags & want) != 0).nonzero(as_tuple=True)
    return t, s + lo


def _hview(p, hist):
    return hist[:p["T"] * p["S_h"] * p["NB"] * p["C"]].view(p["T"], p["S_h"], p["NB"], p["C"])


@torch_kernel("forest", "hist_clear")
def hist_clear(bufs, grid, constants):
    """Zero the pass's built slots: their histograms are summed by atomics next."""
    p = params(bufs[0], PARAMS)
    t, s = _hist_slots(p, bufs[1].t, BUILT)
    _hview(p, bufs[2].t)[t, s - p["s_lo"]] = 0


@torch_kernel("forest", "hist_build")
def hist_build(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    binned, fmeta, target, state, slots, hist = (b.t for b in bufs[1:])
    n, F, FW, NB, C, S, T = p["n"], p["F"], p["FW"], p["NB"], p["C"], p["S"], p["T"]
    dev = hist.device
    offs = fmeta[0:2 * F:2].to(I64)
    feats = _arange(F, hist)
    # The pass's built slots, numbered: sums are made in (built slot, bin, channel) order.
    tb, sb = _hist_slots(p, slots, BUILT)
    if not len(tb):
        return
    number = torch.full((T * S,), -1, dtype=I64, device=dev)
    number[tb * S + sb] = _arange(len(tb), hist)
    acc = torch.zeros(len(tb) * NB, C, dtype=I64, device=dev)
    words = u32(binned[:n * FW].view(n, FW))
    step = max(1, CHUNK // max(F, 1))
    for i0 in range(0, T * n, step):
        st = u32(state[i0:min(T * n, i0 + step)])
        w, slot = st & 255, st >> 8
        i = ((w != 0) & (slot < S)).nonzero().view(-1)  # DONE (and past the stride): no histogram
        ts = (i + i0) // n * S + slot[i]
        keep = (number[ts] >= 0).nonzero().view(-1)
        ts, r, w = ts[keep], ((i + i0) % n)[keep], w[i][keep]
        if not len(r):
            continue
        m = len(r)
        h = ((number[ts] * NB)[:, None] + offs[None, :] + _bins(words[r], feats[None, :], FW)).view(-1)
        ones = torch.ones(m * F, dtype=I64, device=dev)
        if p["crit"] == MSE:
            v = target[r].to(I64) * w  # signed fixed-point y times the bootstrap count
            acc[:, 0].index_add_(0, h, v[:, None].expand(m, F).reshape(-1))
            acc[:, 2].index_add_(0, h, w[:, None].expand(m, F).reshape(-1))
            acc[:, 3].index_add_(0, h, ones)
        else:
            flat = acc.view(-1)
            flat.index_add_(0, (h.view(m, F) * C + u32(target[r])[:, None]).view(-1),
                            w[:, None].expand(m, F).reshape(-1))
            flat.index_add_(0, h * C + C - 1, ones)
    H = _hview(p, hist)
    hs = sb - p["s_lo"]
    old = u32(H[tb, hs]).view(-1, C)
    new = old + acc  # each channel wraps at 32 bits; the squared-error sum is 64-bit:
    if p["crit"] == MSE:
        total = _signed64(old[:, 0], old[:, 1]) + acc[:, 0]
        new[:, 0], new[:, 1] = total, total >> 32
    H[tb, hs] = to_u32(new).view(len(tb), NB, C)


def _seg_prefix(x, start):
    """Inclusive prefix sums of x (m, NB, ...) along the bins, restarting at each feature's first
    bin (start: (NB,) the first bin of each bin's feature)."""
    cs = torch.cumsum(x, 1)
    pad = torch.cat([torch.zeros_like(cs[:, :1]), cs], 1)
    return cs - pad[:, start]


class _Layout:
    """Where each feature's bins sit among the NB global bins (from fmeta)."""

    def __init__(self, fmeta, F: int, device):
        fm = fmeta[:2 * F].to(I64)
        self.F = F
        self.offs, self.nbs = fm[0::2], fm[1::2]
        self.feat = torch.repeat_interleave(torch.arange(F, device=device), self.nbs)  # (NB,)
        self.start = self.offs[self.feat]
        self.last = (self.offs + self.nbs - 1)[self.feat]  # each bin's feature's last bin
        self.NB = len(self.feat)


@torch_kernel("forest", "hist_prefix_wg")  # the same, a workgroup per (tree, slot, feature) in WGSL
@torch_kernel("forest", "hist_prefix")
def hist_prefix(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    fmeta, slots, hist = (b.t for b in bufs[1:])
    NB, C = p["NB"], p["C"]
    lay = _Layout(fmeta, p["F"], hist.device)
    t, s = _hist_slots(p, slots, BUILT)
    H = _hview(p, hist)
    step = max(1, CHUNK // (NB * C))
    for a in range(0, len(t), step):
        tc, hc = t[a:a + step], s[a:a + step] - p["s_lo"]
        h = u32(H[tc, hc])
        out = _seg_prefix(h, lay.start)
        if p["crit"] == MSE:  # one 64-bit running sum in the (lo, hi) channels
            v = _seg_prefix(_signed64(h[..., 0], h[..., 1]), lay.start)
            out[..., 0], out[..., 1] = v, v >> 32
        H[tc, hc] = to_u32(out)


def _eligible(p, tot):
    """Whether nodes with these totals (m, C) look for a split."""
    C, K = p["C"], p["K"]
    cnt = tot[:, C - 1]
    ok = (cnt >= p["mss"]) & (cnt >= 2 * p["msl"])
    if p["depth"] >= p["max_depth"]:
        ok &= False
    if p["crit"] != MSE:
        w = tot[:, :K].sum(1) & M32
        ok &= ~(tot[:, :K] == w[:, None]).any(1)
    return ok


def _scan(p, h, lay: _Layout, xlogx):
    """Every feature's best split in slots with cumulative histograms h (m, NB, C), as the
    reference's `_Slot.scan`: (score (m, F) f32, b, b2 (m, F) bins within the feature, has a
    candidate (m, F), varies (m, F): at least two non-empty bins)."""
    C, K, F, NB = p["C"], p["K"], lay.F, lay.NB
    m, dev = h.shape[0], h.device
    bins = torch.arange(NB, device=dev)
    upto = h[..., C - 1]  # cumulative rows
    before = torch.cat([torch.zeros_like(upto[:, :1]), upto[:, :-1]], 1)
    nonempty = upto != torch.where(bins == lay.start, 0, before)
    idx = torch.where(nonempty, bins[None, :], NB)
    after = torch.flip(torch.cummin(torch.flip(idx, [1]), 1).values, [1])
    nxt = torch.cat([after[:, 1:], torch.full((m, 1), NB, dtype=I64, device=dev)], 1)
    total = upto[:, lay.last]
    valid = (nonempty & (nxt <= lay.last[None, :]) & (upto >= p["msl"])
             & (total - upto >= p["msl"]))
    if p["crit"] == MSE:
        s = _signed64(h[..., 0], h[..., 1])
        wl = h[..., 2]
        sl, sr = s.to(F32), (s[:, lay.last] - s).to(F32)
        wlf, wrf = wl.to(F32), (wl[:, lay.last] - wl).to(F32)
        score = (sl * sl) / wlf + (sr * sr) / wrf  # f32 op by op, as the shader
    else:
        lk = h[..., :K]
        rk = lk[:, lay.last] - lk
        wl = lk.sum(-1) & M32
        wr = (lk[:, lay.last].sum(-1) & M32) - wl
        if p["crit"] == GINI:
            sides = []
            for side, w in ((lk, wl), (rk, wr)):
                wf, acc = w.to(F32), None
                for k in range(K):
                    c = side[..., k].to(F32)
                    q = (c * c) / wf
                    acc = q if acc is None else acc + q
                sides.append(acc)
            score = sides[0] + sides[1]
        else:
            assert p["crit"] == ENTROPY
            score = None
            for side in (lk, rk):
                for k in range(K):
                    term = xlogx[side[..., k].clamp(0, len(xlogx) - 1)]
                    score = term if score is None else score + term
            score = score - xlogx[wl.clamp(0, len(xlogx) - 1)]
            score = score - xlogx[wr.clamp(0, len(xlogx) - 1)]
    feat = lay.feat[None, :].expand(m, NB)
    masked = torch.where(valid, score, float("-inf"))
    top = torch.full((m, F), float("-inf"), device=dev).scatter_reduce(1, feat, masked, "amax")
    at_top = valid & (masked == top.gather(1, feat))
    g = torch.full((m, F), NB, dtype=I64, device=dev).scatter_reduce(
        1, feat, torch.where(at_top, bins[None, :], NB).expand(m, NB), "amin")  # lowest bin
    has = g < NB
    gs = torch.where(has, g, 0)
    counts = torch.zeros(m, F, dtype=I64, device=dev).scatter_add(1, feat, nonempty.to(I64))
    return (top, gs - lay.offs[None, :], nxt.gather(1, gs) - lay.offs[None, :], has, counts >= 2)


def _chosen(p, tc, node, m, dev):
    """(rank (m, F), chosen (m, F)): the features a node may split on, by its permutation."""
    F = p["F"]
    f = torch.arange(F, device=dev)[None, :]
    if p["mf"] >= F:
        return f.expand(m, F), torch.ones(m, F, dtype=torch.bool, device=dev)
    key = _hash3(p["seed"], 2 * (p["tree0"] + tc) + 1, node)
    rank = _feature_rank(key[:, None], f, p["hb"], F)
    return rank, rank < p["mf"]


def _derive(p, sv, H, prev, t, s):
    """Open slots that were not built: (cumulative) parent minus built sibling. (Only when a level
    has one pass: then S_h = S and the parent level's histograms are whole in `prev`.)"""
    P = _hview(p, prev)
    lo = p["s_lo"]
    step = max(1, CHUNK // (p["NB"] * p["C"]))
    for a in range(0, len(t), step):
        tc, sc = t[a:a + step], s[a:a + step]
        x, y = u32(P[tc, u32(sv[tc, sc, 2])]), u32(H[tc, (sc ^ 1) - lo])
        out = x - y
        if p["crit"] == MSE:  # borrow from each bin's low word
            out[..., 1] -= (x[..., 0] < y[..., 0]).to(I64)
        H[tc, sc - lo] = to_u32(out)


@torch_kernel("forest", "split_scan_wg")  # the same, a workgroup per (tree, slot, feature) in WGSL
@torch_kernel("forest", "split_scan")
def split_scan(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    fmeta, slots, hist, nodes, cand, xlogx, prev = (b.t for b in bufs[1:])
    T, S, NB, C, F, NC = p["T"], p["S"], p["NB"], p["C"], p["F"], p["NC"]
    dev = hist.device
    lay = _Layout(fmeta, F, dev)
    sv = slots[:T * S * 4].view(T, S, 4)
    H, lo = _hview(p, hist), p["s_lo"]
    t, s = _hist_slots(p, slots, OPEN)
    derived = ((u32(sv[t, s, 1]) & BUILT) == 0).nonzero().view(-1)
    if len(derived):
        _derive(p, sv, H, prev, t[derived], s[derived])
    cv = cand[:T * S * F * 4].view(T, S, F, 4)
    nv = nodes.view(-1, 4 + C)
    ht = int(lay.offs[0] + lay.nbs[0] - 1)  # feature 0's last cumulative bin: the node's totals
    step = max(1, CHUNK // (NB * max(C, 4)))
    for a in range(0, len(t), step):
        tc, sc = t[a:a + step], s[a:a + step]
        node = u32(sv[tc, sc, 0])
        h = u32(H[tc, sc - lo])
        tot = h[:, ht]
        if p["depth"] == 0:
            nv[(p["tree0"] + tc) * NC + node, 4:] = to_u32(tot)
        out = torch.zeros(len(tc), F, 4, dtype=I64, device=dev)
        ok = _eligible(p, tot).nonzero().view(-1)
        if len(ok):
            score, b, b2, has, varies = _scan(p, h[ok], lay, xlogx)
            _, chosen = _chosen(p, tc[ok], node[ok], len(ok), dev)
            has &= chosen
            bits = u32(score.contiguous().view(torch.int32))
            zero = torch.zeros_like(b)
            out[ok] = torch.stack([torch.where(has, bits, zero), torch.where(has, b, zero),
                                   torch.where(has, b2, zero), has.to(I64) | 2 * varies.to(I64)], -1)
        cv[tc, sc] = to_u32(out)


@torch_kernel("forest", "split_pick")
def split_pick(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    fmeta, slots, hist, nodes, cand, xlogx, left = (b.t for b in bufs[1:])
    T, S, NB, C, F, NC = p["T"], p["S"], p["NB"], p["C"], p["F"], p["NC"]
    dev = hist.device
    lay = _Layout(fmeta, F, dev)
    sv = slots[:T * S * 4].view(T, S, 4)
    t, s = _hist_slots(p, slots, OPEN)
    node = u32(sv[t, s, 0])
    nv = nodes.view(-1, 4 + C)
    rec = (p["tree0"] + t) * NC + node
    ok = _eligible(p, u32(nv[rec, 4:])).nonzero().view(-1)
    t, s, node, rec = t[ok], s[ok], node[ok], rec[ok]
    if not len(t):
        return
    m = len(t)
    c = u32(cand[:T * S * F * 4].view(T, S, F, 4)[t, s])  # (m, F, 4)
    score = to_u32(c[..., 0]).view(F32)
    rank, chosen = _chosen(p, t, node, m, dev)
    has = chosen & ((c[..., 3] & 1) != 0)
    varied = (chosen & ((c[..., 3] & 2) != 0)).any(1)
    fidx = torch.arange(F, device=dev)[None, :]
    masked = torch.where(has, score, float("-inf"))
    top = masked.max(1).values
    f = torch.where(has & (masked == top[:, None]), fidx, F).min(1).values  # lowest feature
    b, b2 = c[..., 1].gather(1, f.clamp(max=F - 1)[:, None])[:, 0], c[..., 2].gather(
        1, f.clamp(max=F - 1)[:, None])[:, 0]
    H, lo = _hview(p, hist), p["s_lo"]
    back = (~varied).nonzero().view(-1)
    if len(back):  # no chosen feature varies: the permutation's first feature that does
        vary = (c[back, :, 3] & 2) != 0
        pick = torch.where(vary, rank[back], F).argmin(1)
        _, b_, b2_, has_, _ = _scan(p, u32(H[t[back], s[back] - lo]), lay, xlogx)
        got = has_.gather(1, pick[:, None])[:, 0] & vary.any(1)
        f[back] = torch.where(got, pick, F)
        b[back] = b_.gather(1, pick[:, None])[:, 0]
        b2[back] = b2_.gather(1, pick[:, None])[:, 0]
    found = (f < F).nonzero().view(-1)
    if not len(found):
        return
    f, b, b2, t, s, rec = f[found], b[found], b2[found], t[found], s[found], rec[found]
    nv[rec, :3] = to_u32(torch.stack([f, b, b2], 1))
    left[:T * S * C].view(T, S, C)[t, s] = H[t, s - lo, lay.offs[f] + b]  # the left child's channels


@torch_kernel("forest", "alloc")
def alloc(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    slots, nodes, left, nxt, childmap, meta = (b.t for b in bufs[1:7])
    T, S, S_cur, S_next, NC, C, K = p["T"], p["S"], p["S_cur"], p["S_next"], p["NC"], p["C"], p["K"]
    NW, t0, mse = 4 + C, p["tree0"], p["crit"] == MSE
    sv = slots[:T * S * 4].view(T, S, 4)[:, :S_cur]
    nv = nodes.view(-1, NW)
    mv = meta.view(-1, 2)
    tree = t0 + _arange(T, nodes)[:, None]
    is_open = (sv[..., 1] & OPEN) != 0
    rec = torch.where(is_open, tree * NC + u32(sv[..., 0]), 0)  # (T, S_cur) node records
    splits = is_open & (u32(nv[rec, 0]) != LEAF)
    tot = u32(nv[rec, 4:4 + C])
    lst = u32(left[:T * S * C].view(T, S, C)[:, :S_cur])
    rst = tot - lst
    if mse:
        rst[..., 1] -= (tot[..., 0] < lst[..., 0]).to(I64)
    rst &= M32

    def child_open(st):
        cnt = st[..., C - 1]
        ok = (cnt >= p["mss"]) & (cnt >= 2 * p["msl"])
        if p["depth"] + 1 >= p["max_depth"]:
            ok &= False
        if not mse:
            w = st[..., :K].sum(-1) & M32
            ok &= ~(st[..., :K] == w[..., None]).any(-1)
        return ok

    open_l, open_r = child_open(lst) & splits, child_open(rst) & splits
    pairs = open_l | open_r
    split_no = torch.cumsum(splits.to(I64), 1) - splits.to(I64)
    pair_no = torch.cumsum(pairs.to(I64), 1) - pairs.to(I64)
    first = u32(mv[t0:t0 + T, 0])
    nid = first[:, None] + 2 * split_no
    ts, ss = splits.nonzero(as_tuple=True)
    nid_s = nid[ts, ss]
    nv[rec[ts, ss], 3] = to_u32(nid_s)
    for side, st in ((0, lst), (1, rst)):
        child = torch.zeros(len(ts), NW, dtype=I64, device=nodes.device)
        child[:, 0] = LEAF
        child[:, 4:] = st[ts, ss]
        nv[(t0 + ts) * NC + nid_s + side] = to_u32(child)
    cm = childmap[:T * S * 2].view(T, S, 2)
    cm[ts, ss] = to_u32(torch.full((len(ts), 2), DONE, dtype=I64, device=nodes.device))
    tp, sp = pairs.nonzero(as_tuple=True)
    small = (lst[tp, sp, C - 1] > rst[tp, sp, C - 1]).to(I64)  # 0: left has fewer rows (or as many)
    nx = nxt[:T * S * 4].view(T, S, 4)
    for side, opened in ((0, open_l), (1, open_r)):
        ns = 2 * pair_no[tp, sp] + (small != side).to(I64)  # the built child takes the even slot
        flags = torch.where(opened[tp, sp], OPEN, 0) | torch.where(small == side, BUILT, 0)
        if p["S_h"] < S:  # several passes a level: no parent histogram to derive from
            flags = torch.where(opened[tp, sp], OPEN | BUILT, 0)
        nx[tp, ns] = to_u32(torch.stack([nid[tp, sp] + side, flags, sp, torch.zeros_like(sp)], 1))
        has = flags != 0
        cm[tp[has], sp[has], side] = to_u32(ns[has])
    total_pairs = pairs.sum(1)
    if S_next:
        rest = _arange(S_next, nodes)[None, :] >= 2 * total_pairs[:, None]
        nx[:, :S_next, 1][rest] = 0
    mv[t0:t0 + T] = to_u32(torch.stack([first + 2 * splits.sum(1), total_pairs], 1))


@torch_kernel("forest", "route_rows")
def route_rows(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    binned, state, slots, nodes, childmap = (b.t for b in bufs[1:])
    n, FW, S, NC, C, T = p["n"], p["FW"], p["S"], p["NC"], p["C"], p["T"]
    NW = 4 + C
    words = u32(binned[:n * FW].view(n, FW))
    sv = slots[:T * S * 4].view(T * S, 4)
    nv = nodes.view(-1, NW)
    cm = childmap.view(-1, 2)
    for i0 in range(0, T * n, CHUNK):
        seg = state[i0:min(T * n, i0 + CHUNK)]
        st = u32(seg)
        w, slot = st & 255, st >> 8
        i = ((w != 0) & (slot < S)).nonzero().view(-1)  # DONE rows rest
        t, r, slot, w = (i + i0) // n, (i + i0) % n, slot[i], w[i]
        ts = t * S + slot
        is_open = (u32(sv[ts, 1]) & OPEN) != 0
        rec = torch.where(is_open, (p["tree0"] + t) * NC + u32(sv[ts, 0]), 0)
        split = is_open & (u32(nv[rec, 0]) != LEAF)
        f = u32(nv[rec, 0])
        b = _bins(words[r], torch.where(split, f, 0)[:, None], FW)[:, 0]
        right = (b > u32(nv[rec, 1])).to(I64)
        dest = torch.where(split, u32(cm[ts, right]), DONE)
        seg[i] = to_u32((dest << 8) | w)


@torch_kernel("forest", "finalize")
def finalize(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    nodes, meta, edges, fmeta, ptree, pval = (b.t for b in bufs[1:])
    T, NC, C, K, t0 = p["T"], p["NC"], p["C"], p["K"], p["tree0"]
    NW = 4 + C
    recs = u32(nodes.view(-1, NW)[t0 * NC:(t0 + T) * NC])  # (T * NC, NW)
    count = u32(meta.view(-1, 2)[t0:t0 + T, 0])
    live = (_arange(NC, nodes)[None, :] < count[:, None]).view(-1)
    i = live.nonzero().view(-1)
    r = recs[i]
    f = r[:, 0]
    split = f != LEAF
    offs = fmeta[0::2].to(I64)
    fs = torch.where(split, f, 0)
    g, g2 = offs[fs] + r[:, 1], offs[fs] + r[:, 2]
    E = edges.view(-1, 3)
    g, g2 = torch.where(split, g, 0), torch.where(split, g2, 1)
    mid = (E[g, 2] + E[g2, 1]) * 0.5
    thr = torch.minimum(torch.maximum(mid, E[g, 0]), E[g2 - 1, 0])
    out = torch.stack([f, torch.where(split, u32(thr.view(torch.int32)), 0),
                       torch.where(split, r[:, 3], LEAF)], 1)
    pt = ptree.view(-1, 3)[t0 * NC:(t0 + T) * NC]
    pt[i] = to_u32(out)
    if p["crit"] == MSE:
        v = _signed64(r[:, 4], r[:, 5]).to(torch.float32) / r[:, 6].to(torch.float32)
        # Scaled back in f64 and rounded once, as the reference does (the shader: f32 ops).
        pval[t0 * NC:(t0 + T) * NC][i] = (v.double() * p["inv_scale"] + p["mid"]).float()
    else:
        counts = r[:, 4:4 + K]
        w = (counts.sum(1) & M32).to(torch.float32)
        pval.view(-1, K)[t0 * NC:(t0 + T) * NC][i] = counts.to(torch.float32) / w[:, None]


def _leaves(X, ptree, NC: int, trees, rows, F: int):
    """Leaf record of each (tree, row): trees (T,), rows (R,) int64 -> (T, R)."""
    pt = ptree.view(-1, 3)
    feats, lefts = u32(pt[:, 0]), u32(pt[:, 2])
    thr = pt[:, 1].view(torch.float32)
    base = (trees * NC)[:, None]
    node = torch.zeros(len(trees), len(rows), dtype=I64, device=X.device)
    while True:
        e = base + node
        f = feats[e]
        walk = f != LEAF
        if not bool(walk.any()):
            return e
        x = X[rows[None, :] * F + torch.where(walk, f, 0)]
        step = torch.where(x <= thr[e], lefts[e], lefts[e] + 1)
        node = torch.where(walk, step, node)


@torch_kernel("forest", "predict")
def predict(bufs, grid, constants):
    """out (n, K) f64: the mean of the trees' leaf values, summed in f32 in tree order as the
    shader does, then widened (the page reads f64)."""
    p = params(bufs[0], PARAMS)
    X, ptree, pval, out = (b.t for b in bufs[1:])
    n, F, K, NC, T = p["n"], p["F"], p["K"], p["NC"], p["T_all"]
    x = _x_f32(X, p)
    trees = _arange(T, X)
    vals = pval.view(-1, K)
    step = max(1, CHUNK // max(T * K, 1))
    for r0 in range(0, n, step):
        rows = _arange(min(n, r0 + step) - r0, X) + r0
        leaf = _leaves(x, ptree, NC, trees, rows, F)  # (T, R)
        acc = vals[leaf[0]].clone()
        for t in range(1, T):
            acc += vals[leaf[t]]
        mean = (acc / float(T)).double()  # (R, K)
        out[2 * r0 * K:2 * (r0 + len(rows)) * K] = mean.view(-1).view(torch.int32)


@torch_kernel("forest", "importance")
def importance(bufs, grid, constants):
    """out (T_all, G, F) f32: per tree and chunk of IMP_CHUNK nodes, each feature's impurity
    decrease, summed in node order in f32 as the shader (and the reference) do."""
    p = params(bufs[0], PARAMS)
    nodes, meta, out = (b.t for b in bufs[1:])
    NC, C, K, F, T = p["NC"], p["C"], p["K"], p["F"], p["T_all"]
    NW, G = 4 + C, -(-NC // IMP_CHUNK)
    rec = u32(nodes[:T * NC * NW].view(T, NC, NW))
    count = u32(meta.view(-1, 2)[:T, 0])
    split = (rec[..., 0] != LEAF) & (_arange(NC, nodes)[None, :] < count[:, None])  # (T, NC)
    tn = split.nonzero(as_tuple=True)
    dec = torch.zeros(T, NC, dtype=F32, device=nodes.device)
    left = rec[tn[0], torch.where(split, rec[..., 3], 0)[tn]]  # (m, NW) the left child
    right = rec[tn[0], torch.where(split, rec[..., 3], 0)[tn] + 1]
    dec[tn] = _decrease(p, left, right, K)
    res = torch.zeros(T * G, F, dtype=F32, device=nodes.device)
    feat = torch.where(split, rec[..., 0], 0)
    pad = G * IMP_CHUNK - NC
    if pad:
        dec = torch.cat([dec, dec.new_zeros(T, pad)], 1)
        feat = torch.cat([feat, feat.new_zeros(T, pad)], 1)
    dec, feat = dec.view(T * G, IMP_CHUNK), feat.view(T * G, IMP_CHUNK)
    rows = _arange(T * G, nodes)
    for j in range(min(IMP_CHUNK, int(count.max()) if T else 0)):  # node order, one add a row
        res[rows, feat[:, j]] += dec[:, j]
    out[:T * G * F] = res.view(-1)


def _decrease(p, left, right, K: int):
    """The impurity decrease of each split from its children's channels (m, NW), op by op in
    f32 (log in f64, rounded), as the reference's `importance`."""
    if p["crit"] == MSE:
        wl, wr = left[:, 6].to(F32), right[:, 6].to(F32)
        d = (_signed64(left[:, 4], left[:, 5]).to(F32) / wl
             - _signed64(right[:, 4], right[:, 5]).to(F32) / wr)
        return ((wl * wr) / (wl + wr)) * (d * d)
    cl_all, cr_all = left[:, 4:4 + K], right[:, 4:4 + K]
    fl, fr = cl_all.sum(1).to(F32), cr_all.sum(1).to(F32)
    fw = ((cl_all.sum(1) + cr_all.sum(1)) & M32).to(F32)
    acc = torch.zeros_like(fl)
    for k in range(K):
        cl, cr = cl_all[:, k].to(F32), cr_all[:, k].to(F32)
        if p["crit"] == GINI:
            d = cl / fl - cr / fr
            acc = acc + d * d
        else:
            c = cl + cr
            for cx, fx in ((cl, fl), (cr, fr)):
                term = cx * torch.log(((cx * fw) / (c * fx)).double()).to(F32)
                acc = torch.where(cx > 0, acc + term, acc)
    return ((fl * fr) / fw) * acc if p["crit"] == GINI else acc


@torch_kernel("forest", "oob")
def oob(bufs, grid, constants):
    p = params(bufs[0], PARAMS)
    X, ptree, pval, state, out = (b.t for b in bufs[1:])
    n, F, K, NC, T = p["n"], p["F"], p["K"], p["NC"], p["T"]
    trees = p["tree0"] + _arange(T, X)
    vals = pval.view(-1, K)
    ov = out[:n * (K + 1)].view(n, K + 1)
    inbag = (u32(state[:T * n]).view(T, n) & 255) != 0
    x = _x_f32(X, p)
    step = max(1, CHUNK // max(T * K, 1))
    for r0 in range(0, n, step):
        rows = _arange(min(n, r0 + step) - r0, X) + r0
        leaf = _leaves(x, ptree, NC, trees, rows, F)
        outside = ~inbag[:, rows]  # (T, R): trees that did not draw the row
        ov[rows, :K] = (ov[rows, :K].double() + (vals[leaf].double() * outside[..., None]).sum(0)).float()
        ov[rows, K] += outside.sum(0).to(torch.float32)
