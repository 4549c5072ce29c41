"""RandomForestRegressor and RandomForestClassifier, with scikit-learn's contract.

    forest = RandomForestRegressor(n_estimators=200, max_depth=16, random_state=0, backend="native")
    await forest.fit(X, y)                 # X: list of rows, or flat array('f'/'d') + n_features=
    pred = await forest.predict(X_test)    # array('d'); a classifier gives a list of labels
    forest.feature_importances_, forest.oob_score_, forest.to_dict()

`__init__` only stores its arguments; `fit` validates them and the data and returns self;
learned attributes end in `_`. Fitting and prediction run on `backend` (a Backend or its name);
the same data, parameters and random_state give the same trees on every backend.

Beyond scikit-learn's parameters: `n_bins` (256, at most 256), the quantile bins of a feature with
many distinct values, and `exact_bins` (1024, at most 65,536): a feature of at most
max(n_bins, exact_bins) distinct values gets a bin per value, so its candidate splits are
scikit-learn's (py_core/forest/binning.py); exact_bins=0 keeps every feature within n_bins bins.
"""
from __future__ import annotations

import math
import os
import time
from array import array

from ..estimator import Estimator
from ..kernels.forest import CRITERIA, MAXK
from . import builder, export, trees
from .params import PARAMS as TABLE
from .params import features_per_split
from .sizes import GrowSpec


def as_matrix(X, n_features: int | None = None) -> tuple[array, int, int]:
    """(row-major array('f') or array('d'), rows, features) from a list of rows, a flat
    array('f'/'d') with n_features (used as it is: no copy), or anything 2-D with .shape and
    .ravel() (a NumPy array). The values are rounded to f32 and checked for NaN and infinities
    on the device (`check_finite`)."""
    if isinstance(X, array):
        if not n_features or n_features < 1:
            raise ValueError("a flat array needs n_features=")
        if len(X) % n_features:
            raise ValueError(f"a flat array of {len(X)} values is not rows of {n_features} features")
        flat = X if X.typecode in "fd" else array("d", X)
        n, F = len(X) // n_features, n_features
    elif hasattr(X, "shape") and hasattr(X, "ravel"):
        if len(X.shape) != 2:
            raise ValueError(f"X must be 2-D, got shape {tuple(X.shape)}")
        n, F = int(X.shape[0]), int(X.shape[1])
        flat = array("d", X.ravel().tolist())
    else:
        rows = list(X)
        n = len(rows)
        F = len(rows[0]) if n else 0
        flat = array("d")
        for i, row in enumerate(rows):
            if len(row) != F:
                raise ValueError(f"row {i} has {len(row)} values, row 0 has {F}")
            flat.extend(float(v) for v in row)
    if n < 1 or F < 1:
        raise ValueError(f"X has {n} rows and {F} features; need at least one of each")
    if n_features is not None and F != n_features:
        raise ValueError(f"X has {F} features, expected {n_features}")
    return flat, n, F


