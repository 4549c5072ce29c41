"""Gradient-boosted trees (scikit-learn's HistGradientBoosting*), grown on a backend.

The model's JSON format (`to_dict`), version 1, which the tab, the server's ONNX export and the
snippets all read:

    {"format": "py_core.boosting", "version": 1,
     "estimator": "HistGradientBoostingRegressor" | "HistGradientBoostingClassifier",
     "params": {...},                 # the estimator's parameters (backend left out)
     "loss": "squared_error" | "absolute_error" | "log_loss",   # resolved
     "n_features": F,
     "classes": [...],                # classifier only: the labels, sorted
     "n_trees_per_iteration": K,      # 1 for regression and two classes, else the classes
     "n_iter": I,                     # iterations grown (early stopping: up to the stop, as
                                      # scikit-learn's n_iter_; the best is the job's
                                      # loss_curve.best_iteration)
     "baseline": [K floats],          # the raw score before any tree
     "categorical": [F bools],        # which features split by category sets
     "feature_importances": [F floats],
     "trees": [{                      # I * K trees, iteration-major: tree i * K + k is
                                      # iteration i's tree of output k; root 0
        "feature":   [int],           # split feature of each node, -1 for a leaf
        "threshold": [float],         # numeric split: x <= threshold goes left (an f32 value;
                                      # the largest f32 where only missing values go right)
        "missing_left": [bool],       # where a missing value (NaN) goes
        "categories_left": [[int] | null],  # categorical split: the category codes that go
                                      # left (any other code goes right); null otherwise
        "left":      [int],           # child node numbers, -1 for a leaf
        "right":     [int],
        "value":     [float]          # leaf values, learning rate included; 0 in split nodes
     }, ...]}

A row's raw score of output k is baseline[k] plus the values of the leaves it reaches in the
trees of output k. Regression predicts the raw score; two classes: p = sigmoid(raw), the
probabilities [1 - p, p]; more: the softmax of the K raw scores. The predicted class is that of
the largest probability, the first of equals. Category codes are py_core.data's (the sorted
categories of the column, `Column.codes`); a job's model carries them under "data".
"""
from .estimators import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from .params import LOSSES, PARAMS

__all__ = ["HistGradientBoostingClassifier", "HistGradientBoostingRegressor", "LOSSES", "PARAMS"]
