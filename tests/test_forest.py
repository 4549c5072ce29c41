"""The forest estimators: scikit-learn's contract, binning, export, and the same forest on every
backend for the same seed."""
from __future__ import annotations

import asyncio
import contextlib
import json
import math
from array import array
from functools import partial

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, load_wine
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from py_core.forest import RandomForestClassifier, RandomForestRegressor, as_matrix
from py_core.forest.binning import bin_edges, feature_bins
from py_core.gpu import LimitError


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X.tolist(), y.tolist()


def test_init_only_stores_and_defaults_follow_sklearn():
    r = RandomForestRegressor(max_depth="nonsense", random_state=7)
    assert r.max_depth == "nonsense" and r.random_state == 7  # validated by fit, not here
    assert r.get_params()["max_features"] == 1.0 and r.criterion == "squared_error"
    c = RandomForestClassifier()
    assert c.max_features == "sqrt" and c.criterion == "gini" and c.n_estimators == 100
    assert c.set_params(n_estimators=3) is c and c.n_estimators == 3
    with pytest.raises(ValueError, match="unknown parameter"):
        c.set_params(depth=3)


@pytest.mark.parametrize("kw, match", [
    (dict(n_estimators=0), "n_estimators"), (dict(max_depth=0), "max_depth"),
    (dict(min_samples_split=1), "min_samples_split"), (dict(min_samples_leaf=0), "min_samples_leaf"),
    (dict(max_features="half"), "max_features"), (dict(max_features=99), "max_features"),
    (dict(n_bins=257), "n_bins"), (dict(exact_bins=-1), "exact_bins"),
    (dict(exact_bins=2**16 + 1), "exact_bins"), (dict(criterion="gini"), "criterion"),
    (dict(oob_score=True, bootstrap=False), "oob_score"), (dict(random_state="x"), "random_state"),
])
def test_fit_validates_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        run(RandomForestRegressor(**kw).fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0]))


def test_fit_validates_data():
    f = RandomForestRegressor(n_estimators=2)
    with pytest.raises(ValueError, match="X has NaN"):
        run(f.fit([[0.0], [math.nan]], [1.0, 2.0]))
    with pytest.raises(ValueError, match="X has NaN"):  # beyond f32: infinite there
        run(f.fit(array("d", [0.0, 1e39, 2.0]), [1.0, 2.0, 3.0], n_features=1))
    with pytest.raises(ValueError, match="y has NaN"):
        run(f.fit([[0.0], [1.0], [2.0]], [1.0, math.nan, 2.0]))
    run(f.fit([[0.0], [1.0], [2.0]], [1.0, 3.0, 2.0]))
    with pytest.raises(ValueError, match="X has NaN"):
        run(f.predict([[0.0], [math.inf]]))
    with pytest.raises(ValueError, match="y has 1"):
        run(f.fit([[0.0], [1.0]], [1.0]))
    with pytest.raises(ValueError, match="row 1"):
        run(f.fit([[0.0, 1.0], [1.0]], [1.0, 2.0]))
    with pytest.raises(ValueError, match="n_features"):
        run(f.fit(array("d", [1, 2, 3, 4]), [1.0, 2.0]))
    with pytest.raises(RuntimeError, match="not fitted"):
        run(RandomForestRegressor().predict([[1.0]]))


def test_inputs_as_rows_flat_arrays_and_numpy_agree(diabetes):
    X, y = diabetes
    X, y = X[:80], y[:80]
    flat = array("d", [v for row in X for v in row])
    preds = []
    for data, kw in ((X, {}), (flat, {"n_features": 10}), (np.array(X), {})):
        f = run(RandomForestRegressor(n_estimators=3, random_state=1, max_depth=4).fit(data, y, **kw))
        preds.append(list(run(f.predict(data, **kw))))
    assert preds[0] == preds[1] == preds[2]
    assert as_matrix(X)[1:] == (80, 10)