class _Forest(Estimator):
    _default_criterion = "squared_error"
    _default_max_features = 1.0

    def __init__(self, n_estimators=100, *, criterion=None, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_features="default", bootstrap=True, oob_score=False,
                 random_state=None, n_bins=256, exact_bins=1024, backend="reference"):
        self.n_estimators = n_estimators
        self.criterion = criterion if criterion is not None else self._default_criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_features = self._default_max_features if max_features == "default" else max_features
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.random_state = random_state
        self.n_bins = n_bins
        self.exact_bins = exact_bins
        self.backend = backend

    # The table's (py_core/forest/params.py); `__init__` spells them out as scikit-learn's
    # estimators do, and tests/test_kinds.py checks that its signature is the table.
    PARAMS = (*TABLE.names(), "backend")

    # -- fitting ---------------------------------------------------------------------------------
    def _spec(self, n: int, F: int, n_classes: int) -> GrowSpec:
        TABLE.check({name: getattr(self, name) for name in TABLE.names()})  # ValueError naming it
        if self.criterion not in self._criteria:
            raise ValueError(f"criterion must be one of {self._criteria}, got {self.criterion!r}")
        mss, msl = self.min_samples_split, self.min_samples_leaf
        if isinstance(mss, float):  # a fraction of the rows, as scikit-learn counts it
            mss = max(2, math.ceil(mss * n))
        if isinstance(msl, float):
            msl = max(1, math.ceil(msl * n))
        mf = self.max_features
        if mf == "default":
            mf = self._default_max_features
        k = features_per_split(mf, F)
        if k > F:
            raise ValueError(f"max_features={mf} is more than the {F} features")
        if self.oob_score and not self.bootstrap:
            raise ValueError("oob_score=True needs bootstrap=True")
        rs = self.random_state
        seed = int.from_bytes(os.urandom(4), "little") if rs is None else rs
        return GrowSpec(CRITERIA[self.criterion], n_classes, self.n_estimators,
                                self.max_depth, mss, msl, k, bool(self.bootstrap), seed,
                                self.n_bins, bool(self.oob_score), self.exact_bins)

    async def fit(self, X, y, *, n_features: int | None = None, progress=None, should_stop=None,
                  pause=None, profile: bool = False, parallel_bins: bool | None = None,
                  on_trees=None):
        """Grow the forest. Between levels: progress(dict) hears of it, should_stop() -> True ends
        the fit (raising py_core.errors.Stopped), and `await pause()` may wait (or raise Stopped).
        Live plots: `await on_trees(partial)` about builder.LIVE_BATCHES times as the batches of
        trees finish (the forest then grows in several); `partial` (builder.Partial) predicts with the trees so far
        (`await partial.predict(X, n)`: (n, n_outputs_) means, classes in `classes_` order) and
        gives their importances (`await partial.importances()`).
        `timings_` holds the phases in seconds; with profile=True also each kernel's ("k_NAME").
        parallel_bins: True/False forces one kernel set or the other (a benchmark switch; None:
        `builder.parallel_bins` picks by adapter)."""
        t0 = time.perf_counter()
        flat, n, F = as_matrix(X, n_features)
        if not isinstance(y, array):
            y = list(y)
        if len(y) != n:
            raise ValueError(f"y has {len(y)} values for {n} rows of X")
        target, K = self._encode(y)
        spec = self._spec(n, F, K)
        backend = self._backend()
        self.release()  # a refit frees the previous fit's device arrays first
        t_prepare = time.perf_counter() - t0
        # The device arrays' owner: a child of the caller's current scope (a job's: freed with
        # it), else a scope of its own, freed by `release` or the next fit.
        scope = backend.scope(f"{type(self).__name__} model")
        try:
            with scope.use():  # the prediction arrays the fit hands back join it
                grown = await builder.Grower(backend, spec, parallel_bins).grow(
                    flat, n, F, target, progress, should_stop, pause, profile, on_trees)
        except BaseException:
            scope.close()
            raise
        self._scope = scope
        await backend.finish()
        self.n_features_in_ = F
        self.n_outputs_ = K
        self._forest, self._tree_dicts = grown.trees, None
        self._device = (backend, grown.device)
        self.feature_importances_ = grown.importances
        if grown.oob is not None:
            self._set_oob(grown.oob, y, n, K)
        self.timings_ = dict(grown.timings, prepare=t_prepare, fit=time.perf_counter() - t0)
        return self

    @property
    def _trees(self) -> list[dict]:
        """The trees in the export format (made from the flat arrays on first use)."""
        if getattr(self, "_tree_dicts", None) is None:
            self._tree_dicts = self._forest.dicts()
        return self._tree_dicts

    def release(self) -> None:
        """Free the device copy of the trees (GPU memory in the browser); prediction uploads
        them again when needed. Fitting again releases the previous fit's first."""
        scope = getattr(self, "_scope", None)
        if scope is not None:
            scope.close()
        self._scope = self._device = None

    def device_bytes(self) -> int:
        """Bytes this forest keeps on its backend for prediction (0 after `release`)."""
        scope = getattr(self, "_scope", None)
        return 0 if scope is None else scope.nbytes

    async def _predict_raw(self, X, n_features=None) -> tuple[array, int]:
        if getattr(self, "_forest", None) is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet: await fit() first")
        flat, n, F = as_matrix(X, n_features if n_features is not None else self.n_features_in_)
        backend = self._backend()
        device = getattr(self, "_device", None)
        if device is None or device[0] is not backend or not device[1].alive:
            self.release()
            self._scope = backend.scope(f"{type(self).__name__} model")
            with self._scope.use():
                self._device = (backend, trees.upload(backend, self._forest))
        return await trees.predict(backend, self._device[1], flat, n, F), n

    # -- export ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The fitted forest as JSON-ready data (format: `py_core.forest.export`)."""
        if getattr(self, "_forest", None) is None:
            raise RuntimeError("nothing to export: the forest is not fitted")
        return export.to_dict(self)

    @classmethod
    def from_dict(cls, data: dict, backend="reference"):
        """A forest from `to_dict()`'s output, ready to predict on `backend`."""
        return export.from_dict(cls, data, backend)

    def to_bytes(self, extra: dict | None = None) -> bytes:
        """The fitted forest in the compact binary format (`py_core.forest.export`)."""
        if getattr(self, "_forest", None) is None:
            raise RuntimeError("nothing to export: the forest is not fitted")
        return export.to_bytes(self, extra)

    @classmethod
    def from_bytes(cls, data, backend="reference"):
        """A forest from `to_bytes()`'s output, ready to predict on `backend`."""
        return export.from_bytes(cls, data, backend)


