"""Gradient-boosted trees (py_core.boosting's JSON format) as ONNX.

The graph takes "X": float32 [rows, features], the features in the run's order (a category as
its code, py_core.data's: the model's "data" description, kept in the ONNX metadata as JSON; a
missing value as NaN, which the trees route themselves) and gives
    regression       "variable": float32 [rows, 1], the raw score
    classification   "label": [rows], the class of the largest probability, the first of equals
                     (as the forest's: int64 or string classes, else their index), and
                     "probabilities": float32 [rows, classes]: two classes [1 - p, p] with
                     p = sigmoid(raw), more the softmax of the raw scores

The raw scores are one ai.onnx.ml TreeEnsemble (opset 5, onnxruntime 1.20+) summing the leaf
values of each output's trees, plus the baseline. Its splits are the format's: x <= threshold
goes left (BRANCH_LEQ, an f32 threshold against the f32 input), a categorical split sends its
categories_left codes left (BRANCH_MEMBER) and every other code right, and a missing value goes
where missing_left says (nodes_missing_value_tracks_true). The label is taken from the raw
scores ([-raw, raw] for two classes), where the order of the classes is exact: the
probabilities' f32 rounding could tie two of them.
"""
from __future__ import annotations

import math
from pathlib import Path

from . import Export, ExportError, class_labels, finish, label_nodes, labels_tensor, run_again

VERSION = 1
ESTIMATORS = ("HistGradientBoostingRegressor", "HistGradientBoostingClassifier")
LEQ, MEMBER = 0, 6  # TreeEnsemble's nodes_modes
# Bounds a client's model is checked against before anything is sized from it (its features
# and classes: the forest's, py_core.forest.export).
MAX_NODES = 1 << 24  # nodes in all trees: 64 MB a node array as f32
MAX_CATEGORY = 1 << 24  # a category code an f32 holds exactly
# The reference backend rebuilds a boosted job at about 60 ns a unit of its cost (py_core/
# boosting/cost.py; lavapipe's native backend at 7): past this many units (12 s), the native one.
REFERENCE_COST = 2e8


