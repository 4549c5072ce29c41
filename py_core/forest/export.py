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
"""
from __future__ import annotations

from .trees import Trees

FORMAT, VERSION = "py_core.forest", 1


def to_dict(forest) -> dict:
    params = {k: v for k, v in forest.get_params().items() if k != "backend"}
    out = {"format": FORMAT, "version": VERSION, "estimator": type(forest).__name__,
           "params": params, "n_features": forest.n_features_in_}
    if hasattr(forest, "classes_"):
        out["classes"] = list(forest.classes_)
    out["n_outputs"] = forest.n_outputs_
    out["feature_importances"] = list(forest.feature_importances_)
    score = getattr(forest, "oob_score_", None)
    out["oob_score"] = None if score is None or score != score else score
    out["trees"] = [{k: t[k] for k in ("feature", "threshold", "left", "right", "value")}
                    for t in forest._trees]
    return out


def from_dict(cls, data: dict, backend):
    if data.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} export (format {data.get('format')!r})")
    if data.get("version") != VERSION:
        raise ValueError(f"{FORMAT} version {data.get('version')!r} is not {VERSION}")
    if data.get("estimator") != cls.__name__:
        raise ValueError(f"this export holds a {data.get('estimator')}, not a {cls.__name__}")
    forest = cls(**data["params"], backend=backend)
    forest.n_features_in_ = F = int(data["n_features"])
    forest.n_outputs_ = K = int(data["n_outputs"])
    if "classes" in data:
        forest.classes_ = list(data["classes"])
        forest.n_classes_ = len(forest.classes_)
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
    forest._device = None
    forest.feature_importances_ = list(data["feature_importances"])
    if data.get("oob_score") is not None:
        forest.oob_score_ = data["oob_score"]
    return forest
