"""The baseline a forest's metrics are shown against: scikit-learn's DummyClassifier (prior) and
DummyRegressor (mean) on the same rows give the same numbers."""
import random

import numpy as np
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    log_loss,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
)

from py_core.jobs.metrics import majority_baseline, regression_metrics


def test_majority_baseline_matches_sklearn_dummy_prior():
    rnd = random.Random(3)
    train = [rnd.choice([0, 1, 1, 2, 2, 2]) for _ in range(300)]
    truth = [rnd.choice([0, 1, 2, 2]) for _ in range(80)]
    got = majority_baseline(train, truth, 3, ["a", "b", "c"])
    dummy = DummyClassifier(strategy="prior").fit(np.zeros((300, 1)), train)
    guess, proba = dummy.predict(np.zeros((80, 1))), dummy.predict_proba(np.zeros((80, 1)))
    assert got["predictor"] == "most frequent class (c)"
    assert abs(got["accuracy"] - accuracy_score(truth, guess)) < 1e-12
    assert abs(got["f1"] - f1_score(truth, guess, average="macro", labels=sorted(set(truth) | set(guess)))) < 1e-12
    assert abs(got["log_loss"] - log_loss(truth, proba, labels=[0, 1, 2])) < 1e-9


def test_mean_baseline_matches_sklearn_dummy_mean():
    rnd = random.Random(4)
    train = [rnd.gauss(10, 3) for _ in range(200)]
    truth = [rnd.gauss(11, 3) for _ in range(50)]
    mean = sum(train) / len(train)
    got = regression_metrics(truth, [mean] * len(truth))
    pred = DummyRegressor().fit(np.zeros((200, 1)), train).predict(np.zeros((50, 1)))
    assert abs(got["mse"] - mean_squared_error(truth, pred)) < 1e-9
    assert abs(got["mae"] - mean_absolute_error(truth, pred)) < 1e-9
    assert abs(got["r2"] - r2_score(truth, pred)) < 1e-9 and got["r2"] <= 0