def to_onnx(model: dict) -> bytes:
    """py_core.boosting's JSON format (plus its "data" description) -> ONNX bytes."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    F, K = int(model["n_features"]), int(model["n_trees_per_iteration"])
    classify = model["estimator"] == "HistGradientBoostingClassifier"
    ensemble = _ensemble(model["trees"], K)
    nodes = [helper.make_node(
        "TreeEnsemble", ["X"], ["sums"], domain="ai.onnx.ml", n_targets=K,
        aggregate_function=1, post_transform=0,  # SUM, NONE
        tree_roots=ensemble["roots"], nodes_featureids=ensemble["feature"],
        nodes_splits=numpy_helper.from_array(np.array(ensemble["split"], np.float32)),
        nodes_modes=numpy_helper.from_array(np.array(ensemble["mode"], np.uint8)),
        nodes_truenodeids=ensemble["true"], nodes_trueleafs=ensemble["true_leaf"],
        nodes_falsenodeids=ensemble["false"], nodes_falseleafs=ensemble["false_leaf"],
        nodes_missing_value_tracks_true=ensemble["missing_true"],
        membership_values=numpy_helper.from_array(np.array(ensemble["members"] or [math.nan],
                                                           np.float32)),
        leaf_targetids=ensemble["target"],
        leaf_weights=numpy_helper.from_array(np.array(ensemble["weight"], np.float32))),
        helper.make_node("Add", ["sums", "baseline"], ["raw"])]
    initializers = [numpy_helper.from_array(np.array(model["baseline"], np.float32), "baseline")]
    X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, F])
    if classify:
        labels = class_labels(model.get("classes") or list(range(max(2, K))))
        classes = labels_tensor(labels)
        n_classes = len(next(iter(labels.values())))
        outputs = [helper.make_tensor_value_info("label", classes.data_type, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                                 [None, n_classes])]
        if K == 1:  # two classes: p = sigmoid(raw) of the second
            nodes += [helper.make_node("Sigmoid", ["raw"], ["p"]),
                      helper.make_node("Sub", ["one", "p"], ["q"]),
                      helper.make_node("Concat", ["q", "p"], ["probabilities"], axis=1),
                      helper.make_node("Neg", ["raw"], ["minus"]),
                      helper.make_node("Concat", ["minus", "raw"], ["scores"], axis=1)]
            initializers.append(helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]))
        else:
            nodes += [helper.make_node("Softmax", ["raw"], ["probabilities"], axis=1),
                      helper.make_node("Identity", ["raw"], ["scores"])]
        nodes += label_nodes("scores")
        initializers.append(classes)
    else:
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
        nodes.append(helper.make_node("Identity", ["raw"], ["variable"]))
    graph = helper.make_graph(nodes, "playground_boosting", [X], outputs,
                              initializer=initializers)
    # ai.onnx.ml 5 (TreeEnsemble) comes with ONNX 1.16: opset 21, IR version 10
    return finish(graph, model, (("", 21), ("ai.onnx.ml", 5)), ir_version=10)


def _ensemble(trees: list, K: int) -> dict:
    """TreeEnsemble's attributes: its nodes are the split nodes alone, its leaves a list of their
    own; tree i's leaves add to output i % K. A tree that is one leaf gets a split node whose two
    branches both reach it (the operator has no other way to say so)."""
    e = {k: [] for k in ("roots", "feature", "split", "mode", "true", "true_leaf", "false",
                         "false_leaf", "missing_true", "members", "target", "weight")}
    for i, tree in enumerate(trees):
        feature = tree["feature"]
        index, splits, leaves = {}, len(e["feature"]), len(e["weight"])
        for node, f in enumerate(feature):  # split nodes first, then leaves, each in order
            if f >= 0:
                index[node] = splits
                splits += 1
        for node, f in enumerate(feature):
            if f < 0:
                index[node] = leaves
                leaves += 1
                e["target"].append(i % K)
                e["weight"].append(float(tree["value"][node]))
        if feature[0] < 0:  # a lone leaf
            e["roots"].append(len(e["feature"]))
            _split(e, 0, LEQ, 0.0, False, (index[0], 1), (index[0], 1))
            continue
        e["roots"].append(index[0])
        for node, f in enumerate(feature):
            if f < 0:
                continue
            left, right = tree["left"][node], tree["right"][node]
            true = (index[left], int(feature[left] < 0))
            false = (index[right], int(feature[right] < 0))
            cats = tree["categories_left"][node]
            if cats is None:
                _split(e, f, LEQ, float(tree["threshold"][node]), tree["missing_left"][node],
                       true, false)
            elif cats:
                _split(e, f, MEMBER, 0.0, tree["missing_left"][node], true, false)
                e["members"] += [float(c) for c in cats] + [math.nan]  # NaN ends a node's set
            else:  # no code goes left: every value goes right, a missing one where it says
                _split(e, f, LEQ, -math.inf, tree["missing_left"][node], true, false)
    return e


def _split(e, feature, mode, split, missing_true, true, false) -> None:
    e["feature"].append(int(feature))
    e["mode"].append(mode)
    e["split"].append(split)
    e["missing_true"].append(int(bool(missing_true)))
    e["true"].append(true[0])
    e["true_leaf"].append(true[1])
    e["false"].append(false[0])
    e["false_leaf"].append(false[1])


def check(data) -> None:
    """Check a model in the JSON format before anything is built from it: the header's counts
    bounded, as many baseline values as outputs, every tree's arrays as long as each other,
    every split's feature in range and its children after it in its tree (so no cycles), leaves
    and thresholds finite, category codes in range. Linear in the nodes; FormatError naming the
    first field that is wrong."""
    from py_core.boosting.params import F32_MAX
    from py_core.forest.export import FormatError, checked_classes, checked_head, finite
    from py_core.forest.export import integer_in as count
    F, K, classify = checked_head(data, "py_core.boosting", ESTIMATORS, "n_trees_per_iteration")

    def f32(v):  # the scores a TreeEnsemble adds up: past f32 an infinity the snippet has not
        return finite(v) and abs(v) <= F32_MAX

    baseline = data.get("baseline")
    if not isinstance(baseline, list) or len(baseline) != K or not all(map(f32, baseline)):
        raise FormatError("baseline", f"must be a list of {K} finite numbers within 32-bit "
                                      "floats' range")
    if classify:
        checked_classes(data, max(2, K))
    trees = data.get("trees")
    if not isinstance(trees, list) or not trees or len(trees) % K:
        raise FormatError("trees", f"must be a non-empty list of trees, {K} an iteration")
    keys = ("feature", "threshold", "missing_left", "categories_left", "left", "right", "value")
    total = 0
    for i, t in enumerate(trees):
        at = f"trees[{i}]"
        if not isinstance(t, dict) or not all(isinstance(t.get(k), list) for k in keys):
            raise FormatError(at, f"must be an object of lists ({', '.join(keys)}), one entry "
                                  "a node")
        m = len(t["feature"])
        if not m or any(len(t[k]) != m for k in keys):
            raise FormatError(at, f"{', '.join(keys)} must be lists of one length, at least 1")
        total += m
        if total > MAX_NODES:
            raise FormatError(at, f"more than {MAX_NODES:,} nodes in the model")
        for node in range(m):
            f = count(t["feature"][node], f"{at}.feature[{node}]", -1, F - 1)
            if f < 0:
                if not f32(t["value"][node]):
                    raise FormatError(f"{at}.value[{node}]", "must be a finite number within "
                                      "32-bit floats' range (the graph's scores are f32)")
                continue
            count(t["left"][node], f"{at}.left[{node}]", node + 1, m - 1)
            count(t["right"][node], f"{at}.right[{node}]", node + 1, m - 1)
            cats = t["categories_left"][node]
            if cats is None:
                if not finite(t["threshold"][node]):
                    raise FormatError(f"{at}.threshold[{node}]", "must be a finite number")
            elif not isinstance(cats, list):
                raise FormatError(f"{at}.categories_left[{node}]", "must be null or a list of "
                                  "category codes")
            else:
                for j, c in enumerate(cats):
                    count(c, f"{at}.categories_left[{node}][{j}]", 0, MAX_CATEGORY)
            if not isinstance(t["missing_left"][node], bool):
                raise FormatError(f"{at}.missing_left[{node}]", "must be true or false")


def on_reference(job: dict, data_dir: Path) -> bool:
    """Whether the run's job is small enough to rebuild in plain Python: by its cost, which
    counts its classes' trees and its nodes (rows x columns x iterations did not: diabetes at
    1,000 iterations went to the reference backend, 110 s, where lavapipe takes 12 s; with
    min_samples_leaf 1 and no leaf limit 2 s an iteration, past the export's time limit)."""
    from server import jobcost
    return jobcost.estimate(job, data_dir)["cost"] <= REFERENCE_COST


def rebuild(job: dict, data_dir: Path) -> dict:
    """The run's model in the JSON format, fit again by py_core on the server (its job's
    result's "model": the format, with its "data")."""
    result = run_again(job, data_dir, small=on_reference(job, data_dir))
    model = result.get("model") or {}
    if "trees" not in model:
        raise ExportError("the gradient_boosting job gave no trees to export")
    return model


EXPORT = Export(convert=to_onnx, check=check, rebuild=rebuild, version=VERSION)
