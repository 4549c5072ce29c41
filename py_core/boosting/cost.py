"""What a server job of gradient boosting costs (the `cost` of its Kind; server/jobcost.py).

    boosting_cost = (rows x features x depth + nodes x (features x max_bins + NODE_WORK)) x trees

the rows' passes through the histograms of every level of every tree, as the forest's rows x
trees x depth, and by the features, since a boosted tree builds a histogram of each feature at
each split (the issue's 1M x 20 job of 200 iterations and 31 leaves: 2e10). Every feature,
whatever max_features draws: scikit-learn, XGBoost and LightGBM all build the histograms of
every feature and draw among them only to pick a split (100k x 20, 50 iterations: 0.79 s at
max_features 0.05, 0.91 s at 1.0, in scikit-learn; it was costed 20 times less). depth: the levels
a balanced tree of max_leaf_nodes leaves needs (31: 5), bounded by the leaves the rows allow
(rows / min_samples_leaf); without a leaf limit 2 log2(rows), as the forest's; max_depth when
less. A node costs its split search (every feature's bins) and a fixed NODE_WORK of the
grower's own, whatever its rows: on small tables that is all the work (iris at max_iter
1,000,000 was costed 5.4e9, under the cap, for 80 minutes of scikit-learn: 4.7 ms an iteration
of three trees of 13 nodes); a tree has at most 2 x leaves - 1 nodes, its leaves bounded by
max_leaf_nodes, rows / min_samples_leaf and 2^max_depth. Trees are max_iter, early stopping or
not (it may never stop), times K for a classifier of K > 2 classes, which grows K trees an
iteration: K is the most classes the job's target can hold (`data.classes()`,
server/jobcost.py: from the upload's summary, or the generator's parameters), one tree for
regression and two classes.
"""
from __future__ import annotations

import math

from .params import PARAMS, most_leaves

# A node's fixed work, in row-features: scikit-learn's grower spends 0.07-0.16 ms on a node
# whatever its rows (100 to 20,000 rows, 1 to 64 features, on 2 cores), what 40,000 row-features
# of histograms take at its 3 ns each; its split search adds the features' bins.
NODE_WORK = 40_000


def cost(params: dict, data) -> dict:
    # The estimator's parameters as its table reads them; a job's own switches are not costed.
    p = PARAMS.values({k: v for k, v in (params or {}).items() if k in PARAMS.params})
    rows, cols, generated = data()
    classes = data.classes()
    trees = classes if classes > 2 else 1
    features = max(1, cols - 1)  # the target left out; max_features draws among all of them
    limited = p["max_leaf_nodes"] is not None
    leaves = most_leaves(rows, p["max_leaf_nodes"] if limited else max(2, rows),
                         p["min_samples_leaf"], p["max_depth"])
    if limited:
        depth = math.ceil(math.log2(leaves))  # a balanced tree of that many leaves
    else:  # grown until min_samples_leaf stops it: as the forest's unlimited trees
        depth = 2 * math.ceil(math.log2(max(2, rows)))
    if p["max_depth"] is not None:
        depth = min(depth, p["max_depth"])
    nodes = 2 * leaves - 1
    tree = rows * features * depth + nodes * (features * p["max_bins"] + NODE_WORK)
    total = tree * p["max_iter"] * trees
    return {"cost": total, "unit": UNIT,
            "boosting_cost": total, "rows": rows, "columns": cols, "features": features,
            "iterations": p["max_iter"], "classes": classes, "trees_per_iteration": trees,
            "depth": depth, "nodes": nodes,
            "generated_cells": rows * cols if generated else 0}


UNIT = "(rows x features x depth + nodes x (features x bins + 40,000)) x trees"
