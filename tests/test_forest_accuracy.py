"""As accurate as scikit-learn on the same split (80/20, random_state=42, stratified for classes),
with the same random_state for both forests. On the native backend (lavapipe in CI): the
reference backend would take minutes for 200 deep trees."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.ensemble import RandomForestClassifier as SkClassifier
from sklearn.ensemble import RandomForestRegressor as SkRegressor
from sklearn.model_selection import train_test_split

from py_core.forest import RandomForestClassifier, RandomForestRegressor


def run(coro):
    return asyncio.run(coro)


def test_diabetes_mse_within_2_percent_of_sklearn(native_backend, record_property):
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=42)
    ours = run(RandomForestRegressor(n_estimators=200, max_depth=16, random_state=0,
                                     backend=native_backend).fit(Xtr.tolist(), ytr.tolist()))
    mse = float(((np.array(run(ours.predict(Xte.tolist()))) - yte) ** 2).mean())
    sk = SkRegressor(n_estimators=200, max_depth=16, random_state=0).fit(Xtr, ytr)
    sk_mse = float(((sk.predict(Xte) - yte) ** 2).mean())
    record_property("mse", mse)
    record_property("sklearn_mse", sk_mse)
    print(f"diabetes test MSE: ours {mse:.1f}, scikit-learn {sk_mse:.1f} (3042.7 measured)")
    assert mse <= 1.02 * sk_mse


@pytest.mark.parametrize("load", [load_iris, load_wine, load_breast_cancer, load_digits],
                         ids=["iris", "wine", "breast_cancer", "digits"])
def test_accuracy_at_most_one_point_under_sklearn(native_backend, load, record_property):
    X, y = load(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=42, stratify=y)
    ours = run(RandomForestClassifier(n_estimators=100, random_state=0,
                                      backend=native_backend).fit(Xtr.tolist(), ytr.tolist()))
    acc = run(ours.score(Xte.tolist(), yte.tolist()))
    sk_acc = SkClassifier(n_estimators=100, random_state=0).fit(Xtr, ytr).score(Xte, yte)
    record_property("accuracy", acc)
    record_property("sklearn_accuracy", sk_acc)
    print(f"{load.__name__[5:]} test accuracy: ours {acc:.4f}, scikit-learn {sk_acc:.4f}")
    assert acc >= sk_acc - 0.01
