"""A grown forest as flat arrays, and prediction from its device copy.

Host (`Trees`): the trees' nodes one after another, tree t from node `starts[t]` on, numbered level
by level from its root; an array per field (feature, threshold, left child, values), the layout of
the binary export, which hands these arrays over as they are (export.parts). The per-node lists of
the JSON format are made only when asked for (`Trees.tree`, `Trees.dicts`).
Device (`DeviceTrees`): the same nodes in one or several chunks of consecutive trees, a pair of
buffers each (ptree: the three fields interleaved, a node's 12 bytes together for `predict`;
pval), within the adapter's binding limit, and `offs`: each tree's first node in its chunk. A fit
makes it (one chunk at a fixed stride, or a chunk a batch of trees sized by their nodes:
builder.py) and reads it back in packs, each de-interleaved as it arrives (`Trees.put_nodes`);
`upload` makes it from `Trees`, a pack at a time (`Trees.words`); `predict` walks it chunk by
chunk.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import accumulate

from ..gpu import LimitError
from ..kernels.forest import PARAMS, WG, grid
from .sizes import PACK_BYTES


@dataclass
class Trees:
    """T trees, K values a node, their nodes one after another (N in all)."""
    T: int
    K: int
    counts: array     # u32 (T,): nodes of each tree
    feature: array    # i32 (N,): split feature, -1 in a leaf (the kernels' LEAF, 0xFFFFFFFF)
    threshold: array  # f32 (N,): x[feature] <= threshold goes left; 0 in a leaf
    left: array       # i32 (N,): left child (the right one is left + 1), -1 in a leaf
    value: array      # f32 (N, K): mean target, or class fractions

    @classmethod
    def empty(cls, K: int, counts: array) -> "Trees":
        """Zeroed arrays for trees of these node counts, each allocated once at its full size
        (`put_nodes`, `put_values` fill them): none grows, so none is ever copied to a larger one."""
        N = sum(counts)
        return cls(len(counts), K, counts, array("i", [0]) * N, array("f", [0.0]) * N,
                   array("i", [0]) * N, array("f", [0.0]) * (N * K))

    @property
    def starts(self) -> list[int]:
        """Each tree's first node."""
        return [0, *accumulate(self.counts)][:-1]

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays: 4 a tree, 12 + 4 K a node."""
        return 4 * (self.T + len(self.feature) * (3 + self.K))

    def put_nodes(self, node: int, words) -> None:
        """Nodes from `node` on, from their device form: bytes of u32 (m, 3) (feature, threshold
        bits, left child), de-interleaved into the arrays in place."""
        w = memoryview(words).cast("B")
        m = len(w) // 12
        memoryview(self.feature)[node:node + m] = w.cast("i")[0::3]
        memoryview(self.threshold)[node:node + m] = w.cast("f")[1::3]
        memoryview(self.left)[node:node + m] = w.cast("i")[2::3]

    def put_values(self, node: int, data) -> None:
        """The values of nodes from `node` on, from bytes of f32 (m, K), in place."""
        w = memoryview(data).cast("B")
        at = 4 * self.K * node
        memoryview(self.value).cast("B")[at:at + len(w)] = w

    def values(self, lo: int, hi: int):
        """The values of nodes lo .. hi - 1: f32 (m, K)."""
        return memoryview(self.value)[self.K * lo:self.K * hi]

    def words(self, lo: int, hi: int) -> array:
        """Nodes lo .. hi - 1 in their device form: u32 (m, 3) (feature, threshold bits, left)."""
        out = array("I", [0]) * (3 * (hi - lo))
        w = memoryview(out).cast("B")
        w.cast("i")[0::3] = memoryview(self.feature)[lo:hi]
        w.cast("f")[1::3] = memoryview(self.threshold)[lo:hi]
        w.cast("i")[2::3] = memoryview(self.left)[lo:hi]
        return out

    def tree(self, t: int, base: int | None = None) -> dict:
        """Tree t in the export format: feature, threshold, left, right, value (see export.py)."""
        m, K = self.counts[t], self.K
        base = self.starts[t] if base is None else base
        left = self.left[base:base + m].tolist()
        vals = self.value[K * base:K * (base + m)].tolist()
        return {"feature": self.feature[base:base + m].tolist(),
                "threshold": self.threshold[base:base + m].tolist(), "left": left,
                "right": [c + 1 if c >= 0 else -1 for c in left],
                "value": vals if K == 1 else [vals[i * K:(i + 1) * K] for i in range(m)]}

    def dicts(self) -> list[dict]:
        return [self.tree(t, base) for t, base in enumerate(self.starts)]

    @classmethod
    def from_dicts(cls, trees: list, K: int) -> "Trees":
        """The flat form of export-format trees (already validated)."""
        out = cls(len(trees), K, array("I", [len(t["feature"]) for t in trees]), array("i"),
                  array("f"), array("i"), array("f"))
        for t in trees:
            out.feature.extend(array("i", t["feature"]))
            out.threshold.extend(array("f", t["threshold"]))
            out.left.extend(array("i", t["left"]))
            out.value.extend(array("f", t["value"] if K == 1 else [v for row in t["value"] for v in row]))
        return out


@dataclass
class JSTrees(Trees):
    """Trees whose arrays are JavaScript typed arrays (the tab on WebGPU, `rt`: web/gpu.js's
    runtime). Pyodide passes no Python buffer above 2 GiB of its heap to JavaScript, and a forest
    grown to its leaves on 1M rows is 1.9 GiB: held in JavaScript, it stays out of that heap. A
    fit fills them from readbacks that stay in JavaScript (`put_nodes`, `put_values` take the
    readback's Uint8Array), and the binary export hands them to the page's worker as they are."""
    rt: object = None

    @classmethod
    def empty(cls, K: int, counts: array, rt) -> "JSTrees":
        N = sum(counts)
        return cls(len(counts), K, counts, rt.hostArray("i32", N), rt.hostArray("f32", N),
                   rt.hostArray("i32", N), rt.hostArray("f32", N * K), rt)

    def put_nodes(self, node: int, words) -> None:
        self.rt.putNodes(words, node, self.feature, self.threshold, self.left)

    def put_values(self, node: int, data) -> None:
        self.rt.putValues(data, self.K * node, self.value)

    def _nodes(self, lo: int, hi: int) -> Trees:
        """Nodes lo .. hi - 1 in Python arrays (a tree's or a pack's worth, where it is used)."""
        py = lambda js, code, a, b: array(code, js.subarray(a, b).to_bytes())  # noqa: E731
        K = self.K
        return Trees(1, K, array("I", [hi - lo]), py(self.feature, "i", lo, hi),
                     py(self.threshold, "f", lo, hi), py(self.left, "i", lo, hi),
                     py(self.value, "f", K * lo, K * hi))

    def values(self, lo: int, hi: int):
        return array("f", self.value.subarray(self.K * lo, self.K * hi).to_bytes())

    def words(self, lo: int, hi: int) -> array:
        return self._nodes(lo, hi).words(0, hi - lo)

    def tree(self, t: int, base: int | None = None) -> dict:
        base = self.starts[t] if base is None else base
        return self._nodes(base, base + self.counts[t]).tree(0, 0)


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
    """The device arrays `predict` walks, in as few chunks as the adapter's buffers allow; a
    chunk's interleaved nodes are written a pack (PACK_BYTES) at a time, so Python never holds a
    second whole copy of the forest."""
    cap = min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])
    K, counts, chunks = trees.K, trees.counts, []
    offs = array("I", bytes(4 * trees.T))
    step = PACK_BYTES // (4 * max(3, K))  # nodes a write
    at = 0  # first node of the chunk in the host arrays
    for t0, nt in chunk_ranges(counts, max(3, K), cap // 4):
        nodes = sum(counts[t0:t0 + nt])
        offs[t0:t0 + nt] = array("I", [0, *accumulate(counts[t0:t0 + nt - 1])])
        ptree, pval = backend.buffer("u32", 3 * nodes), backend.buffer("f32", K * nodes)
        for lo in range(0, nodes, step):
            hi = min(nodes, lo + step)
            backend.write(ptree, trees.words(at + lo, at + hi), 3 * lo)
            backend.write(pval, trees.values(at + lo, at + hi), K * lo)
        chunks.append(Chunk(t0, nt, ptree, pval))
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
                msl=0, max_depth=0, mf=0, pr=0, S=0, NC=0, depth=0, S_cur=0, S_next=0, T_all=T_all, H_cur=0, H_next=0,
                inv_scale=1.0, mid=0.0, xd=xd, ye=0, ym_lo=0, ym_hi=0, step=1, SM=0, S_h=0, s_lo=0, small=0, b16=0, row_scan=0)