def test_binning_small_data_has_sklearn_midpoints():
    values = sorted(array("f", [3.0, 1.0, 2.0, 2.0, 10.0]).tolist())
    thresholds, lo, hi = feature_bins(values, 256)
    assert thresholds == [1.5, 2.5, 6.5] and lo == hi == [1.0, 2.0, 3.0, 10.0]
    # More distinct values than bins: percentile cuts, each bin non-empty, sorted.
    values = sorted(array("f", [i * 0.37 for i in range(1000)]).tolist())
    thresholds, lo, hi = feature_bins(values, 16)
    assert len(thresholds) == 15 and thresholds == sorted(set(thresholds))
    assert all(a <= b for a, b in zip(lo, hi))
    # Mostly one value: the top cut would be the maximum itself; the rare values keep a bin.
    values = sorted([1.0] * 5000 + [i / 1000 for i in range(300)])
    thresholds, lo, hi = feature_bins(values, 16)
    assert thresholds and thresholds[-1] < 1.0 and hi[-1] == 1.0 and lo[0] == 0.0
    X = array("f", [0, 5, 1, 5, 2, 5])
    edges, fmeta, _ = bin_edges(X, 3, 2, 256)
    assert list(fmeta) == [0, 3, 3, 1]  # feature 1 is constant: one bin
    assert list(edges)[:9] == [0.5, 0.0, 0.0, 1.5, 1.0, 1.0, math.inf, 2.0, 2.0]


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_one_tree_without_bootstrap_is_sklearns_tree(task):
    """Small data (at most max(n_bins, exact_bins) distinct values a feature: diabetes' s2 has 302,
    breast_cancer's widest 547, on 16-bit bins), all features, no bootstrap: the same splits and
    thresholds as scikit-learn (up to ties, which it breaks at random)."""
    if task == "regression":
        X, y = load_diabetes(return_X_y=True)
        sk = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
        ours = RandomForestRegressor(n_estimators=1, max_depth=4, bootstrap=False, random_state=0)
    else:
        X, y = load_breast_cancer(return_X_y=True)
        sk = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
        ours = RandomForestClassifier(n_estimators=1, max_depth=3, bootstrap=False, max_features=None,
                                      random_state=0)
    run(ours.fit(X.tolist(), y.tolist()))
    tree = ours.to_dict()["trees"][0]

    X32 = X.astype(np.float32)

    def walk(i_sk, i_ours, rows):  # node by node; a tie may pick another feature, same partition
        f = sk.tree_.feature[i_sk]
        assert (tree["feature"][i_ours] < 0) == (f < 0)
        if f < 0:
            return
        go_left = X32[rows, f] <= sk.tree_.threshold[i_sk]
        if tree["feature"][i_ours] == f:
            assert tree["threshold"][i_ours] == pytest.approx(sk.tree_.threshold[i_sk], rel=1e-6)
        else:
            ours_left = X32[rows, tree["feature"][i_ours]] <= tree["threshold"][i_ours]
            if (ours_left == ~go_left).all():  # the mirror split: children swap
                walk(sk.tree_.children_left[i_sk], tree["right"][i_ours], rows[go_left])
                walk(sk.tree_.children_right[i_sk], tree["left"][i_ours], rows[~go_left])
                return
            assert (ours_left == go_left).all(), f"node {i_sk}: a different partition"
        walk(sk.tree_.children_left[i_sk], tree["left"][i_ours], rows[go_left])
        walk(sk.tree_.children_right[i_sk], tree["right"][i_ours], rows[~go_left])

    walk(0, 0, np.arange(len(y)))
    got = run(ours.predict(X.tolist())) if task == "regression" else run(ours.predict_proba(X.tolist()))
    want = sk.predict(X) if task == "regression" else sk.predict_proba(X)
    assert np.allclose(np.array(got, dtype=float), want, rtol=1e-5, atol=1e-5)


def _plain_tree(X, y, classes: int, seed: int = 0):
    """A fully grown tree (no bootstrap, every feature) in plain Python, as the forest's spec
    says: at each node with two or more rows (and, for classes, not pure) the split with the
    largest score, sum_side (sum of y)^2 / rows (regression) or sum_side sum_k count_k^2 / rows
    (gini), in exact arithmetic, over every feature and every threshold between neighbouring
    distinct values; ties go to the feature first in the node's random permutation (scikit-learn
    keeps the first best of its random order), then to the lowest threshold; the threshold is the
    largest f32 at or below the midpoint. Nodes are numbered level by level as the forest numbers
    them (children in the order of their parents' slots; the child with fewer rows first), since
    a node's permutation is keyed by its number. A node is (feature, threshold, left, right) or
    ("leaf",)."""
    from fractions import Fraction

    from py_core.kernels.forest import feature_rank, hash3, mid_down, perm_rounds

    F = len(X[0])

    def stats(rows):
        if classes:
            counts = [0] * classes
            for r in rows:
                counts[y[r]] += 1
            return sum(c * c for c in counts), counts
        s = sum(Fraction(y[r]) for r in rows)
        return s * s, None

    def is_open(rows):
        return len(rows) >= 2 and not (classes and max(stats(rows)[1]) == len(rows))

    def best_split(rows, node):
        key = hash3(seed, 1, node)
        best = None
        for f in range(F):
            rank = feature_rank(key, f, perm_rounds(F), F)
            order = sorted(rows, key=lambda r: X[r][f])
            for i in range(1, len(order)):
                a, b = X[order[i - 1]][f], X[order[i]][f]
                if a == b:
                    continue
                left, right = order[:i], order[i:]
                score = stats(left)[0] / Fraction(len(left)) + stats(right)[0] / Fraction(len(right))
                if best is None or (score, -rank) > (best[0], -best[1]):
                    best = (score, rank, f, mid_down(a, b), left, right)
        return best

    nodes, level, next_id = {}, [(0, list(range(len(y))))], 1
    while level:
        following = []
        for node, rows in level:
            found = best_split(rows, node)
            if found is None:
                continue
            _, _, f, t, left, right = found
            nodes[node] = (f, t, next_id)
            small = 0 if len(left) <= len(right) else 1
            for side in (small, 1 - small):
                child = (left, right)[side]
                if is_open(child):
                    following.append((next_id + side, child))
            next_id += 2
        level = following

    def nested(node):
        if node not in nodes:
            return ("leaf",)
        f, t, child = nodes[node]
        return (f, t, nested(child), nested(child + 1))

    return nested(0) if is_open(list(range(len(y)))) else ("leaf",)


