"""Metrics of a model's predictions on test rows, in plain Python (the page has no scikit-learn),
defined as scikit-learn defines them: the forest job reports them, and the server's runners
(`server/runners/common.py`) score every peer library with the same functions so a comparison
measures the models, not two implementations of F1.
"""
from __future__ import annotations

import math


def regression_metrics(truth, pred) -> dict:
    n = len(truth)
    mean = sum(truth) / n
    sse = sum((t - p) ** 2 for t, p in zip(truth, pred))
    sst = sum((t - mean) ** 2 for t in truth)
    return {"mse": sse / n, "mae": sum(abs(t - p) for t, p in zip(truth, pred)) / n,
            "r2": 1 - sse / sst if sst > 0 else 0.0}


def majority_baseline(train, truth, K, names=None) -> dict:
    """Metrics of always guessing the training rows' most frequent class (ties: the first), with
    the training class frequencies as the probabilities (scikit-learn's DummyClassifier
    "prior")."""
    counts = [0] * K
    for c in train:
        counts[c] += 1
    top = max(range(K), key=counts.__getitem__)
    prior = [c / len(train) for c in counts]
    name = names[top] if names else top
    return {"predictor": f"most frequent class ({name})",
            **classification_metrics(truth, [top] * len(truth), [prior] * len(truth), K)}


def classification_metrics(truth, guess, probs, K) -> dict:
    """Accuracy, macro F1 over the classes seen in truth or guesses (as scikit-learn), and log
    loss with probabilities clipped to [eps, 1 - eps]."""
    n = len(truth)
    tp, fp, fn = [0] * K, [0] * K, [0] * K
    for t, g in zip(truth, guess):
        if t == g:
            tp[t] += 1
        else:
            fp[g] += 1
            fn[t] += 1
    seen = sorted(set(truth) | set(guess))
    f1 = [2 * tp[k] / (2 * tp[k] + fp[k] + fn[k]) if tp[k] + fp[k] + fn[k] else 0.0 for k in seen]
    eps = 2.220446049250313e-16
    loss = -sum(math.log(min(1 - eps, max(eps, row[t]))) for row, t in zip(probs, truth)) / n
    return {"accuracy": sum(tp) / n, "f1": sum(f1) / len(f1), "log_loss": loss}
