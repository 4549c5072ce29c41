"""The forest's JSON format.

Format (`to_dict`), version 1:

    {"format": "py_core.forest", "version": 1,
     "estimator": "RandomForestRegressor" | "RandomForestClassifier",
     "params": {...},                 # the estimator's parameters (backend left out)
     "n_features": F,
     "classes": [...],                # classifier only: the labels, in the order of value's
     "n_outputs": K,                  # 1 for regression, else the number of classes
     "feature_importances": [F floats],
     "oob_score": float | null,
     "trees": [{                      # one per tree; nodes numbered level by level, root 0
        "feature":   [int],           # split feature of each node, -1 for a leaf
        "threshold": [float],         # x[feature] <= threshold goes left (f32 value; 0 in leaves)
        "left":      [int],           # child node numbers, -1 for a leaf
        "right":     [int],
        "value":     [float] | [[K floats]]   # mean target, or class fractions, of each node
     }, ...]}

A row's prediction is the mean over trees of the value of the leaf it reaches; a classifier
predicts the class of the largest mean fraction (the first on ties).

The same forest in binary (`to_bytes`, `from_bytes`; the page keeps and passes this one, and
writes the JSON above only when a person downloads it, tree by tree: web/forest_model.js), all
little-endian (`parts`: the same, as the header and the forest's own arrays, for a job's result):

    "PCFOREST" · u32 version (1) · u32 H · H bytes of JSON header (the JSON format's fields but
    "trees", plus "n_trees": T, "n_nodes": N; padded with spaces to a multiple of 4)
    · u32 counts[T] (nodes of each tree) · i32 feature[N] · f32 threshold[N] · i32 left[N]
    · f32 value[N * K]          (the trees' nodes one after another; right = left + 1)
"""
from __future__ import annotations

import json
import math
import struct
from array import array

from .trees import Trees

FORMAT, VERSION = "py_core.forest", 1
MAGIC = b"PCFOREST"
ESTIMATORS = ("RandomForestRegressor", "RandomForestClassifier")
# Bounds a JSON-format forest from elsewhere (a client's) is checked against before anything is
# sized from it: n_outputs 1e9 would allocate a billion class ids.
MAX_FEATURES = 1 << 20
MAX_OUTPUTS = 1000  # py_core.data's MAX_CLASSES: a target of more classes is refused
MAX_VALUES = 1 << 25  # nodes x outputs in all: 128 MB as f32


def header(forest) -> dict:
    """The JSON format's fields but the trees."""
    params = {k: v for k, v in forest.get_params().items() if k != "backend"}
    out = {"format": FORMAT, "version": VERSION, "estimator": type(forest).__name__,
           "params": params, "n_features": forest.n_features_in_}
    if hasattr(forest, "classes_"):
        out["classes"] = list(forest.classes_)
    out["n_outputs"] = forest.n_outputs_
    out["feature_importances"] = list(forest.feature_importances_)
    score = getattr(forest, "oob_score_", None)
    out["oob_score"] = None if score is None or score != score else score
    return out


def to_dict(forest) -> dict:
    out = header(forest)
    out["trees"] = [{k: t[k] for k in ("feature", "threshold", "left", "right", "value")}
                    for t in forest._trees]
    return out


def parts(forest, extra: dict | None = None) -> list:
    """The binary format in its parts, in order: the signature and header (bytes), then the
    trees' arrays as the forest holds them (counts, feature, threshold, left, value: no copies);
    joined they are `to_bytes`. `extra` adds fields to the header (a job's "data")."""
    trees: Trees = forest._forest
    head = dict(header(forest), **(extra or {}), n_trees=trees.T, n_nodes=len(trees.feature))
    text = json.dumps(head, allow_nan=False).encode()
    text += b" " * (-len(text) % 4)
    return [MAGIC + struct.pack("<II", VERSION, len(text)) + text, trees.counts, trees.feature,
            trees.threshold, trees.left, trees.value]


def to_bytes(forest, extra: dict | None = None) -> bytes:
    """The binary format as one bytes object (a copy of the whole forest: the job layer hands
    `parts` over instead)."""
    return b"".join(parts(forest, extra))


def read_bytes(data) -> tuple[dict, Trees]:
    """(header, trees) of the binary format, checked: bytes-like, or its parts (`parts`)."""
    if isinstance(data, (list, tuple)):
        data = b"".join(data)
    data = memoryview(data).cast("B")
    if len(data) < 16 or bytes(data[:8]) != MAGIC:
        raise ValueError("not a py_core.forest binary export (no PCFOREST signature)")
    version, H = struct.unpack("<II", data[8:16])
    if version != VERSION:
        raise ValueError(f"py_core.forest binary version {version} is not {VERSION}")
    head = json.loads(bytes(data[16:16 + H]))
    T, N, K = int(head["n_trees"]), int(head["n_nodes"]), int(head["n_outputs"])
    at = 16 + H
    if len(data) != at + 4 * (T + 3 * N + N * K) or T < 1:
        raise ValueError("py_core.forest binary export: its length does not match its header")

    def take(code, count):
        nonlocal at
        out = array(code)
        out.frombytes(data[at:at + 4 * count])
        at += 4 * count
        return out

    trees = Trees(T, K, take("I", T), take("i", N), take("f", N), take("i", N), take("f", N * K))
    counts, feat, left = trees.counts, trees.feature, trees.left
    if sum(counts) != N or min(counts) < 1:
        raise ValueError("py_core.forest binary export: its node counts do not add up")
    start, F = 0, int(head["n_features"])
    for t, m in enumerate(counts):
        f, lf = feat[start:start + m], left[start:start + m]
        for node in range(m):
            if f[node] != -1 and not (0 <= f[node] < F and node < lf[node] < m - 1):
                raise ValueError(f"tree {t}, node {node}: bad feature or children")
        start += m
    return head, trees


