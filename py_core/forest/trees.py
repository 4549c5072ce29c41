"""A grown forest as flat arrays, and prediction from its device copy.

The trees stay in the layout the kernels write (`finalize`): per tree NC node slots of (feature,
threshold bits, left child) and K values, nodes numbered level by level from the root. They come
back from the GPU in one readback and stay flat; the per-node lists of the export format are made
only when asked for (`Trees.tree`, `Trees.dicts`). Prediction walks the device copy.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass

from ..kernels.forest import PARAMS, WG, grid


@dataclass
class Trees:
    """T trees of at most NC nodes, K values a node."""
    T: int
    NC: int
    K: int
    counts: array  # u32 (T,): nodes of each tree
    ptree: array   # u32 (T, NC, 3): feature, threshold (f32 bits), left child (LEAF, 0, LEAF in a leaf)
    pval: array    # f32 (T, NC, K): mean target, or class fractions

    def tree(self, t: int) -> dict:
        """Tree t in the export format: feature, threshold, left, right, value (see export.py)."""
        m, base, K = self.counts[t], t * self.NC, self.K
        words = memoryview(self.ptree)[3 * base:3 * (base + m)]
        feature = array("i", words[0::3].tobytes()).tolist()  # LEAF reads as -1
        left = array("i", words[2::3].tobytes()).tolist()
        threshold = array("f", words[1::3].tobytes()).tolist()
        vals = self.pval[K * base:K * (base + m)].tolist()
        return {"feature": feature, "threshold": threshold, "left": left,
                "right": [c + 1 if c >= 0 else -1 for c in left],
                "value": vals if K == 1 else [vals[i * K:(i + 1) * K] for i in range(m)]}

    def dicts(self) -> list[dict]:
        return [self.tree(t) for t in range(self.T)]

    @classmethod
    def from_dicts(cls, trees: list, K: int) -> "Trees":
        """The flat form of export-format trees (already validated)."""
        T, NC = len(trees), max(len(t["feature"]) for t in trees)
        counts = array("I", [len(t["feature"]) for t in trees])
        ptree = array("I", bytes(12 * NC * T))
        pval = array("f", bytes(4 * K * NC * T))
        for i, t in enumerate(trees):
            base, m = i * NC, len(t["feature"])
            ptree[3 * base:3 * (base + m):3] = array("I", array("i", t["feature"]).tobytes())
            ptree[3 * base + 1:3 * (base + m):3] = array("I", array("f", t["threshold"]).tobytes())
            ptree[3 * base + 2:3 * (base + m):3] = array("I", array("i", t["left"]).tobytes())
            flat = t["value"] if K == 1 else [v for row in t["value"] for v in row]
            pval[K * base:K * (base + m)] = array("f", flat)
        return cls(T, NC, K, counts, ptree, pval)


def upload(backend, trees: Trees):
    """(ptree, pval): the device arrays `predict` walks."""
    backend.check_size(4 * len(trees.ptree), f"the prediction arrays of {trees.T} trees")
    return backend.buffer("u32", data=trees.ptree), backend.buffer("f32", data=trees.pval)


def matrix_words(backend, X: array, n: int, F: int, what: str) -> tuple[array | memoryview, int]:
    """(X as 4-byte words, xd): an f64 matrix goes up as it is (the kernels round each value to
    f32 as the CPU would), unless only its f32 copy fits the adapter's buffers."""
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    if X.typecode == "d" and 8 * n * F > cap >= 4 * n * F:
        X = array("f", X)
    backend.check_size(X.itemsize * n * F, what)
    return memoryview(X).cast("B"), int(X.typecode == "d")


async def predict(backend, ptree, pval, NC: int, n_trees: int, K: int, X: array, n: int, F: int) -> array:
    """(n, K) f64: the mean over the trees of each row's leaf value (summed in f32). Raises
    ValueError when X holds NaN or infinite values (checked on the device)."""
    kern = await backend.kernel("forest", "predict")
    check = await backend.kernel("forest", "check_finite")
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    out_rows = max(1, cap // (8 * K))
    x_rows = max(1, cap // (X.itemsize * F))
    rows = min(n, out_rows, x_rows)  # rows a dispatch: all of them unless the adapter binds less
    wg = backend.limits["maxComputeWorkgroupsPerDimension"]
    async with backend.scope("forest predict"):  # every buffer and plan here, freed at the end
        flags = backend.buffer("u32", 1)
        outs = []
        for r0 in range(0, n, rows):
            m = min(rows, n - r0)
            part = X if m == n else X[r0 * F:(r0 + m) * F]
            words, xd = matrix_words(backend, part, m, F, f"the {m} x {F} rows to predict")
            params = _predict_params(m, F, K, NC, n_trees, xd)
            P = backend.buffer("u32", uniform=True, data=PARAMS.pack(**params))
            Xb = backend.buffer("u32", data=words)
            out = backend.buffer("u32", 2 * m * K)
            outs.append(out)
            await backend.run(backend.plan()
                              .dispatch(check, [P, Xb, flags], grid(-(-m * F // WG), wg))
                              .dispatch(kern, [P, Xb, ptree, pval, out], grid(-(-m // WG), wg)))
        if (await backend.read(flags))[0]:
            raise ValueError("X has NaN or infinite values (or values beyond float32): impute or drop them")
        result = array("d")
        for out in outs:
            result.frombytes(memoryview(await backend.read(out)).cast("B"))
        return result

def _predict_params(n, F, K, NC, T, xd):
    return dict(n=n, F=F, FW=0, NB=0, C=0, K=K, crit=0, T=0, tree0=0, seed=0, boot=0, mss=0, msl=0,
                max_depth=0, mf=0, hb=0, S=0, NC=NC, depth=0, S_cur=0, S_next=0, T_all=T,
                inv_scale=1.0, mid=0.0, xd=xd, ye=0, ym_lo=0, ym_hi=0, step=1, SM=0, S_h=0, s_lo=0)

