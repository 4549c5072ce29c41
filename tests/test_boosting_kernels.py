"""Each gradient boosting kernel on the native backend against its reference, on fresh random
inputs, and whole fits on both backends: the same trees.

A small random model is boosted on the reference backend from random data (missing values
included) and parameters; one dispatch of the kernel under test (a random occurrence) is
captured, replayed on the native backend and on the reference, and every buffer compared:
integers exactly, floats within tolerance (exp and log, whose last bit WGSL leaves open).
"""
from __future__ import annotations

import asyncio
import math
import random
from array import array

import pytest
from sklearn.datasets import load_diabetes, load_iris

from py_core.boosting import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from py_core.gpu.reference import ReferenceBackend
from py_core.kernels import boosting as bk
from py_core.selftest import max_error
from tests.test_forest_kernels import CapturingBackend, replay


def run(coro):
    return asyncio.run(coro)


def random_model(rng, loss, backend):
    kw = dict(max_iter=rng.randint(1, 4), max_leaf_nodes=rng.choice([2, 5, 9, None]),
              max_depth=rng.choice([None, 2, 3]), min_samples_leaf=rng.choice([1, 3, 8]),
              l2_regularization=rng.choice([0.0, 0.5]), max_features=rng.choice([1.0, 0.5]),
              max_bins=rng.choice([255, 7, 3]), learning_rate=rng.choice([0.1, 0.7]),
              early_stopping=rng.random() < 0.5, validation_fraction=0.25,
              n_iter_no_change=1, random_state=rng.randrange(2**32), backend=backend)
    if loss == "log_loss":
        return HistGradientBoostingClassifier(**kw)
    return HistGradientBoostingRegressor(loss=loss, **kw)


def random_data(rng, loss):
    """Rows of numbers and of category codes (every other feature; missing values in both)."""
    n, F = rng.randint(30, 90), rng.randint(1, 7)
    X = [[math.nan if rng.random() < 0.1 else float(rng.randint(0, 5)) if f % 2 else rng.gauss(0, 1)
          for f in range(F)] for _ in range(n)]
    if loss == "log_loss":
        k = rng.choice([2, 3, 5])
        return X, [int(abs((r[0] if r[0] == r[0] else 0) * 2 + rng.gauss(0, 1))) % k for r in X]
    return X, [sum(v for v in r if v == v) * rng.uniform(-3, 3) + rng.gauss(0, 0.5) for r in X]


ENTRIES = ["bin_rows", "gradients", "hist_build", "root_totals", "split_find", "grow", "route",
           "med_count", "med_step", "leaf_values", "update", "update_val", "store_tree", "next_iter",
           "loss", "predict"]
ONCE = {"bin_rows", "next_iter", "predict"}  # the first dispatch will do
INEXACT = {"gradients", "loss"}  # exp and log: within tolerance
LOSSES = ["squared_error", "absolute_error", "log_loss"]
# Kernels that compute by loss run for each; the others for a random one (CI's time).
CASES = [(e, loss) for e in ("gradients", "loss", "leaf_values") for loss in LOSSES]
CASES += [(e, "absolute_error") for e in ("med_count", "med_step")]
CASES += [(e, None) for e in ENTRIES if e not in {c[0] for c in CASES}]


CASES += [("hist_build_wg", None)]  # GPUs' histograms: replayed on hist_build's inputs
VARIANTS = {"hist_build_wg": "hist_build"}


@pytest.mark.parametrize("entry,loss", CASES)
def test_kernel_matches_reference(native_backend, rng, entry, loss):
    loss = loss or rng.choice(LOSSES)
    for attempt in range(8):  # a small random model may never reach the chosen dispatch
        X, y = random_data(rng, loss)
        nth = 0 if entry in ONCE or attempt > 4 else rng.randrange(12)
        ref = CapturingBackend(VARIANTS.get(entry, entry), nth)
        model = random_model(rng, loss, ref)
        if entry == "update_val":
            model.early_stopping = True
        run(model.fit(X, y, categorical=[f % 2 == 1 and rng.random() < 0.7 for f in range(len(X[0]))]))
        if entry == "predict":
            run(model.predict(X[:9]))
        if ref.captured is not None:
            break
    assert ref.captured is not None, f"no {entry} dispatch happened"
    grid, bufs = ref.captured

    if entry == "hist_build_wg":  # a workgroup per (output, group of features, run of rows)
        p = bk.PARAMS.unpack(bufs[0][2])
        grid = bk.grid(bk.hist_wg_items(p["K"], p["F"], p["B"], p["n"]))
    want, got = (replay(backend, "boosting", entry, bufs, grid) for backend in (ReferenceBackend(), native_backend))
    for i, (g, w) in enumerate(zip(got, want)):
        if g.typecode == "f" and entry in INEXACT:
            err, _, ok = max_error(g, w, atol=1e-5, rtol=1e-5)
            assert ok, f"{entry} binding {i}: largest error {err}"
        elif entry in INEXACT and i == 4 and entry == "gradients":  # qs: largest |g|, h as f32 bits
            err, _, ok = max_error(array("f", g.tobytes()), array("f", w.tobytes()), atol=1e-6, rtol=1e-5)
            assert ok, f"{entry} binding {i}: largest error {err}"
        else:
            diff = [j for j, (a, b) in enumerate(zip(g.tobytes(), w.tobytes())) if a != b]
            assert not diff, f"{entry} binding {i}: bytes differ from {diff[0]}"