def _as_nested(tree, node=0):
    if tree["feature"][node] < 0:
        return ("leaf",)
    return (tree["feature"][node], tree["threshold"][node], _as_nested(tree, tree["left"][node]),
            _as_nested(tree, tree["right"][node]))


@pytest.mark.parametrize("task", ["regression", "gini"])
def test_deep_trees_match_a_plain_python_tree(native_backend, reference_backend, task):
    """max_depth=None (the default), min_samples_leaf=1: every tree grown to its leaves, on the
    reference and native backends, is the plain-Python tree, node for node."""
    if task == "regression":
        X, y = load_diabetes(return_X_y=True)
        X, y = X[:120], [round(v) for v in y[:120]]
        make = lambda b: RandomForestRegressor(n_estimators=1, bootstrap=False, max_features=None,
                                               random_state=0, backend=b)
    else:
        X, y = load_diabetes(return_X_y=True)
        X, y = X[:150], [int(v // 100) for v in y[:150]]  # three classes, hard to separate
        make = lambda b: RandomForestClassifier(n_estimators=1, bootstrap=False, max_features=None,
                                                random_state=0, backend=b)
    X32 = X.astype(np.float32).tolist()
    want = _plain_tree(X32, y, max(y) + 1 if task == "gini" else 0)
    for backend in (reference_backend, native_backend):
        forest = run(make(backend).fit(X.tolist(), y))
        tree = forest.to_dict()["trees"][0]
        assert _as_nested(tree) == want, backend.name
    depth = lambda t: 0 if t == ("leaf",) else 1 + max(depth(t[2]), depth(t[3]))
    assert depth(want) > 10  # deep: past the levels grown before the first readback


def _forest(kind, **kw):
    return (RandomForestRegressor if kind == "regression" else RandomForestClassifier)(**kw)


@pytest.mark.parametrize("kind, data, kw", [
    ("regression", "diabetes", dict(n_estimators=6, max_depth=9, max_features=0.6, oob_score=True)),
    ("classification", "wine", dict(n_estimators=8, criterion="gini", oob_score=True)),
    ("classification", "iris", dict(n_estimators=8, criterion="entropy", min_samples_leaf=2)),
    ("regression", "diabetes", dict(n_estimators=3, bootstrap=False, n_bins=16, min_samples_split=6)),
])
def test_same_seed_same_forest_on_reference_and_native(native_backend, reference_backend, kind, data, kw):
    X, y = {"diabetes": load_diabetes, "wine": load_wine, "iris": load_iris}[data](return_X_y=True)
    X, y = X.tolist(), y.tolist()
    fits = [run(_forest(kind, random_state=123, backend=b, **kw).fit(X, y))
            for b in (reference_backend, native_backend)]
    ref, nat = (f.to_dict() for f in fits)
    for t, (a, b) in enumerate(zip(ref["trees"], nat["trees"])):
        assert a["feature"] == b["feature"], f"tree {t}: split features differ"
        assert a["threshold"] == b["threshold"], f"tree {t}: thresholds differ"
        assert a["left"] == b["left"] and a["right"] == b["right"]
        va, vb = np.array(a["value"], dtype=float), np.array(b["value"], dtype=float)
        assert np.allclose(va, vb, rtol=1e-6, atol=1e-6 * np.abs(va).max()), f"tree {t}: values"
    # Summed in f32 on the device (entropy's logarithms may differ in the last bit).
    assert ref["feature_importances"] == pytest.approx(nat["feature_importances"], rel=1e-5)
    if kw.get("oob_score"):
        assert ref["oob_score"] == pytest.approx(nat["oob_score"], rel=1e-5)
    pa, pb = (run(f.predict(X[:50])) for f in fits)
    if kind == "regression":
        assert np.allclose(pa, pb, rtol=1e-5)
    else:
        assert pa == pb


@pytest.mark.parametrize("kind, data, kw", [
    ("regression", "diabetes", dict(n_estimators=4, max_depth=7, max_features=0.6, oob_score=True)),
    ("classification", "wine", dict(n_estimators=3, criterion="entropy", min_samples_leaf=2)),
    ("classification", "breast_cancer", dict(n_estimators=3, max_depth=6)),  # 16-bit bins
])
def test_workgroup_kernels_and_levels_in_passes_grow_the_same_forest(
        native_backend, reference_backend, monkeypatch, kind, data, kw):
    """The kernels GPUs run (a workgroup per slot and feature), and levels done in passes of
    slots (where one level's histograms exceed a buffer: 128 MiB adapters), give the trees of
    the default path, on the native and on the reference backend."""
    from py_core.forest import builder
    from py_core.forest import sizes as sizes_module
    X, y = {"diabetes": load_diabetes, "wine": load_wine, "breast_cancer": load_breast_cancer}[data](return_X_y=True)
    if data == "breast_cancer":  # its first 4 features: 265-287 distinct values of 300 (16-bit bins)
        X = X[:, :4]
    X, y = X[:300].tolist(), y[:300].tolist()

    sizes, plan_sizes = [], builder.plan_sizes
    monkeypatch.setattr(builder, "plan_sizes", lambda *a, **k: sizes.append(plan_sizes(*a, **k)) or sizes[-1])

    def trees(backend, parallel_bins=None):
        f = run(_forest(kind, random_state=7, backend=backend, **kw).fit(X, y, parallel_bins=parallel_bins))
        return f.to_dict()["trees"], run(f.predict(X[:40]))

    want, want_pred = trees(native_backend)
    assert trees(native_backend, parallel_bins=True) == (want, want_pred)
    limits = dict(native_backend.limits)
    try:
        native_backend.limits["maxStorageBufferBindingSize"] = 2**18
        assert trees(native_backend) == (want, want_pred)
        assert sizes[-1].S_h < sizes[-1].S and sizes[-1].Tb > 1  # levels in passes, trees in batches
        assert trees(native_backend, parallel_bins=True) == (want, want_pred)
    finally:
        native_backend.limits.update(limits)
    monkeypatch.setattr(sizes_module, "REFERENCE_BUDGET", 2**18)
    ref, _ = trees(reference_backend)
    assert sizes[-1].S_h < sizes[-1].S
    assert [t["feature"] for t in ref] == [t["feature"] for t in want]
    assert [t["threshold"] for t in ref] == [t["threshold"] for t in want]


@pytest.mark.parametrize("task", ["regression", "gini", "entropy"])
def test_the_gpus_kernels_on_wide_and_on_deep_levels_grow_the_same_forest(native_backend, rng, task,
                                                                        monkeypatch):
    """The kernels GPUs run, where their work changes shape with the level: split_scan_wg scans a
    feature with more than 64 non-empty bins in the node over the whole workgroup and one with
    fewer a bin a thread (scan_sparse); hist_clear_wg and split_vary_wg take a slot's words, or
    its features, in fewer, larger items where a pass has more than WG_TREE of them a tree (deep
    levels, the grids recorded for a batch's four trees, the last batch two). On 3,000 rows of 12
    continuous features (256 bins), trees grown to their leaves in batches of four have both kinds
    of level; either gives the trees of the looping kernels
    (split_scan and the others, a thread per item), node for node."""
    from py_core.forest import builder
    from py_core.kernels import forest as fk
    n, F = 3000, 12
    X = [[rng.gauss(0, 1) for _ in range(F)] for _ in range(n)]
    if task == "regression":
        y = [r[0] * 2 + r[1] * r[2] + rng.gauss(0, 0.3) for r in X]
        f = RandomForestRegressor
    else:
        y = [int(abs(r[0] * 2 + r[1] + rng.gauss(0, 0.5))) % 3 for r in X]  # few channels: wide passes
        f = partial(RandomForestClassifier, criterion=task)
    seed = rng.randrange(2**32)
    plan_sizes, plans = builder.plan_sizes, []

    def four_a_batch(*a, **k):
        z = plan_sizes(*a, **k)
        z.Tb = min(z.Tb, 4)
        plans.append(z)
        return z
    monkeypatch.setattr(builder, "plan_sizes", four_a_batch)

    def trees(wide):
        forest = run(f(n_estimators=6, max_features=0.6, random_state=seed, backend=native_backend)
                     .fit(X, y, parallel_bins=wide))
        return forest.to_dict()["trees"]

    want = trees(False)
    assert max(len(t["feature"]) for t in want) > 1000  # deep trees: both kinds of level
    z = plans[-1]
    assert fk.vary_features(z.S_h, F) > 1 and fk.clear_runs(z.S_h, z.NB * z.C) < -(-z.NB * z.C // fk.HC_WORDS)
    assert trees(True) == want


def test_export_round_trip_through_json(diabetes, native_backend):
    X, y = diabetes
    f = run(RandomForestRegressor(n_estimators=4, max_depth=6, random_state=3).fit(X, y))
    data = json.loads(json.dumps(f.to_dict()))
    assert data["format"] == "py_core.forest" and len(data["trees"]) == 4
    g = RandomForestRegressor.from_dict(data, backend=native_backend)
    assert g.n_estimators == 4 and g.feature_importances_ == f.feature_importances_
    assert np.allclose(run(g.predict(X[:30])), run(f.predict(X[:30])), rtol=1e-6)
    with pytest.raises(ValueError, match="RandomForestRegressor"):
        RandomForestClassifier.from_dict(data)
    data["trees"][0]["left"][0] = 10**6
    with pytest.raises(ValueError, match=r"trees\[0\]\.left\[0\]: must be an integer in 1\.\."):
        RandomForestRegressor.from_dict(data)


def test_export_round_trip_through_the_binary_format(diabetes, native_backend):
    X, y = diabetes
    names = ["a", "b", "c"]
    f = run(RandomForestClassifier(n_estimators=5, random_state=4).fit(X, [names[int(v) % 3] for v in y]))
    raw = f.to_bytes({"data": {"note": "kept"}})
    assert raw[:8] == b"PCFOREST" and len(raw) < len(json.dumps(f.to_dict()))
    g = RandomForestClassifier.from_bytes(raw, backend=native_backend)
    assert g.to_dict() == f.to_dict() and g.classes_ == names
    assert run(g.predict_proba(X[:30])) == run(f.predict_proba(X[:30]))
    for bad, match in ((raw[:-4], "length"), (b"JSON" + raw[4:], "signature")):
        with pytest.raises(ValueError, match=match):
            RandomForestClassifier.from_bytes(bad)


def test_classifier_attributes_and_string_labels():
    X, y = load_iris(return_X_y=True)
    names = ["setosa", "versicolor", "virginica"]
    labels = [names[v] for v in y]
    f = run(RandomForestClassifier(n_estimators=10, random_state=0, oob_score=True).fit(X.tolist(), labels))
    assert f.classes_ == names and f.n_classes_ == 3 and f.n_features_in_ == 4
    proba = run(f.predict_proba(X.tolist()))
    assert all(abs(sum(p) - 1) < 1e-5 for p in proba)
    assert run(f.score(X.tolist(), labels)) > 0.95
    assert 0.85 < f.oob_score_ <= 1.0
    imp = f.feature_importances_
    assert abs(sum(imp) - 1) < 1e-9 and max(range(4), key=imp.__getitem__) in (2, 3)  # petals
    assert RandomForestClassifier.from_dict(f.to_dict()).classes_ == names


def test_importances_and_oob_close_to_sklearn(diabetes, native_backend):
    from sklearn.ensemble import RandomForestRegressor as SkForest
    X, y = diabetes
    f = run(RandomForestRegressor(n_estimators=40, random_state=0, oob_score=True, max_depth=8,
                                  backend=native_backend).fit(X, y))
    sk = SkForest(n_estimators=40, random_state=0, oob_score=True, max_depth=8).fit(X, y)
    assert abs(f.oob_score_ - sk.oob_score_) < 0.05
    assert np.abs(np.array(f.feature_importances_) - sk.feature_importances_).max() < 0.05
    assert len(f.oob_prediction_) == len(y)


def test_prediction_in_chunks_where_the_adapter_binds_little(diabetes, native_backend):
    X, y = diabetes
    f = run(RandomForestClassifier(n_estimators=5, max_depth=5, random_state=1,
                                   backend=native_backend).fit(X, [v > 140 for v in y]))
    want = run(f.predict_proba(X))
    limits = dict(native_backend.limits)
    try:
        native_backend.limits["maxStorageBufferBindingSize"] = 1024  # 12 rows of f64 at a time
        assert run(f.predict_proba(X)) == want
    finally:
        native_backend.limits.update(limits)


def test_random_state_none_differs_and_int_repeats(diabetes):
    X, y = diabetes
    X, y = X[:100], y[:100]
    fits = [run(RandomForestRegressor(n_estimators=2, random_state=rs).fit(X, y)).to_dict()["trees"]
            for rs in (5, 5, None)]
    assert fits[0] == fits[1] and fits[0] != fits[2]


def test_bins_whose_records_do_not_fit_a_buffer_come_from_the_sorted_sample(native_backend, monkeypatch):
    """Where the `thresholds` kernel's records (a feature's bins, up to 3 n_bins + 1 words) would
    not fit a buffer but the sorted sample does, the sample comes back and the CPU picks the same
    bins: the same forest."""
    from py_core.forest import builder
    X = [[float(i % 3), float(i * 7 % 20), float(i % 2)] for i in range(40)]
    y = [float(i % 3 + i % 2 + (i * 7 % 20) // 4) for i in range(40)]
    fit = lambda: run(RandomForestRegressor(n_estimators=3, max_depth=4, random_state=1,
                                            backend=native_backend).fit(X, y)).to_dict()["trees"]
    want = fit()
    picked = []
    real = builder.edges_from_sorted
    monkeypatch.setattr(builder, "edges_from_sorted", lambda *a: picked.append(1) or real(*a))
    limits = dict(native_backend.limits)
    try:  # the sample: 3 x 64 + 1 words (772 bytes); the records: 3 x (1 + 3 x 40) + 1 (1,456)
        native_backend.limits["maxStorageBufferBindingSize"] = 1400
        assert fit() == want and picked
    finally:
        native_backend.limits.update(limits)
    picked.clear()
    assert fit() == want and not picked  # with room, the device picks them


def test_a_forest_too_big_for_the_adapter_is_refused_clearly(native_backend):
    f = RandomForestRegressor(n_estimators=2, backend=native_backend, max_depth=6)
    native_backend_limits = dict(native_backend.limits)
    try:
        native_backend.limits["maxStorageBufferBindingSize"] = 2**13  # less than one node's histogram
        with pytest.raises(LimitError, match=r"one node's histogram needs 18.8 KiB \(1200 bins x 4 "
                                             r"channels\) but at most 8.0 KiB fit in a buffer here: "
                                             r"lower n_bins or exact_bins"):  # 400 values a feature
            run(f.fit([[float(i), float(i * 7 % 400), float(i * 13 % 400)] for i in range(400)],
                      [float(i) for i in range(400)]))
    finally:
        native_backend.limits.update(native_backend_limits)


@pytest.mark.parametrize("max_depth", [None, 6])
def test_live_partial_forests_are_the_forests_of_the_first_trees(diabetes, native_backend, max_depth):
    """What on_trees gets after each batch (a chunk a batch for deep trees, the dense arrays for
    bounded ones) predicts and weighs the features as the forest of that many trees does."""
    X, y = diabetes
    flat = array("d", [v for row in X[:40] for v in row])
    got = []

    async def on_trees(partial):
        got.append((partial.trees, list(await partial.predict(flat, 40)), await partial.importances()))

    kw = dict(max_depth=max_depth, random_state=2, backend=native_backend)
    f = run(RandomForestRegressor(n_estimators=8, **kw).fit(X, y, on_trees=on_trees))
    assert [k for k, _, _ in got] == list(range(1, 8))  # a tree a batch: 8 redraws at most
    assert len(f._device[1].chunks) == (8 if max_depth is None else 1)
    for k, pred, imp in got[::3]:
        g = run(RandomForestRegressor(n_estimators=k, **kw).fit(X, y))
        assert pred == list(run(g.predict(X[:40]))) and imp == g.feature_importances_


@contextlib.contextmanager
def _limits(backend, budget=None, **limits):
    """The backend with some limits lowered (and a memory budget) for the block."""
    saved = dict(backend.limits)
    backend.limits.update(limits)
    backend.memory_budget = budget
    try:
        yield backend
    finally:
        backend.limits.update(saved)
        backend.memory_budget = None


@pytest.mark.parametrize("max_depth", [None, 12])
def test_a_forest_beyond_one_buffer_is_kept_in_chunks_and_is_the_same_forest(
        native_backend, reference_backend, rng, max_depth):
    """Where all trees' node records at their worst case exceed a buffer (the old plan refused
    that), a batch's node records are all that is kept while growing, and each batch's trees go
    into prediction arrays sized by their nodes: the same trees, predictions, importances and
    out-of-bag score as under the adapter's own limits, on the native and the reference backend;
    both the unbounded path (levels read back) and the bounded one (only the sizes read back)."""
    from py_core.forest.sizes import GrowSpec, node_capacity
    n, T, cap = 300, 6, 2**15
    X = [[rng.gauss(0, 1), float(rng.randrange(7))] for _ in range(n)]
    y = [r[0] * 3 + r[1] + rng.gauss(0, 0.3) for r in X]
    NC = node_capacity(n, GrowSpec(0, 1, T, max_depth, 2, 1, 2, True, 0, 256, True))
    assert 4 * T * NC * (4 + 4) > cap and 4 * T * NC * 3 > cap  # the old check's nodes, ptree
    seed = rng.randrange(2**32)

    def fit(backend):
        f = run(RandomForestRegressor(n_estimators=T, max_depth=max_depth, oob_score=True,
                                      max_features=1, random_state=seed, backend=backend).fit(X, y))
        return f, (f.to_dict(), list(run(f.predict(X[:60]))), f.oob_score_)

    forests = []
    for backend in (native_backend, reference_backend):
        _, want = fit(backend)
        with _limits(backend, maxBufferSize=cap):
            f, got = fit(backend)
            assert got == want, backend.name
            chunks = f._device[1].chunks
            assert len(chunks) > 1 and all(c.ptree.nbytes <= cap for c in chunks)
            # only the nodes the trees have, not T * NC
            assert sum(c.ptree.nbytes + c.pval.nbytes for c in chunks) == 16 * sum(f._forest.counts)
            assert run(f.predict(X[:60])) == array("d", want[1])  # from the chunks it grew in
        with _limits(backend, maxBufferSize=2**13):  # uploaded in chunks of a tree or two
            g = RandomForestRegressor.from_bytes(f.to_bytes(), backend=backend)
            assert len(g._forest.counts) == T and list(run(g.predict(X[:60]))) == want[1]
            assert len(g._device[1].chunks) > 2
        forests.append(want[0])
    assert [t["feature"] for t in forests[0]["trees"]] == [t["feature"] for t in forests[1]["trees"]]
    assert [t["threshold"] for t in forests[0]["trees"]] == [t["threshold"] for t in forests[1]["trees"]]


@pytest.mark.parametrize("max_depth", [6, None])
def test_batches_read_back_while_later_ones_grow_are_the_same_forest(
        native_backend, reference_backend, monkeypatch, diabetes, max_depth):
    """Where readbacks wait without blocking (the tab), each batch's trees are read back while
    later ones grow and held until the end (builder._issue): here forced on the native
    and reference backends, with batches of two trees, packs of a few nodes and READ_BEHIND_BYTES
    holding the first two batches only: the same forest, predictions and out-of-bag score as one
    readback at the end, the held batches those the budget allows, for trees of bounded depth
    (one set of prediction arrays) and unbounded (a set a batch). Stopped in the middle, the fit
    leaves no buffer behind."""
    from py_core.errors import Stopped
    from py_core.forest import builder
    X, y = diabetes
    T = 9
    plan_sizes = builder.plan_sizes

    def two_a_batch(*a, **k):
        z = plan_sizes(*a, **k)
        z.Tb = 2
        return z
    monkeypatch.setattr(builder, "plan_sizes", two_a_batch)
    monkeypatch.setattr(builder, "PACK_BYTES", 2**12)
    held, read_back = [], builder.Grower._read_back

    async def spy(self):
        held.append(sorted(self.held))
        return await read_back(self)
    monkeypatch.setattr(builder.Grower, "_read_back", spy)

    def fit(backend, **kw):
        f = run(RandomForestRegressor(n_estimators=T, max_depth=max_depth, oob_score=True,
                                      random_state=11, backend=backend).fit(X, y, **kw))
        return f, (f.to_dict(), list(run(f.predict(X[:50]))), f.oob_score_)

    for backend in (native_backend, reference_backend):
        f, want = fit(backend)
        assert held[-1] == []  # not where a readback blocks
        monkeypatch.setattr(builder, "READ_BEHIND", (backend.name,))
        monkeypatch.setattr(builder, "READ_BEHIND_BYTES", 4 * (3 + 1) * sum(f._forest.counts[:4]))
        assert fit(backend)[1] == want, backend.name
        assert held[-1] == [0, 2]  # the batches after them past the budget: read at the end
        monkeypatch.setattr(builder, "READ_BEHIND_BYTES", 2**30)
        assert fit(backend)[1] == want and held[-1] == [0, 2, 4, 6, 8]
        before = backend.memory()
        calls = []
        with pytest.raises(Stopped):
            fit(backend, should_stop=lambda: calls.append(1) or len(calls) >= 3)  # batch 2 or later
        assert {k: backend.memory()[k] for k in ("buffers", "bytes")} == \
            {k: before[k] for k in ("buffers", "bytes")}
        monkeypatch.setattr(builder, "READ_BEHIND", ())


def test_a_forest_that_cannot_fit_is_refused_clearly_and_leaves_nothing_behind(native_backend, rng):
    """One tree's node records beyond a buffer, a forest expected beyond the memory budget (both
    before any data goes up) and a forest that outgrows the budget while it grows: each ends in a
    LimitError naming the limit, with every buffer of the fit freed."""
    from py_core.forest.sizes import check_fits
    X = [[rng.gauss(0, 1), float(i % 7)] for i in range(3000)]
    y = [r[0] + rng.gauss(0, 0.1) for r in X]
    before = native_backend.memory()
    live = lambda: {k: native_backend.memory()[k] for k in ("buffers", "bytes")}  # noqa: E731
    with _limits(native_backend, maxBufferSize=2**16):
        with pytest.raises(LimitError, match=r"node records of one tree need 187.5 KiB, but this adapter's "
                           r"buffers hold at most 64.0 KiB \(maxStorageBufferBindingSize / maxBufferSize\): "
                           r"use a max_depth \(at most 10 here\) or a larger min_samples_leaf "
                           r"\(at least 3 here\)"):
            run(RandomForestRegressor(n_estimators=3, backend=native_backend).fit(X, y))
        assert live() == {k: before[k] for k in ("buffers", "bytes")}
        for fits in (dict(max_depth=10), dict(min_samples_leaf=3)):  # what the message says
            check_fits(native_backend, 3000, 2, RandomForestRegressor(**fits)._spec(3000, 2, 1))
    with _limits(native_backend, budget=before["bytes"] + 2**20):
        with pytest.raises(LimitError, match=r"forest of 50 trees of about 3793 nodes 2.9 MiB.*"
                                             r"memory_budget \([\d.]+ \w+\) leaves 1.0 MiB"):
            run(RandomForestRegressor(n_estimators=50, backend=native_backend).fit(X, y))
        assert live() == {k: before[k] for k in ("buffers", "bytes")}

    def shrink(p):  # the budget shrinks to what is in use once the second tree grows
        if p["trees"][0] >= 1 and native_backend.memory_budget is None:
            native_backend.memory_budget = native_backend.memory()["bytes"] + 1024

    with _limits(native_backend, maxStorageBufferBindingSize=2**20):  # a few trees a batch
        with pytest.raises(LimitError, match=r"forest outgrew the device memory after [1-7] of 8 trees: "
                                             r"trees? [2-8](-8)? ha(s|ve) \d+ nodes"):
            run(RandomForestRegressor(n_estimators=8, backend=native_backend).fit(X, y, progress=shrink))
        assert live() == {k: before[k] for k in ("buffers", "bytes")}


def test_a_wait_leaves_the_newest_submission_queued(reference_backend, monkeypatch, diabetes):
    """The host records the next group of levels while the GPU runs the one before (builder._wait,
    ahead): in a fit of bounded depth, waits (but the last batch's, for all its work) await the
    marker of a submission made before the newest, so the GPU's queue is not empty while the host
    records. A wait for all is one finish, no marker awaited; deep fits wait so. The forest is the
    one every backend grows (test_same_seed_same_forest_on_reference_and_native)."""
    from py_core.forest import builder
    X, y = diabetes
    b = reference_backend
    runs, markers, batches = [0], [], []
    plan_sizes, run_, grow_batch = builder.plan_sizes, b.run, builder.Grower._grow_batch

    def two_a_batch(*a, **k):
        z = plan_sizes(*a, **k)
        z.Tb = 2
        return z

    async def counted_run(*a, **kw):
        runs[0] += 1
        return await run_(*a, **kw)

    class Marker:  # what finish_soon gives: records how many submissions there were when awaited
        def __init__(self):
            self.made, self.awaited = runs[0], None

        def __await__(self):
            if self.awaited is None:
                self.awaited = runs[0]
            return (yield from asyncio.sleep(0).__await__())

    def finish_soon():
        markers.append(Marker())
        return markers[-1]

    async def spy_batch(self, done, nt, *a):
        batches.append((done, len(markers)))
        return await grow_batch(self, done, nt, *a)
    monkeypatch.setattr(builder, "plan_sizes", two_a_batch)
    monkeypatch.setattr(builder.Grower, "_grow_batch", spy_batch)
    monkeypatch.setattr(b, "run", counted_run)
    monkeypatch.setattr(b, "finish_soon", finish_soon)
    f = run(RandomForestRegressor(n_estimators=7, max_depth=6, random_state=3, backend=b).fit(X, y))
    assert [d for d, _ in batches] == [0, 2, 4, 6] and len(f._forest.counts) == 7
    last = batches[-1][1]  # markers of the last batch from here on
    ahead = [m for m in markers if m.awaited is not None]
    assert len(ahead) >= len(batches) - 1  # a wait ahead in every batch but the last, at least
    assert all(m.awaited > m.made for m in ahead)  # a later submission was queued
    assert all(m.awaited is None for m in markers[last:])  # the last batch: waits for all
    # Grown to their leaves (deep: the later levels wait for each level anyway), every wait is
    # for all the work submitted, as ahead they measured slower on the H200
    markers.clear()
    run(RandomForestRegressor(n_estimators=5, random_state=3, backend=b).fit(X, y))
    assert markers and all(m.awaited is None for m in markers)


def test_progress_and_stop(diabetes):
    from py_core.errors import Stopped
    X, y = diabetes
    seen = []
    run(RandomForestRegressor(n_estimators=3, max_depth=3).fit(X, y, progress=seen.append))
    assert seen[-1]["fraction"] == 1.0 and "level 3/3" in seen[-1]["stage"]
    levels = [p["level"][0] for p in seen]
    assert levels == sorted(set(levels)) and all(p["eta_s"] >= 0 for p in seen)
    with pytest.raises(Stopped, match="stopped at level 1 of trees 1-3, with 0 of 3 trees finished: "
                                      "the forest is discarded"):
        run(RandomForestRegressor(n_estimators=3).fit(X, y, should_stop=lambda: True))
    # Stop is seen between groups of levels: none is submitted after it
    calls, seen = [], []
    with pytest.raises(Stopped, match=r"stopped at level (\d+)") as info:
        run(RandomForestRegressor(n_estimators=3).fit(X, y, progress=seen.append,
                                                      should_stop=lambda: calls.append(1) or len(calls) > 2))
    import re
    stopped_at = int(re.search(r"level (\d+)", str(info.value)).group(1))
    assert len(seen) == 2 and stopped_at > seen[-1]["level"][0]


def test_batches_hold_several_trees_where_histograms_fill_the_budget():
    """Where a level's histograms go in passes anyway, a tree's passes hold a MIN_TB-th of the
    histogram budget, so a batch holds MIN_TB trees (10 classes on 50 features: 238 slots a pass,
    eight trees); a fit of fewer trees gets passes as large as its batch allows; a memory budget
    that holds fewer trees keeps the passes that let the most trees share a batch. Where whole
    levels hold WHOLE_TB trees (1M x 20 at depth 12: six), they stay whole."""
    from py_core.forest import sizes
    from py_core.forest.sizes import GrowSpec, plan_sizes

    class H200:
        name, memory_budget = "webgpu", 140 * 2**30
        limits = {"maxStorageBufferBindingSize": 2**31 - 4, "maxBufferSize": 2**32 - 4}

    def plan(trees, room=None):
        spec = GrowSpec(crit=1, n_classes=10, n_estimators=trees, max_depth=14, min_samples_split=2,
                        min_samples_leaf=1, max_features=7, bootstrap=True, seed=0, n_bins=256, oob=False)
        return plan_sizes(H200(), 400_000, 50, 12_800, spec, room)

    per_slot = 4 * 12_800 * 11
    whole = sizes.HIST_BUDGET // per_slot // 2 * 2  # the slots one tree's passes could hold
    z = plan(100)
    assert (z.S_h, z.Tb) == (whole // sizes.MIN_TB // 2 * 2, sizes.MIN_TB)
    assert z.Tb * z.S_h * per_slot <= sizes.HIST_BUDGET
    assert (plan(1).S_h, plan(1).Tb) == (whole, 1)
    assert (plan(2).S_h, plan(2).Tb) == (whole // 2 // 2 * 2, 2)
    # memory for two trees' working sets of the four-tree plan: two trees a batch (larger passes
    # would hold one)
    words = sum(w * c for w, c in sizes.batch_buffers(400_000, 50, 12_800, 11, z.S, z.S_h, z.NC).values())
    fixed = 4 * 100 * (3 + z.G * 50) + sizes.forest_bytes(100, z.tree_nodes, 10)
    two = plan(100, room=fixed + 4 * words * 2 + 2**20)
    assert (two.S_h, two.Tb) == (z.S_h, 2)
    spec = GrowSpec(crit=0, n_classes=1, n_estimators=100, max_depth=12, min_samples_split=2,
                    min_samples_leaf=1, max_features=7, bootstrap=True, seed=0, n_bins=256, oob=False)
    wide = plan_sizes(H200(), 800_000, 20, 5_120, spec)
    assert wide.S_h == wide.S == 2048 and wide.Tb == 6
