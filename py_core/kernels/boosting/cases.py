"""Self-test cases of the boosting family: the first splits of a tree (K trees at once) from random
rows with missing values: binning, gradients, the root's histogram, its best split and the
children's (one built, one derived), the leaves' values, the raw scores and the losses."""
from __future__ import annotations

import math
from array import array

from ..cases import case
from . import CW, H_WORDS, LOG, MW, NR, PARAMS, SQUARED, TS, WG, grid


def _first_splits_case(n, F, K, loss, steps):
    async def setup(backend, rng):
        B, L = 18, steps + 1
        NN, FW = 2 * L - 1, -(-F // 4)
        X = array("f", [math.nan if rng.random() < 0.05 else rng.gauss(0, 1) for _ in range(n * F)])
        y = array("f", [rng.randrange(max(2, K)) if loss == LOG else rng.gauss(0, 3) for _ in range(n)])
        edges = array("f")
        for _ in range(F):  # B - 2 sorted thresholds, then +inf
            edges.extend(sorted(rng.gauss(0, 1) for _ in range(B - 2)) + [math.inf] * 2)
        P = backend.buffer("u32", uniform=True, data=PARAMS.pack(
            n=n, F=F, FW=FW, K=K, B=B, loss=loss, NN=NN, L=L, max_depth=0xFFFFFFFF, msl=5, mf=F,
            seed=rng.randrange(2**32), I=0, staged=0, xd=0, b16=0, loff=0, lw=-(-n // WG),
            lr=0.1, l2=rng.choice([0.0, 1.0]), min_hess=1e-3, step=0, SM=0))
        buf = backend.buffer
        Xb, eb = buf("f32", data=X), buf("f32", data=edges)
        fmeta, fmiss = buf("u32", data=array("I", [B - 2] * F)), buf("u32", F)
        binned, yb = buf("u32", n * FW), buf("f32", data=y)
        raw = buf("f32", data=array("f", [rng.gauss(0, 1) for _ in range(n * K)]))
        gh, qs, node_of, ts = buf("f32", 2 * n * K), buf("u32", 2 * K), buf("u32", K * n), buf("u32", K * TS)
        nodes, cand, ctr = buf("u32", K * NN * NR), buf("u32", K * 2 * F * CW), buf("u32", 1)
        hist, med = buf("u32", K * L * F * B * H_WORDS), buf("u32", NN * MW)
        losses = buf("f32", 2 * -(-n // WG))
        k = {e: await backend.kernel("boosting", e) for e in (
            "bin_rows", "gradients", "hist_build", "root_totals", "split_find", "grow", "route",
            "leaf_values", "update", "loss")}
        g = lambda threads: grid(-(-threads // WG))  # noqa: E731
        build = [P, binned, gh, qs, node_of, ts, hist]
        find = [P, hist, nodes, ts, cand, fmeta, fmiss, qs, ctr]
        plan = (backend.plan().dispatch(k["bin_rows"], [P, Xb, eb, fmeta, binned, fmiss], g(n * FW))
                .dispatch(k["gradients"], [P, raw, yb, gh, qs, node_of, ts], g(n))
                .dispatch(k["hist_build"], build, g(K * n))
                .dispatch(k["root_totals"], [P, hist, nodes, ts, qs], g(K))
                .dispatch(k["split_find"], find, g(2 * K * F)))
        for _ in range(steps):
            (plan.dispatch(k["grow"], [P, nodes, ts, cand, fmiss], g(K))
             .dispatch(k["route"], [P, binned, nodes, ts, node_of, fmiss], g(K * n))
             .dispatch(k["hist_build"], build, g(K * n))
             .dispatch(k["split_find"], find, g(2 * K * F)))
        (plan.dispatch(k["leaf_values"], [P, nodes, ts, qs, med], g(K * NN))
         .dispatch(k["update"], [P, nodes, node_of, raw], g(K * n))
         .dispatch(k["loss"], [P, raw, yb, losses, ctr], g(n)))
        # The log loss's gradients come from exp, whose last bit GPUs differ in: its scores only
        outs = [raw, losses] if loss == LOG else [binned, hist, nodes, node_of, raw, losses]
        return plan, outs, K * n * F * (steps + 1)
    return setup


case("boosting first splits, squared error, 3000 rows x 9 features", unit="G row-features/s")(
    _first_splits_case(3000, 9, 1, SQUARED, 3))
case("boosting first splits, log loss, 4 classes", atol=1e-4, rtol=1e-3, unit="G row-features/s")(
    _first_splits_case(2000, 6, 4, LOG, 2))
