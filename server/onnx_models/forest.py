"""A random forest (py_core.forest's JSON format) as ONNX.

The graph takes "X": float32 [rows, features], the features in the run's order after the
page's own preprocessing (categories as codes, missing values as the training medians: the
model's "data" description, kept in the ONNX metadata as JSON), and gives
    regression       "variable": float32 [rows, 1], the mean over trees of the leaf values
    classification   "label": [rows], the class (int64 when the classes are integers, string
                     when they are strings, else the index into metadata "classes") of the
                     largest probability, the first of equals, as py_core predicts; and
                     "probabilities": float32 [rows, classes], the mean leaf class fractions
The leaf values are summed in f32 and divided by the number of trees, as py_core does.
A split sends x[feature] <= threshold left (BRANCH_LEQ), as py_core does; py_core compares x
rounded to f32 with an f32 threshold, as onnxruntime does with its f32 input.
"""
from __future__ import annotations

from pathlib import Path

from . import Export, class_labels, finish, label_nodes, labels_tensor, run_again

# Version 1 took onnxruntime's own label: wrong for two classes.
VERSION = 2


def to_onnx(model: dict) -> bytes:
    """py_core.forest's JSON format (plus its "data" description) -> ONNX bytes."""
    from onnx import TensorProto, helper

    trees = model["trees"]
    n_trees, F = len(trees), int(model["n_features"])
    classify = model.get("estimator") == "RandomForestClassifier"
    K = int(model.get("n_outputs", 1))
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids",
                             "nodes_values", "nodes_modes", "nodes_truenodeids",
                             "nodes_falsenodeids")}
    w_tree, w_node, w_id, w_val = [], [], [], []
    for t, tree in enumerate(trees):
        for node, (f, thr, left, right, value) in enumerate(zip(
                tree["feature"], tree["threshold"], tree["left"], tree["right"], tree["value"])):
            leaf = f < 0
            attrs["nodes_treeids"].append(t)
            attrs["nodes_nodeids"].append(node)
            attrs["nodes_featureids"].append(0 if leaf else int(f))
            attrs["nodes_values"].append(0.0 if leaf else float(thr))
            attrs["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            attrs["nodes_truenodeids"].append(0 if leaf else int(left))
            attrs["nodes_falsenodeids"].append(0 if leaf else int(right))
            if not leaf:
                continue
            values = value if classify else [value]
            for k, v in enumerate(values):
                w_tree.append(t)
                w_node.append(node)
                w_id.append(k)
                w_val.append(float(v))
    # The ensemble sums the leaf values in f32 and a Div takes their mean, as py_core does (its
    # sums of class fractions are then exact where the leaves are pure, and so are its ties).
    count = helper.make_tensor("n_trees", TensorProto.FLOAT, [], [float(n_trees)])
    X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, F])
    if classify:
        labels = class_labels(model.get("classes") or list(range(K)))
        classes = labels_tensor(labels)
        outputs = [helper.make_tensor_value_info("label", classes.data_type, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, K])]
        nodes = [
            helper.make_node(
                "TreeEnsembleClassifier", ["X"], ["ensemble_label", "sums"], domain="ai.onnx.ml",
                class_treeids=w_tree, class_nodeids=w_node, class_ids=w_id, class_weights=w_val,
                post_transform="NONE", **labels, **attrs),
            helper.make_node("Div", ["sums", "n_trees"], ["probabilities"]),
            # The ensemble's own label is not py_core's: with two classes onnxruntime takes the
            # second whenever its score is above 0. The label is the first class of the largest
            # probability, as py_core's predict.
            *label_nodes("probabilities")]
        initializers = [count, classes]
    else:
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
        nodes = [
            helper.make_node(
                "TreeEnsembleRegressor", ["X"], ["sums"], domain="ai.onnx.ml", n_targets=1,
                target_treeids=w_tree, target_nodeids=w_node, target_ids=w_id,
                target_weights=w_val, aggregate_function="SUM", post_transform="NONE", **attrs),
            helper.make_node("Div", ["sums", "n_trees"], ["variable"])]
        initializers = [count]
    graph = helper.make_graph(nodes, "playground_forest", [X], outputs, initializer=initializers)
    # ir_version 8: onnxruntime 1.17+ reads it
    return finish(graph, model, (("", 17), ("ai.onnx.ml", 3)), ir_version=8)


def rebuild(job: dict, data_dir: Path) -> dict:
    """The run's forest in the JSON format, fit again by py_core on the server."""
    from py_core.forest.export import read_bytes
    from server import jobcost
    from server.runners.pycore_runner import REFERENCE_CELLS
    rows, cols, _ = jobcost.shape(job.get("dataset"), data_dir)
    cells = rows * cols * jobcost.params(job)["n_estimators"]
    result = run_again(job, data_dir, small=cells <= REFERENCE_CELLS)
    head, flat = read_bytes(result["model"]["binary"])
    return {**head, "trees": flat.dicts()}


def _check(model) -> None:
    from py_core.forest.export import check
    check(model)


EXPORT = Export(convert=to_onnx, check=_check, rebuild=rebuild, version=VERSION)
