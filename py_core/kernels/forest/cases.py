"""Self-test cases of the forest family: the histogram kernel alone, and the first two levels of
a small forest (bootstrap, histograms with the subtraction trick, nodes split from their rows,
with histograms of their rows or without (split_small), split search, numbering and routing)
for each criterion, on random binned data."""
from __future__ import annotations

from array import array

from ..cases import case
from . import ENTROPY, GINI, MSE, PARAMS, WG, bin_place, grid, perm_rounds


def _data(rng, n, F, crit, K, b16=0):
    """Random bins (b16: 16-bit ones, a feature of up to 700), targets and the bins' fmeta."""
    nb = [rng.randint(1, 700 if b16 and f % 2 else 40) for f in range(F)]
    fmeta = array("I")
    for b in nb:
        fmeta.extend((len(fmeta) and fmeta[-2] + fmeta[-1], b))
    FW = -(-F // (2 if b16 else 4))
    binned = array("I", [0] * (n * FW))
    for r in range(n):
        for f in range(F):
            w, shift, _ = bin_place(f, b16)
            binned[r * FW + w] |= rng.randrange(nb[f]) << shift
    if crit == MSE:
        target = array("I", array("i", [rng.randint(-2**23 + 1, 2**23 - 1) for _ in range(n)]).tobytes())
    else:
        target = array("I", [rng.randrange(K) for _ in range(n)])
    return fmeta, binned, target, sum(nb), FW


def _params(**kw):
    base = dict(n=0, F=0, FW=0, NB=0, C=0, K=1, crit=0, T=0, tree0=0, seed=0, boot=1, mss=2, msl=1,
                max_depth=6, mf=0, pr=24, S=0, NC=0, depth=0, S_cur=1, S_next=0, T_all=0, H_cur=0, H_next=0,
                inv_scale=1.0, mid=0.0, xd=0, ye=0, ym_lo=0, ym_hi=0, step=1, SM=0, S_h=0, s_lo=0, small=0, b16=0, row_scan=0)
    base.update(kw)
    base["S_h"] = base["S_h"] or base["S"]  # a level's histograms in one pass
    return PARAMS.pack(**base)


def _histogram_case(n, F, T, S):
    async def setup(backend, rng):
        fmeta, binned, target, NB, FW = _data(rng, n, F, MSE, 1)
        C = 4
        state = array("I", [(rng.randrange(S) << 8) | rng.randrange(4) for _ in range(T * n)])
        slots = array("I", [0] * (T * S * 4))
        for i in range(T * S):
            slots[4 * i + 1] = rng.choice([0, 2, 3])
        k = await backend.kernel("forest", "hist_build")
        P = backend.buffer("u32", uniform=True, data=_params(n=n, F=F, FW=FW, NB=NB, C=C, T=T, S=S,
                                                             S_cur=S))
        bufs = [backend.buffer("u32", data=d) for d in (binned, fmeta, target, state, slots)]
        hist = backend.buffer("u32", T * S * NB * C)
        plan = backend.plan().clear(hist).dispatch(k, [P, *bufs, hist], grid(-(-T * n // WG)))
        return plan, [hist], T * n * F
    return setup


def _two_levels_case(n, F, T, crit, K, max_features, b16=0, row_scan=0):
    async def setup(backend, rng):
        fmeta, binned, target, NB, FW = _data(rng, n, F, crit, K, b16)
        C = 4 if crit == MSE else K + 1
        S, NC = 4, 15  # two levels: at most 2 slots below the root; 7 nodes
        names = ("bootstrap", "init_trees", "hist_clear", "hist_build", "split_vary", "split_rows",
                 "split_small", "split_scan", "split_pick", "alloc_count", "alloc_scan", "alloc_write",
                 "route_rows")
        k = {name: await backend.kernel("forest", name) for name in names}
        common = dict(n=n, F=F, FW=FW, NB=NB, C=C, K=K, crit=crit, T=T, seed=rng.randrange(2**32),
                      mss=2, msl=rng.randint(1, 3), max_depth=2, mf=max_features, pr=perm_rounds(F),
                      S=S, NC=NC, T_all=T, small=n // 2, b16=b16,  # the smaller child: split from its rows,
                      row_scan=row_scan)  # without histograms (split_small) where it has at most row_scan
        P = [backend.buffer("u32", uniform=True, data=_params(**common, depth=d, S_cur=1 if d == 0 else 2,
                                                              S_next=2 if d == 0 else 0, H_cur=1 if d == 0 else 2,
                                                              H_next=2 if d == 0 else 0))
             for d in (0, 1)]
        fb, bb, tb = (backend.buffer("u32", data=d) for d in (fmeta, binned, target))
        xlogx = backend.buffer("f32", data=array("f", [0.0]))
        if crit == ENTROPY:
            import math
            xlogx = backend.buffer("f32", data=array("f", [0.0] + [v * math.log(v) for v in range(1, n + 1)]))
        state = backend.buffer("u32", T * n)
        hist = [backend.buffer("u32", T * S * NB * C) for _ in range(2)]
        slots = [backend.buffer("u32", T * S * 4) for _ in range(2)]
        nodes, meta = backend.buffer("u32", T * NC * (4 + C)), backend.buffer("u32", 3 * T)
        cand, left = backend.buffer("u32", T * S * F * 4), backend.buffer("u32", T * S * C)
        childmap, rows = backend.buffer("u32", T * S * 2), backend.buffer("u32", T * n)
        counts, hmap = backend.buffer("u32", T * S * 4), backend.buffer("u32", T * S)
        g = lambda threads: grid(-(-threads // WG))  # noqa: E731
        plan = (backend.plan().clear(state).clear(hist[1])
                .dispatch(k["bootstrap"], [P[0], state], g(T * n))
                .dispatch(k["init_trees"], [P[0], slots[0], nodes, meta], g(T * S)))
        for d in (0, 1):
            cur, other = hist[d % 2], hist[1 - d % 2]
            sc, so = slots[d % 2], slots[1 - d % 2]
            s_cur = 1 if d == 0 else 2
            (plan.dispatch(k["hist_clear"], [P[d], sc, cur, hmap], grid(T * s_cur))
             .dispatch(k["hist_build"], [P[d], bb, fb, tb, state, sc, cur], g(T * n))
             .dispatch(k["split_vary"], [P[d], fb, sc, cur, nodes, cand, xlogx, other, hmap], g(T * s_cur * F))
             .dispatch(k["split_rows"], [P[d], fb, sc, tb, nodes, cand, cur, bb, rows], grid(T * s_cur))
             .dispatch(k["split_small"], [P[d], bb, sc, tb, nodes, cand, xlogx, left, rows], grid(T * s_cur))
             .dispatch(k["split_scan"], [P[d], fb, sc, cur, nodes, cand, xlogx, other, hmap], g(T * s_cur * F))
             .dispatch(k["split_pick"], [P[d], fb, sc, cur, nodes, cand, xlogx, left, hmap], g(T * s_cur))
             .dispatch(k["alloc_count"], [P[d], sc, nodes, left, so, childmap, meta, counts, hmap], g(T * s_cur))
             .dispatch(k["alloc_scan"], [P[d], sc, nodes, left, so, childmap, meta, counts, hmap], grid(T))
             .dispatch(k["alloc_write"], [P[d], sc, nodes, left, so, childmap, meta, counts, hmap], g(T * s_cur)))
            if d == 0:
                plan.dispatch(k["route_rows"], [P[d], bb, state, sc, nodes, childmap, so, rows], g(T * n))
        return plan, [nodes, meta, cand, state], 2 * T * n * F
    return setup


case("forest histogram 4000 rows x 12 features x 8 trees", unit="G row-features/s")(
    _histogram_case(4000, 12, 8, 8))
case("forest two levels, squared error", unit="G row-features/s")(
    _two_levels_case(1500, 7, 4, MSE, 1, 7))
case("forest two levels, gini, 3 of 9 features", unit="G row-features/s")(
    _two_levels_case(1500, 9, 4, GINI, 3, 3))
case("forest two levels, entropy", unit="G row-features/s")(
    _two_levels_case(800, 5, 3, ENTROPY, 4, 5))
case("forest two levels, gini, small nodes split from their rows", unit="G row-features/s")(
    _two_levels_case(100, 6, 3, GINI, 3, 2, row_scan=50))
case("forest two levels, gini, 16-bit bins", unit="G row-features/s")(
    _two_levels_case(1500, 6, 3, GINI, 3, 6, b16=1))
