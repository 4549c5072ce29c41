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
import struct
from array import array

from .trees import Trees

FORMAT, VERSION = "py_core.forest", 1
MAGIC = b"PCFOREST"


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


def from_bytes(cls, data, backend):
    head, trees = read_bytes(data)
    forest = _from_header(cls, head, backend)
    forest._forest, forest._tree_dicts = trees, None
    return forest


def from_dict(cls, data: dict, backend):
    forest = _from_header(cls, data, backend)
    F, K = forest.n_features_in_, forest.n_outputs_
    trees = []
    for i, t in enumerate(data["trees"]):
        m = len(t["feature"])
        if not m or any(len(t[k]) != m for k in ("threshold", "left", "right", "value")):
            raise ValueError(f"tree {i}: its arrays differ in length")
        for node, (f, left, right) in enumerate(zip(t["feature"], t["left"], t["right"])):
            if f >= F or (f >= 0 and not (node < left < m and right == left + 1)):
                raise ValueError(f"tree {i}, node {node}: bad feature or children")
        if K > 1 and any(len(v) != K for v in t["value"]):
            raise ValueError(f"tree {i}: values must hold {K} class fractions")
        trees.append({k: list(t[k]) for k in ("feature", "threshold", "left", "right", "value")})
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
