"""What a server job of gradient boosting costs (the `cost` of its Kind; server/jobcost.py).

    boosting_cost = rows x features drawn x trees x depth

the rows' passes through the histograms of every level of every tree, as the forest's rows x
trees x depth, and by the features, since a boosted tree builds a histogram of each feature drawn
at each split (the issue's 1M x 20 job of 200 iterations and 31 leaves: 2e10). depth: the levels
a balanced tree of max_leaf_nodes leaves needs (31: 5), bounded by the leaves the rows allow
(rows / min_samples_leaf); without a leaf limit 2 log2(rows), as the forest's; max_depth when
less. Trees are max_iter, early stopping or not (it may never stop), times K for a classifier of
K > 2 classes, which grows K trees an iteration: K is the most classes the job's target can hold
(`data.classes()`, server/jobcost.py: from the upload's summary, or the generator's
parameters), one tree for regression and two classes.
"""
from __future__ import annotations

import math

from .params import PARAMS


def cost(params: dict, data) -> dict:
    # The estimator's parameters as its table reads them; a job's own switches are not costed.
    p = PARAMS.values({k: v for k, v in (params or {}).items() if k in PARAMS.params})
    rows, cols, generated = data()
    classes = data.classes()
    trees = classes if classes > 2 else 1
    features = max(1, math.ceil(max(1, cols - 1) * p["max_features"]))  # the target left out
    leaves = max(2, rows // p["min_samples_leaf"])
    if p["max_leaf_nodes"] is not None:
        leaves = min(leaves, p["max_leaf_nodes"])
        depth = math.ceil(math.log2(leaves))  # a balanced tree of that many leaves
    else:  # grown until min_samples_leaf stops it: as the forest's unlimited trees
        depth = 2 * math.ceil(math.log2(max(2, rows)))
    if p["max_depth"] is not None:
        depth = min(depth, p["max_depth"])
    total = rows * features * p["max_iter"] * trees * depth
    return {"cost": total, "unit": "rows x features x trees x depth",
            "boosting_cost": total, "rows": rows, "columns": cols, "features": features,
            "iterations": p["max_iter"], "classes": classes, "trees_per_iteration": trees,
            "depth": depth,
            "generated_cells": rows * cols if generated else 0}