def _fit_both(native_backend, make, X, y, wide=None):
    return [run(make(backend).fit(X, y, parallel_bins=wide))
            for backend in (native_backend, ReferenceBackend())]


def test_same_trees_on_both_backends(native_backend):
    """Whole fits on real data with missing values (scikit-learn's diabetes, a tenth of its
    values made missing), both regression losses, early stopping on, lavapipe with the GPUs'
    histogram kernel once: the reference and lavapipe grow the same trees, leaf values to the
    bit."""
    X, y = load_diabetes(return_X_y=True)
    rng = random.Random(0)
    rows = [[math.nan if rng.random() < 0.1 else float(v) for v in row] for row in X[:200]]
    for loss, wide in (("squared_error", True), ("absolute_error", None)):
        a, b = _fit_both(native_backend, lambda be, loss=loss: HistGradientBoostingRegressor(
            loss=loss, max_iter=12, max_leaf_nodes=8, early_stopping=True, n_iter_no_change=3,
            random_state=0, max_features=0.5, backend=be), rows, list(y[:200]), wide)
        assert a.to_dict()["trees"] == b.to_dict()["trees"] and a.n_iter_ == b.n_iter_
        assert a.train_score_ == pytest.approx(b.train_score_, rel=1e-6)


def test_same_splits_for_classes_on_both_backends(native_backend):
    """Iris, three classes (three trees an iteration): the same splits on both backends; leaf
    values to f32 rounding (the gradients come from exp)."""
    X, y = load_iris(return_X_y=True)
    a, b = _fit_both(native_backend, lambda be: HistGradientBoostingClassifier(
        max_iter=5, random_state=0, backend=be), X.tolist(), y.tolist())
    for ta, tb in zip(a.to_dict()["trees"], b.to_dict()["trees"]):
        assert {k: v for k, v in ta.items() if k != "value"} == {k: v for k, v in tb.items() if k != "value"}
        assert ta["value"] == pytest.approx(tb["value"], rel=1e-5, abs=1e-7)


def _binning_columns(rng, n):
    """Columns that test the device's thresholds: numbers with missing values, category codes,
    a few tied values (-0 among them), more distinct values than max_bins, +inf (left out as
    NaN is; a fit refuses it once binned: -inf would be binned first), no values."""
    nan, inf = math.nan, math.inf
    few = [rng.uniform(-3, 3) for _ in range(rng.randint(2, 9))] + [0.0, -0.0]
    cols = [[nan if rng.random() < 0.2 else rng.gauss(0, 1) for _ in range(n)],
            [nan if rng.random() < 0.1 else float(rng.randrange(rng.randint(2, 40))) for _ in range(n)],
            [rng.choice(few) for _ in range(n)],
            [round(rng.uniform(-5, 5), rng.choice([1, 2])) for _ in range(n)],  # ties, many values
            [rng.choice([nan, inf, rng.random()]) for _ in range(n)],
            [nan] * n]
    rng.shuffle(cols)
    return cols


class DeviceSteps(ReferenceBackend):
    """The reference backend taking the device's steps (the binning kernels' references), not
    binning.thresholds."""
    name = "webgpu"


def test_thresholds_on_the_device_are_the_hosts(native_backend, rng):
    """The forest's binning kernels, shared by boosting (sample, sort_pass, thresholds: one
    submission, the records read back once) give on lavapipe the words their references give,
    and a fit's thresholds and per-bin values (category codes) are binning.thresholds' (the
    reference backend's host path) bit for bit: missing values and infinities left out, a bin
    per value up to max_bins, -0 as +0, a feature without values of no bins."""
    from py_core.boosting import binning
    from py_core.boosting.grower import KERNELS, Grower, Spec

    n, max_bins = rng.randint(200, 700), rng.choice([255, 255, 40, 7, 2])
    cols = _binning_columns(rng, n)
    F = len(cols)
    X = array(rng.choice("fd"), [cols[f][r] for r in range(n) for f in range(F)])
    got = {}
    for b in (native_backend, DeviceSteps()):
        g = Grower(b, Spec(0, 1, 1, 2, None, 1, F, 0.1, 0.0, 0, False, 1, 0.0))
        g.k = {e: run(b.kernel("boosting", e)) for e in KERNELS}
        with b.scope("thresholds"):
            g.device_sort = True  # as on a GPU, lavapipe too (CPU adapters sort on the host)
            g._upload(X, n, F)
            got[b] = run(g._thresholds(X, max_bins))
    want = binning.thresholds(X, n, F, max_bins)
    for b, (th, values) in got.items():
        assert array("f", [v for t in th for v in t]).tobytes() == array("f", [v for t in want[0] for v in t]).tobytes()
        assert [len(t) for t in th] == [len(t) for t in want[0]] and values == want[1], b.name
    assert any(v is None for v in want[1])
    assert max_bins < 40 or any(v is not None for v in want[1])  # the codes, the few values