class FormatError(ValueError):
    """What is wrong in a JSON-format forest: `field`, a path into it ("trees[3].left[7]")."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def check(data) -> None:
    """Check a forest in the JSON format before anything is built from it: the header's counts
    bounded, every tree's arrays as long as each other, every node's feature in range (-1 for a
    leaf), children after their parent and inside the tree (so no cycles: node < left, right =
    left + 1, as py_core numbers them), values finite and n_outputs of them a node for classes.
    Linear in the nodes; FormatError naming the first field that is wrong."""
    count = integer_in
    F, K, classify = checked_head(data, FORMAT, ESTIMATORS, "n_outputs")
    if classify:
        checked_classes(data, K)
    trees = data.get("trees")
    if not isinstance(trees, list) or not trees:
        raise FormatError("trees", "must be a non-empty list of trees")
    total = 0
    for i, t in enumerate(trees):
        at = f"trees[{i}]"
        if not isinstance(t, dict):
            raise FormatError(at, "must be an object")
        arrays = [t.get(k) for k in ("feature", "threshold", "left", "right", "value")]
        for k, a in zip(("feature", "threshold", "left", "right", "value"), arrays):
            if not isinstance(a, list):
                raise FormatError(f"{at}.{k}", "must be a list, one entry a node")
        feature, threshold, left, right, value = arrays
        m = len(feature)
        if not m or any(len(a) != m for a in arrays):
            raise FormatError(at, "feature, threshold, left, right and value must be lists of one "
                                  "length, at least 1")
        total += m * K
        if total > MAX_VALUES:
            raise FormatError(at, f"more than {MAX_VALUES:,} nodes x outputs in the forest")
        for node in range(m):
            f = feature[node]
            count(f, f"{at}.feature[{node}]", -1, F - 1)
            if f >= 0:
                count(left[node], f"{at}.left[{node}]", node + 1, m - 2)
                if right[node] != left[node] + 1:
                    raise FormatError(f"{at}.right[{node}]", "must be left + 1")
                if not finite(threshold[node]):
                    raise FormatError(f"{at}.threshold[{node}]", "must be a finite number")
            v = value[node]
            if not (finite(v) if K == 1 else isinstance(v, list) and len(v) == K
                    and all(finite(x) for x in v)):
                raise FormatError(f"{at}.value[{node}]", "must be a finite number" if K == 1
                                  else f"must be a list of {K} finite numbers")


def checked_head(data, fmt: str, estimators: tuple, outputs: str) -> tuple[int, int, bool]:
    """(features, outputs, classifier?) of a model in a JSON format (`fmt`): an object whose
    estimator is one of `estimators` (the second classifies), its counts bounded (`outputs`:
    the field of its outputs a node, 1 without a classifier); FormatError naming the field."""
    if not isinstance(data, dict):
        raise FormatError("model", f"must be an object (the {fmt} JSON format)")
    if data.get("estimator") not in estimators:
        raise FormatError("estimator", f"must be one of {', '.join(estimators)}")
    classify = data["estimator"] == estimators[1]
    F = integer_in(data.get("n_features"), "n_features", 1, MAX_FEATURES)
    K = integer_in(data.get(outputs, 1), outputs, 1, MAX_OUTPUTS if classify else 1)
    return F, K, classify


INT64 = 1 << 63  # ONNX's integer class labels are int64


def checked_classes(data, n: int) -> None:
    """A classifier's "classes" when it has them: n labels, each a number (an integer within
    int64, which ONNX's labels are: 2**70 stopped the export with an OverflowError naming no
    field) or a string; FormatError naming "classes"."""
    classes = data.get("classes")
    if classes is not None and (not isinstance(classes, list) or len(classes) != n or not all(
            isinstance(c, (str, float)) or isinstance(c, int) and -INT64 <= c < INT64
            for c in classes)):
        raise FormatError("classes", f"must be a list of {n} class labels (numbers, integers "
                                     "within 64 bits, or strings)")


def integer_in(v, name: str, lo: int, hi: int) -> int:
    """v, an integer in lo..hi (not a bool), or FormatError naming field `name`."""
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise FormatError(name, f"must be an integer in {lo}..{hi}, not {_short(v)}")
    return v


def finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def from_bytes(cls, data, backend):
    head, trees = read_bytes(data)
    forest = _from_header(cls, head, backend)
    forest._forest, forest._tree_dicts = trees, None
    return forest


def from_dict(cls, data: dict, backend):
    forest = _from_header(cls, data, backend)
    check(data)
    K = forest.n_outputs_
    trees = [{k: list(t[k]) for k in ("feature", "threshold", "left", "right", "value")}
             for t in data["trees"]]
    forest._forest, forest._tree_dicts = Trees.from_dicts(trees, K), trees
    return forest


def _from_header(cls, data: dict, backend):
    if data.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} export (format {data.get('format')!r})")
    if data.get("version") != VERSION:
        raise ValueError(f"{FORMAT} version {data.get('version')!r} is not {VERSION}")
    if data.get("estimator") != cls.__name__:
        raise ValueError(f"this export holds a {data.get('estimator')}, not a {cls.__name__}")
    forest = cls(**data["params"], backend=backend)
    forest.n_features_in_ = int(data["n_features"])
    forest.n_outputs_ = int(data["n_outputs"])
    if "classes" in data:
        forest.classes_ = list(data["classes"])
        forest.n_classes_ = len(forest.classes_)
    forest._device = None
    forest.feature_importances_ = list(data["feature_importances"])
    if data.get("oob_score") is not None:
        forest.oob_score_ = data["oob_score"]
    return forest
