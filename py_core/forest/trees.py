"""A grown forest as flat arrays, and prediction from its device copy.

Host (`Trees`): the trees' nodes one after another, tree t from node `starts[t]` on, numbered level
by level from its root; per node (feature, threshold bits, left child) and K values, the layout of
the binary export. The per-node lists of the JSON format are made only when asked for
(`Trees.tree`, `Trees.dicts`).
Device (`DeviceTrees`): the same nodes in one or several chunks of consecutive trees, a pair of
buffers each (ptree, pval) within the adapter's binding limit, and `offs`: each tree's first node in
its chunk. A fit makes it (one chunk at a fixed stride, or a chunk a batch of trees sized by their
nodes: builder.py), `upload` makes it from `Trees`; `predict` walks it chunk by chunk.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import accumulate

from ..gpu import LimitError
from ..kernels.forest import PARAMS, WG, grid


@dataclass
class Trees:
    """T trees, K values a node, their nodes one after another."""
    T: int
    K: int
    counts: array  # u32 (T,): nodes of each tree
    ptree: array   # u32 (N, 3): feature, threshold (f32 bits), left child (LEAF, 0, LEAF in a leaf)
    pval: array    # f32 (N, K): mean target, or class fractions

    @property
    def starts(self) -> list[int]:
        """Each tree's first node."""
        return [0, *accumulate(self.counts)][:-1]

    def tree(self, t: int, base: int | None = None) -> dict:
        """Tree t in the export format: feature, threshold, left, right, value (see export.py)."""
        m, K = self.counts[t], self.K
        base = self.starts[t] if base is None else base
        words = memoryview(self.ptree)[3 * base:3 * (base + m)]
        feature = array("i", words[0::3].tobytes()).tolist()  # LEAF reads as -1
        left = array("i", words[2::3].tobytes()).tolist()
        threshold = array("f", words[1::3].tobytes()).tolist()
        vals = self.pval[K * base:K * (base + m)].tolist()
        return {"feature": feature, "threshold": threshold, "left": left,
                "right": [c + 1 if c >= 0 else -1 for c in left],
                "value": vals if K == 1 else [vals[i * K:(i + 1) * K] for i in range(m)]}

    def dicts(self) -> list[dict]:
        return [self.tree(t, base) for t, base in enumerate(self.starts)]

    @classmethod
    def from_dicts(cls, trees: list, K: int) -> "Trees":
        """The flat form of export-format trees (already validated)."""
        counts = array("I", [len(t["feature"]) for t in trees])
        N = sum(counts)
        ptree, pval = array("I", bytes(12 * N)), array("f")
        base = 0
        for t in trees:
            m = len(t["feature"])
            ptree[3 * base:3 * (base + m):3] = array("I", array("i", t["feature"]).tobytes())
            ptree[3 * base + 1:3 * (base + m):3] = array("I", array("f", t["threshold"]).tobytes())
            ptree[3 * base + 2:3 * (base + m):3] = array("I", array("i", t["left"]).tobytes())
            pval.extend(array("f", t["value"] if K == 1 else [v for row in t["value"] for v in row]))
            base += m
        return cls(len(trees), K, counts, ptree, pval)

    @classmethod
    def from_strided(cls, counts: array, NC: int, ptree: array, pval: array, K: int) -> "Trees":
        """From arrays that hold tree t at node t * NC (a fit's single chunk)."""
        if all(m == NC for m in counts):
            return cls(len(counts), K, counts, ptree, pval)
        tp, tv, wp, wv = array("I"), array("f"), memoryview(ptree), memoryview(pval)
        for t, m in enumerate(counts):
            tp.frombytes(wp[3 * t * NC:3 * (t * NC + m)].cast("B"))
            tv.frombytes(wv[K * t * NC:K * (t * NC + m)].cast("B"))
        return cls(len(counts), K, counts, tp, tv)


@dataclass
class Chunk:
    """Trees tree0 .. tree0 + T - 1 of a forest on the device."""
    tree0: int
    T: int
    ptree: object  # Buffer u32 (nodes, 3)
    pval: object   # Buffer f32 (nodes, K)


@dataclass
class DeviceTrees:
    """A forest's prediction arrays on the device."""
    T: int
    K: int
    offs: object   # Buffer u32 (T,): each tree's first node in its chunk
    chunks: list   # [Chunk], in tree order

    def buffers(self) -> list:
        return [self.offs] + [b for c in self.chunks for b in (c.ptree, c.pval)]

    @property
    def alive(self) -> bool:
        return all(b.handle is not None for b in self.buffers())

    def first(self, trees: int) -> "DeviceTrees":
        """The first `trees` trees, on the same buffers."""
        return DeviceTrees(trees, self.K, self.offs, [Chunk(c.tree0, min(c.T, trees - c.tree0), c.ptree, c.pval)
                                                      for c in self.chunks if c.tree0 < trees])


