"""A fitted booster's trees: from the grower's arrays, to and from the JSON format (the package's
docstring), and prediction on a backend (the `predict` kernel walks them over the rows' f32
values: x <= threshold goes left, NaN where missing_left says)."""
from __future__ import annotations

import math
from array import array

from ..kernels.boosting import (
    CAT_WORDS,
    CATEGORY,
    MISSING_LEFT,
    NONE,
    PARAMS,
    TW,
    WG,
    bits,
    bitset,
    from_bits,
    grid,
    in_bitset,
)

# A split of a feature's missing values alone sends every value left: the grid's last edge,
# +inf, as scikit-learn's threshold. JSON holds no infinity (the tab's result crosses to the page
# as JSON, and the ONNX export refuses one): the largest f32, which every f32 value is <= too.
F32_MAX = 3.4028234663852886e38


def tree_dicts(sizes: array, words: array, NN: int, F: int, codes: list) -> tuple[list[dict], list[float]]:
    """The grower's trees (sizes: nodes a tree; words: NN x TW a tree) in the JSON format, and
    the features' summed split gains. codes[f]: a categorical feature's category code of each
    of its bins (None for a numeric feature)."""
    trees, gains = [], [0.0] * F
    for t, used in enumerate(sizes):
        tree = {"feature": [], "threshold": [], "missing_left": [], "categories_left": [],
                "left": [], "right": [], "value": []}
        for node in range(used):
            w = words[(t * NN + node) * TW:(t * NN + node + 1) * TW]
            leaf = w[0] == NONE
            tree["feature"].append(-1 if leaf else w[0])
            tree["threshold"].append(0.0 if leaf else min(from_bits(w[1]), F32_MAX))
            tree["missing_left"].append(bool(w[2] & MISSING_LEFT) and not leaf)
            cat = not leaf and w[2] & CATEGORY
            tree["categories_left"].append(
                [int(c) for b, c in enumerate(codes[w[0]]) if in_bitset(w, 8, b)] if cat else None)
            tree["left"].append(-1 if leaf else w[3])
            tree["right"].append(-1 if leaf else w[4])
            tree["value"].append(from_bits(w[5]) if leaf else 0.0)
            if not leaf:
                gains[w[0]] += from_bits(w[6])
        trees.append(tree)
    return trees, gains


def pack(trees: list[dict]) -> tuple[array, array]:
    """(nodes, first node of each tree) for the predict kernel, from JSON-format trees."""
    words, offs = array("I"), array("I")
    for tree in trees:
        offs.append(len(words) // TW)
        for f, thr, ml, cats, left, right, value in zip(
                tree["feature"], tree["threshold"], tree["missing_left"], tree["categories_left"],
                tree["left"], tree["right"], tree["value"]):
            if f < 0:
                words.extend((NONE, 0, 0, NONE, NONE, bits(value), 0, 0))
                words.extend([0] * CAT_WORDS)
            else:
                flags = (MISSING_LEFT if ml else 0) | (CATEGORY if cats is not None else 0)
                words.extend((f, bits(thr), flags, left, right, 0, 0, 0))
                words.extend(bitset(c for c in (cats or ()) if 0 <= c < 32 * CAT_WORDS))
    return words, offs


async def raw_scores(backend, trees: list[dict], baseline: list, X: array, n: int, F: int,
                     iterations: int, staged: bool = False) -> array:
    """(n, K) f32 raw scores of X's rows (n x F, array 'f' or 'd') through the first
    `iterations` iterations' trees; staged: (n, iterations, K), after each iteration."""
    from ..forest.trees import matrix_words
    K = len(baseline)
    out_len = n * K * (iterations if staged else 1)
    if not out_len:
        return array("f")
    async with backend.scope("boosting predict"):  # every buffer and plan here, freed at the end
        words, xd = matrix_words(backend, X, n, F, f"the {n} x {F} matrix to predict")
        nodes, offs = pack(trees[:iterations * K])
        P = backend.buffer("u32", uniform=True, data=PARAMS.pack(
            n=n, F=F, FW=0, K=K, B=0, loss=0, NN=0, L=0, max_depth=0, msl=0, mf=0, seed=0,
            I=iterations, staged=int(staged), xd=xd, b16=0, loff=0, lw=0, lr=0.0, l2=0.0, min_hess=0.0, step=0, SM=0))
        Xb = backend.buffer("u32", data=words)
        tb = backend.buffer("u32", data=nodes if len(nodes) else array("I", [NONE] * TW))
        ob = backend.buffer("u32", data=offs if len(offs) else array("I", [0]))
        base = backend.buffer("f32", data=array("f", baseline))
        out = backend.buffer("f32", out_len)
        kern = await backend.kernel("boosting", "predict")
        cap = backend.limits["maxComputeWorkgroupsPerDimension"]
        await backend.run(backend.plan().dispatch(kern, [P, Xb, tb, ob, base, out], grid(-(-n // WG), cap)))
        return await backend.read(out)


def probabilities(raw, K: int) -> list[list[float]]:
    """Class probabilities from raw scores (n, K): the sigmoid for two classes (K = 1), else
    the softmax."""
    rows = []
    if K == 1:
        for z in raw:
            p = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
            rows.append([1.0 - p, p])
        return rows
    for i in range(len(raw) // K):
        row = raw[i * K:(i + 1) * K]
        m = max(row)
        e = [math.exp(v - m) for v in row]
        s = sum(e)
        rows.append([v / s for v in e])
    return rows