class RandomForestRegressor(_Forest):
    """A forest of regression trees (squared error); predictions are the trees' mean."""

    _criteria = ("squared_error",)

    def _encode(self, y):
        """y as array('d'): its finiteness is checked by the fixed-point kernel."""
        return (y if isinstance(y, array) and y.typecode == "d" else array("d", map(float, y))), 1

    def _set_oob(self, oob, y, n, K):
        pred = [oob[2 * i] / oob[2 * i + 1] if oob[2 * i + 1] else math.nan for i in range(n)]
        self.oob_prediction_ = array("d", pred)
        pairs = [(t, p) for t, p in zip(y, pred) if p == p]
        self.oob_score_ = r2_score([t for t, _ in pairs], [p for _, p in pairs]) if pairs else math.nan

    async def predict(self, X, *, n_features: int | None = None) -> array:
        out, _ = await self._predict_raw(X, n_features)
        return out

    async def score(self, X, y, *, n_features: int | None = None) -> float:
        """R^2 of the predictions."""
        return r2_score(list(y), await self.predict(X, n_features=n_features))


class RandomForestClassifier(_Forest):
    """A forest of classification trees (gini or entropy); class probabilities are the trees'
    mean of their leaves' class fractions."""

    _default_criterion = "gini"
    _default_max_features = "sqrt"
    _criteria = ("gini", "entropy")

    def _encode(self, y):
        classes = sorted(set(y))
        if len(classes) > MAXK:
            raise ValueError(f"{len(classes)} classes: the forest handles at most {MAXK}")
        index = {c: i for i, c in enumerate(classes)}
        self.classes_ = classes
        self.n_classes_ = len(classes)
        return array("I", [index[v] for v in y]), len(classes)

    def _set_oob(self, oob, y, n, K):
        rows = []
        for i in range(n):
            cnt = oob[i * (K + 1) + K]
            rows.append([oob[i * (K + 1) + k] / cnt for k in range(K)] if cnt else None)
        self.oob_decision_function_ = rows
        hits = [self.classes_[_argmax(r)] == t for r, t in zip(rows, y) if r is not None]
        self.oob_score_ = sum(hits) / len(hits) if hits else math.nan

    async def predict_proba(self, X, *, n_features: int | None = None) -> list[list[float]]:
        out, n = await self._predict_raw(X, n_features)
        K = self.n_outputs_
        return [out[i * K:(i + 1) * K].tolist() for i in range(n)]

    async def predict(self, X, *, n_features: int | None = None) -> list:
        return [self.classes_[_argmax(row)] for row in await self.predict_proba(X, n_features=n_features)]

    async def score(self, X, y, *, n_features: int | None = None) -> float:
        """Accuracy."""
        pred = await self.predict(X, n_features=n_features)
        y = list(y)
        return sum(p == t for p, t in zip(pred, y)) / len(y)


def _argmax(row) -> int:
    return max(range(len(row)), key=row.__getitem__)  # first of equals, as numpy


def r2_score(y_true, y_pred) -> float:
    n = len(y_true)
    mean = sum(y_true) / n
    ss_tot = sum((t - mean) ** 2 for t in y_true)
    ss_res = sum((t - p) ** 2 for t, p in zip(y_true, y_pred))
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1 - ss_res / ss_tot