def chunk_ranges(counts, words_per_node: int, cap_words: int) -> list[tuple[int, int]]:
    """(first tree, trees) of consecutive trees whose nodes, words_per_node words each, fit
    cap_words; raises LimitError for a tree that fits no buffer."""
    out, t0, used = [], 0, 0
    for t, m in enumerate(counts):
        if m * words_per_node > cap_words:
            raise LimitError(
                f"tree {t} has {m} nodes: its prediction arrays need {4 * m * words_per_node / 2**20:.0f} "
                f"MiB, but this adapter's buffers hold at most {4 * cap_words / 2**20:.0f} MiB "
                f"(maxStorageBufferBindingSize / maxBufferSize): use a max_depth or a larger "
                f"min_samples_leaf")
        if used + m * words_per_node > cap_words:
            out.append((t0, t - t0))
            t0, used = t, 0
        used += m * words_per_node
    out.append((t0, len(counts) - t0))
    return out


def upload(backend, trees: Trees) -> DeviceTrees:
    """The device arrays `predict` walks, in as few chunks as the adapter's buffers allow."""
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    K, counts, chunks = trees.K, trees.counts, []
    offs = array("I", bytes(4 * trees.T))
    at = 0  # first node of the chunk in the host arrays
    for t0, nt in chunk_ranges(counts, max(3, K), cap // 4):
        nodes = sum(counts[t0:t0 + nt])
        offs[t0:t0 + nt] = array("I", [0, *accumulate(counts[t0:t0 + nt - 1])])
        chunks.append(Chunk(t0, nt, backend.buffer("u32", data=trees.ptree[3 * at:3 * (at + nodes)]),
                            backend.buffer("f32", data=trees.pval[K * at:K * (at + nodes)])))
        at += nodes
    return DeviceTrees(trees.T, K, backend.buffer("u32", data=offs), chunks)


def matrix_words(backend, X: array, n: int, F: int, what: str) -> tuple[array | memoryview, int]:
    """(X as 4-byte words, xd): an f64 matrix goes up as it is (the kernels round each value to
    f32 as the CPU would), unless only its f32 copy fits the adapter's buffers."""
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    if X.typecode == "d" and 8 * n * F > cap >= 4 * n * F:
        X = array("f", X)
    backend.check_size(X.itemsize * n * F, what)
    return memoryview(X).cast("B"), int(X.typecode == "d")


async def predict(backend, dev: DeviceTrees, X: array, n: int, F: int) -> array:
    """(n, K) f64: the mean over the trees of each row's leaf value (summed in f32, in tree order,
    across the chunks). Raises ValueError when X holds NaN or infinite values (checked on the
    device)."""
    K = dev.K
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
            Xb = backend.buffer("u32", data=words)
            out = backend.buffer("u32", 2 * m * K)
            outs.append(out)
            Ps = [backend.buffer("u32", uniform=True, data=PARAMS.pack(
                **_predict_params(m, F, K, c.tree0, c.T, dev.T, xd))) for c in dev.chunks]
            plan = backend.plan().dispatch(check, [Ps[0], Xb, flags], grid(-(-m * F // WG), wg))
            for P, c in zip(Ps, dev.chunks):  # in order: each goes on from the sums before it
                plan.dispatch(kern, [P, Xb, c.ptree, c.pval, dev.offs, out], grid(-(-m // WG), wg))
            await backend.run(plan)
        if (await backend.read(flags))[0]:
            raise ValueError("X has NaN or infinite values (or values beyond float32): impute or drop them")
        result = array("d")
        for out in outs:
            result.frombytes(memoryview(await backend.read(out)).cast("B"))
        return result


def _predict_params(n, F, K, tree0, T, T_all, xd):
    return dict(n=n, F=F, FW=0, NB=0, C=0, K=K, crit=0, T=T, tree0=tree0, seed=0, boot=0, mss=0,
                msl=0, max_depth=0, mf=0, hb=0, S=0, NC=0, depth=0, S_cur=0, S_next=0, T_all=T_all,
                inv_scale=1.0, mid=0.0, xd=xd, ye=0, ym_lo=0, ym_hi=0, step=1, SM=0, S_h=0, s_lo=0)
