"""What a fit takes on the device, planned before it starts and checked against the adapter.

Every buffer must fit the adapter's binding limit (maxStorageBufferBindingSize, maxBufferSize),
and where the backend has a `memory_budget`, all that is alive at once must fit it:

- the data: X, its bins, the targets (made before the trees: `check_fits` counts them);
- a batch's working set, Tb trees' worth of `batch_buffers` (bootstrap state, the rows of small
  nodes, two levels of histograms, slots, split candidates, node records), reused batch after
  batch;
- per tree: its size and open slots (meta), its first node (offs), its importances (imp);
- the forest kept for prediction: with `dense`, one pair of buffers of NC nodes a tree, made at
  the start (trees of bounded depth whose worst case fits a buffer); else a pair a batch, sized by
  the nodes its trees really have, made after its last level: the plan counts the forest at
  `tree_nodes` a tree (what the trees are expected to have) and the fit checks each pair against
  the room left as the forest grows (builder.py).

The forest also comes back to the host in packs of PACK_BYTES, into the binary export's arrays
(`trees.Trees`): in the tab on WebGPU JavaScript typed arrays (`trees.JSTrees`), elsewhere Python
arrays, held once plus a pack; for those `check_host` refuses, before the fit starts, a forest
expected beyond the Python side's memory (the page without WebGPU: the WebAssembly heap's first
2 GiB, `py_core/wasm.py`).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from ..gpu import LimitError
from ..kernels.forest import IMP_CHUNK, MSE
from ..wasm import heap

HIST_BUDGET = 2**30  # bytes of one level's histograms per batch, at most (GPU backends): fewer,
                     # larger batches where the adapter binds that much (2 such buffers a fit)
REFERENCE_BUDGET = 64 * 2**20  # the reference backend keeps these in Python arrays
DEEP_LEVELS = 16  # trees deeper than this (or unbounded) read back their open slots level by level
MIN_TB = 8  # trees a batch where a level's histograms go in passes anyway (one tree's fill the
            # budget): their wide levels in more passes, but an eighth of the batches, each
            # level's kernels over eight trees at once. On the H200 10 classes at depth 14 1.99 s
            # against 2.28 s with four trees against one (bench/results/2026-11-27-h200-rows.md,
            # call 6), levels 1.28 against 1.36 s with eight against four, and at max_depth None
            # 6.3 s against 14.2 s, then 5.2 against 6.2 s (2026-11-27-h200-behind.md); the same trees
WHOLE_TB = 4  # where whole levels hold this many trees a batch (1M x 20: six), no passes: eight
              # trees in passes cost 1M x 20 0.09 s more of hist_build (the same report)
LIMIT_NAMES = "maxStorageBufferBindingSize / maxBufferSize"
PACK_BYTES = 64 * 2**20  # the most one readback (or upload write) moves between the device and
                         # Python: a forest (2 GB for 1M rows x 100 trees grown to their leaves)
                         # crosses a pack at a time, never as a second whole copy in Python
READ_BEHIND_BYTES = 256 * 2**20  # a forest's batches read back while later ones grow, at most:
                                 # held as read until the fit's end, when the forest's arrays are
                                 # made (their size known), so the host holds the forest and at
                                 # most this much more; the batches past it are read at the end


@dataclass
class GrowSpec:
    """What the kernels need to know about a fit (validated by the estimator)."""
    crit: int               # MSE, GINI or ENTROPY
    n_classes: int          # K: 1 for regression
    n_estimators: int
    max_depth: int | None
    min_samples_split: int
    min_samples_leaf: int
    max_features: int       # features tried per split
    bootstrap: bool
    seed: int               # u32
    n_bins: int
    oob: bool
    exact_bins: int = 0     # a feature of at most max(n_bins, this) distinct values: a bin each


@dataclass
class Sizes:
    n: int
    F: int
    FW: int       # words a row of the binned matrix: four 8-bit bins a word, or two 16-bit (b16)
    NB: int
    C: int
    K: int
    S: int        # slot stride: the most slots a level can need, per tree
    S_h: int      # slots a histogram buffer holds per tree (S, or fewer: a level in passes)
    NC: int       # node capacity per tree
    Tb: int       # trees per batch
    levels: int | None  # None: grow until no node is open
    dense: bool   # the forest's prediction arrays: one pair of buffers at NC nodes a tree, else a
                  # pair a batch sized by its trees' nodes (read back after its last level)
    tree_nodes: int  # nodes a tree is counted at in the plan: NC (dense), else expected_nodes
    G: int        # importance partial sums a tree (IMP_CHUNK nodes each)


def level_slots(d: int, n: int, s_min: int) -> int:
    """Slots level d can need per tree: pairs of children of the open nodes at level d - 1, of
    which there are at most 2^(d-1) and at most n // s_min (each holds s_min distinct rows)."""
    return 1 if d == 0 else 2 * min(2 ** (d - 1), n // s_min)


def node_capacity(n: int, spec: GrowSpec) -> int:
    """The most nodes a tree can have: 2 leaves per min_samples_leaf rows, less one; 2^(D+1) - 1."""
    NC = 2 * max(1, n // spec.min_samples_leaf) - 1
    if spec.max_depth is not None and spec.max_depth < 40:
        NC = min(NC, 2 ** (spec.max_depth + 1) - 1)
    return NC


def distinct_rows(n: int, spec: GrowSpec) -> float:
    """The distinct rows a tree sees: n (1 - (1 - 1/n)^n) of a bootstrap sample (0.632 n), else n."""
    return n * -math.expm1(n * math.log1p(-1 / n)) if spec.bootstrap and n > 1 else n


def expected_nodes(n: int, spec: GrowSpec) -> int:
    """The nodes a tree is expected to have at most: as node_capacity, over the distinct rows it
    sees: leaves of min_samples_leaf of them."""
    leaves = max(1, math.ceil(distinct_rows(n, spec) / spec.min_samples_leaf))
    return min(node_capacity(n, spec), 2 * leaves - 1)


def forest_bytes(trees: int, nodes: int, K: int) -> int:
    """Bytes of `trees` trees of `nodes` nodes: a node's feature, threshold and left child and its K
    values, 4 bytes each; the same on the device, in Python (`trees.Trees`) and in the export."""
    return 4 * trees * nodes * (3 + K)


def batch_buffers(n: int, F: int, NB: int, C: int, S: int, S_h: int, NC: int, deep: bool = False) -> dict:
    """{what: (words a tree, buffers)}: a batch's working set (Grower._tree_buffers), Tb times;
    deep: trees grown a level a submission, whose histograms are numbered (histogram slots)."""
    got = {"node records": (NC * (4 + C), 1), "bootstrap state": (n, 1), "row lists": (n, 1),
           "histograms": (S_h * NB * C, 2), "slots": (4 * S, 3), "child map": (2 * S, 1),
           "left sides": (S * C, 1), "split candidates": (4 * S_h * F, 1)}
    if deep:
        got["histogram slots"] = (S, 1)
    return got


def cap_bytes(backend) -> int:
    """The largest buffer a kernel can bind here."""
    return min(backend.limits["maxStorageBufferBindingSize"], backend.limits["maxBufferSize"])


def plan_sizes(backend, n: int, F: int, NB: int, spec: GrowSpec, room: int | None = None,
               data: int = 0, b16: bool = False) -> Sizes:
    """Buffer sizes from the data and the parameters, checked against the adapter's limits; room:
    the bytes of `memory_budget` left (None: no budget) for `data` bytes still to go up and the
    trees, which may make batches smaller. Raises LimitError naming the limit and what would make
    the fit fit."""
    K, T, D = spec.n_classes, spec.n_estimators, spec.max_depth
    C = 4 if spec.crit == MSE else K + 1
    s_min = max(spec.min_samples_split, 2 * spec.min_samples_leaf)
    S = max(level_slots(d, n, s_min) for d in range(min(D, 64) if D else 64))
    NC = node_capacity(n, spec)
    cap = cap_bytes(backend)
    hcap = min(cap, REFERENCE_BUDGET if backend.name == "reference" else HIST_BUDGET)
    per_slot = 4 * NB * C
    if per_slot > hcap:
        raise LimitError(
            f"one node's histogram needs {size_text(per_slot)} ({NB} bins x {C} channels) but at "
            f"most {size_text(hcap)} fit in a buffer here: lower n_bins or exact_bins, or use fewer features")

    def passes(div: int) -> tuple[int, int, dict]:
        """(S_h, Tb, one tree's buffers) where a tree's passes hold at most a div-th of the
        histogram budget (whole pairs of children a pass; the rest of a level in more passes)."""
        S_h = min(S, max(2, hcap // per_slot // div), cap // (16 * F))
        S_h = max(2, S_h - S_h % 2)
        per_tree = batch_buffers(n, F, NB, C, S, S_h, NC, deep)
        for what, (words, _) in per_tree.items():
            if 4 * words > cap:
                raise LimitError(f"the {what} of one tree need {size_text(4 * words)}, but this "
                                 f"adapter's buffers hold at most {size_text(cap)} ({LIMIT_NAMES}): "
                                 + _hint(what, n, C, cap, spec))
        return S_h, min(T, max(1, hcap // (per_slot * S_h)),
                        *(cap // (4 * words) for words, _ in per_tree.values())), per_tree

    def in_room(Tb: int, per_tree: dict) -> int:
        """Tb, or fewer: the trees a batch the memory left holds (raises if not one)."""
        if room is None:
            return Tb
        batch = 4 * sum(words * count for words, count in per_tree.values())
        if fixed + forest + batch > room:
            raise LimitError(
                f"this fit needs about {size_text(fixed + forest + batch)} of device memory "
                f"beside what is in use: the forest of {T} trees of about {tree_nodes} nodes "
                f"{size_text(forest)}, one tree's working set {size_text(batch)}, the data, "
                f"tree sizes and sums {size_text(fixed)}; the backend's memory_budget "
                f"({size_text(backend.memory_budget)}) leaves {size_text(room)}: use fewer "
                f"trees, a max_depth or a larger min_samples_leaf")
        return min(Tb, (room - fixed - forest) // batch)

    deep = D is None or D > DEEP_LEVELS
    # Whole levels where they hold WHOLE_TB trees a batch; else MIN_TB trees a batch (fewer if the
    # fit has fewer), each tree's passes a MIN_TB-th of the budget; where fewer trees fit a
    # batch, passes as large as those few allow.
    div = min(WHOLE_TB, T)
    S_h, Tb, per_tree = passes(div)
    if S_h < S:
        div = min(MIN_TB, T)
        S_h, Tb, per_tree = passes(div)
    dense = not deep and 4 * T * NC * max(3, K) <= cap
    tree_nodes = NC if dense else expected_nodes(n, spec)
    G = -(-NC // IMP_CHUNK)
    if 4 * T * G * F > cap:
        raise LimitError(f"the importances of {T} trees of up to {NC} nodes need "
                         f"{size_text(4 * T * G * F)}, but this adapter's buffers hold at most "
                         f"{size_text(cap)} ({LIMIT_NAMES}): use fewer trees or a max_depth")
    # per tree: meta (2 words, 3 in deep trees) and offs; importances; out-of-bag sums
    fixed = 4 * (T * ((4 if deep else 3) + G * F) + (n * (K + 1) if spec.oob and spec.bootstrap else 0)) + data
    forest = forest_bytes(T, tree_nodes, K)
    Tb = in_room(Tb, per_tree)
    if Tb < div:
        try:
            wide_S_h, wide_Tb, wide = passes(Tb)
            wide_Tb = in_room(wide_Tb, wide)
            if wide_Tb >= Tb:
                S_h, Tb = wide_S_h, wide_Tb
        except LimitError:  # larger passes do not fit: keep these
            pass
    return Sizes(n, F, -(-F // (2 if b16 else 4)), NB, C, K, S, S_h, NC, Tb, D, dense, tree_nodes, G)


def check_fits(backend, n: int, F: int, spec: GrowSpec, data_bytes: int = 0) -> Sizes:
    """Refuses, before any data goes up, a fit that cannot fit the adapter whatever its bins (the
    plan with one bin a feature, the least histograms, and data_bytes of data counted) or whose
    forest cannot fit the Python side's memory (`check_host`)."""
    z = plan_sizes(backend, n, F, F, spec, backend.memory_room(), data_bytes)
    check_host(backend, n, spec)
    return z


def check_host(backend, n: int, spec: GrowSpec) -> None:
    """Refuses a fit whose forest, at the nodes its trees are expected to have, would not fit the
    Python memory left (where it is held there: not in the tab on WebGPU, which reads it into
    JavaScript): `backend.host_budget` where set, else under Pyodide what the tab's
    WebAssembly heap has left (the data and all else held now count as in use); elsewhere nothing
    is checked. Besides the forest: a readback pack twice (as read, as an array) and, on the
    reference backend, the forest again (its device arrays are Python's)."""
    if backend.host_js:  # the tab on WebGPU: the forest is read into JavaScript (trees.JSTrees)
        return
    budget, wasm = backend.host_budget, None
    if budget is None:
        wasm = heap()
        if wasm is None:
            return
    room = budget if wasm is None else wasm.room
    T, K = spec.n_estimators, spec.n_classes
    nodes = expected_nodes(n, spec)
    copies = 2 if backend.name == "reference" else 1
    forest, extra = forest_bytes(T, nodes, K), 2 * PACK_BYTES
    # one array per field: a value array beyond sys.maxsize cannot exist (2 GiB under Pyodide)
    if copies * forest + extra <= room and 4 * nodes * T * K <= sys.maxsize:
        return
    where = (f"the Python memory host_budget allows ({size_text(budget)})" if wasm is None else
             f"the tab's Python memory (WebAssembly: {size_text(wasm.limit)} usable, the part "
             f"whose buffers Pyodide can pass to JavaScript; "
             f"{size_text(wasm.in_use)} in use now, the data included)")
    fits = min((room - extra) // (copies * forest_bytes(T, 1, K)), sys.maxsize // (4 * T * K))
    hint = (_smaller_trees(fits, distinct_rows(n, spec)) + ", or fewer trees" if fits > 0
            else "what is held already leaves too little: use fewer rows")
    raise LimitError(
        f"this fit's forest of {T} trees of about {nodes} nodes needs about "
        f"{size_text(copies * forest + extra)} of {where}, of which "
        f"{size_text(max(0, room))} is left: {hint}")


def size_text(nbytes: int) -> str:
    """Bytes for a message: "192.0 KiB", "3.1 MiB", "2.0 GiB"."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def _hint(what: str, n: int, C: int, cap: int, spec: GrowSpec) -> str:
    """What would make one tree's `what` fit a buffer of cap bytes."""
    if what in ("bootstrap state", "row lists"):
        return "use fewer rows"
    if what != "node records":
        return "use a max_depth or a larger min_samples_leaf"
    return _smaller_trees(cap // (4 * (4 + C)), n)  # node records a buffer holds


def _smaller_trees(nodes: int, rows: float) -> str:
    """The max_depth, and the min_samples_leaf, that keep a tree over `rows` distinct rows within
    `nodes` nodes."""
    depth = (nodes + 1).bit_length() - 2  # 2^(depth + 1) - 1 <= nodes
    leaf = int(rows) // max(1, (nodes + 1) // 2) + 1  # 2 ceil(rows / leaf) - 1 <= nodes
    return (f"use a max_depth (at most {depth} here) or a larger " if depth >= 1 else "use a larger "
            ) + f"min_samples_leaf (at least {leaf} here)"
