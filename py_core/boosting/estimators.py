"""HistGradientBoostingRegressor and HistGradientBoostingClassifier, with scikit-learn's contract.

    model = HistGradientBoostingRegressor(max_iter=200, random_state=0, backend="native")
    await model.fit(X, y)                  # X: list of rows, or flat array('f'/'d') + n_features=
    pred = await model.predict(X_test)     # array('d'); a classifier gives a list of labels
    model.n_iter_, model.train_score_, model.validation_score_, model.feature_importances_

`__init__` only stores its arguments (scikit-learn's names and defaults: params.py); `fit`
validates them and the data and returns self. NaN in X is a missing value, handled by the trees
(each split sends them to the side that gains most; where a feature had none in training, to the
side most rows went). The same data, parameters and random_state give the same trees on every
backend (py_core/kernels/boosting says where the log loss may differ in the last bit).

As scikit-learn: leaf-wise growth up to max_leaf_nodes, L2-regularised gains and leaf values,
min_hessian_to_split 1e-3, max_features drawn at each split, early stopping on a stratified
validation split ("auto": above 10,000 rows) by the loss, with n_iter_no_change and tol, and
the baseline raw score (the mean, the median, the log-odds, the log priors). Absolute error's
leaves take the median of their rows' residuals, times the learning rate. Differences:
`train_score_` and `validation_score_` (minus the loss, baseline first, as scikit-learn records
them with early stopping) are kept whether or not early stopping is on (the job's loss curve);
categorical features (fit's `categorical`, with categorical_features "from_dtype") split by
category sets as scikit-learn's (sorted by gradient / hessian ratio, MIN_CAT_SUPPORT), where their
values are codes 0..255 of at most max_bins categories, else by their codes' order
(`categorical_` says which); max_leaf_nodes=None grows at most MAX_LEAVES leaves a tree.
"""
from __future__ import annotations

import math
import os
import time
from array import array

from ..estimator import Estimator
from ..forest.estimators import as_matrix, r2_score
from ..kernels.boosting import LOSS_CODES, MAXK
from . import model
from .grower import Grower, Spec
from .params import EARLY_STOPPING_AUTO_ROWS, F32_MAX, most_leaves
from .params import PARAMS as TABLE

FORMAT, VERSION = "py_core.boosting", 1
MAX_LEAVES = 1024  # max_leaf_nodes=None: a tree's grid of steps (and histograms) is this bound


class _Boosting(Estimator):
    _losses: tuple = ()

    def __init__(self, loss=None, *, learning_rate=0.1, max_iter=100, max_leaf_nodes=31,
                 max_depth=None, min_samples_leaf=20, l2_regularization=0.0, max_features=1.0,
                 max_bins=255, categorical_features="from_dtype", early_stopping="auto",
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-7, random_state=None,
                 backend="reference"):
        self.loss = loss
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.max_features = max_features
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state
        self.backend = backend

    PARAMS = (*TABLE.names(), "backend")

    # -- fitting ---------------------------------------------------------------------------------
    async def fit(self, X, y, *, n_features: int | None = None, categorical=None, progress=None,
                  should_stop=None, on_losses=None, parallel_bins: bool | None = None):
        """Boost. progress(dict) hears of each group of iterations, should_stop() -> True ends the
        fit (raising py_core.errors.Stopped), `await on_losses(train, validation)` gets the
        losses so far (lists; validation None without a validation set). categorical: a bool
        a feature (the job's categorical columns: their values category codes), split by
        category sets unless categorical_features is None. parallel_bins: True/False forces the
        GPUs' histogram kernel or the CPUs' (a benchmark switch; None: by adapter)."""
        t0 = time.perf_counter()
        TABLE.check({name: getattr(self, name) for name in TABLE.names()})  # ValueError naming it
        flat, n, F = as_matrix(X, n_features)  # infinite values: refused once binned (bin_rows)
        y = list(y)
        if len(y) != n:
            raise ValueError(f"y has {len(y)} values for {n} rows of X")
        if categorical is not None and len(categorical) != F:
            raise ValueError(f"categorical has {len(categorical)} values for {F} features")
        loss = self.loss if self.loss is not None else self._losses[0]
        if loss not in self._losses:
            raise ValueError(f"loss must be one of {self._losses} for {type(self).__name__}, got {loss!r}")
        target, K = self._encode(y)
        rs = self.random_state
        seed = int.from_bytes(os.urandom(4), "little") if rs is None else rs
        early = n > EARLY_STOPPING_AUTO_ROWS if self.early_stopping == "auto" else self.early_stopping
        train, val = self._split(n, target, early, seed)
        nt, nv = len(train), len(val)
        Xt = _rows(flat, F, train)
        yt = array("f", target if nv == 0 else (target[i] for i in train))
        Xv = _rows(flat, F, val) if nv else None
        yv = array("f", (target[i] for i in val)) if nv else None
        asked = list(categorical or [False] * F) if self.categorical_features is not None else [False] * F
        self._baseline = self._baseline_of([target[i] for i in train], K, loss)
        # The grid's leaves: no tree has more than nt // min_samples_leaf (each leaf keeps that
        # many rows) nor 2^max_depth, so fewer steps grow the same trees (diabetes: 17, not 31)
        leaves = most_leaves(nt, self.max_leaf_nodes or MAX_LEAVES, self.min_samples_leaf,
                             self.max_depth)
        spec = Spec(LOSS_CODES[loss], K, self.max_iter, leaves, self.max_depth,
                    self.min_samples_leaf, max(1, math.ceil(self.max_features * F)),
                    float(self.learning_rate), float(self.l2_regularization), seed,
                    bool(early), self.n_iter_no_change, self.tol, self.max_leaf_nodes is not None)
        t_prepare = time.perf_counter() - t0
        fitted = await Grower(self._backend(), spec, parallel_bins).grow(
            Xt, nt, F, yt, Xv, nv, yv, self.max_bins, self._baseline, asked, progress, should_stop,
            on_losses)
        self.n_features_in_ = F
        self.n_trees_per_iteration_ = K
        self.n_iter_ = fitted.n_iter
        self.do_early_stopping_ = bool(early)
        self.loss_ = loss
        self.categorical_ = fitted.categorical  # asked, and their bins category codes
        self._trees, gains = model.tree_dicts(fitted.sizes, fitted.trees, fitted.NN, F, fitted.values)
        total = sum(gains)
        self.feature_importances_ = [g / total for g in gains] if total > 0 else [0.0] * F
        self.train_score_ = [-v for v in fitted.train_loss]
        self.validation_score_ = [-v for v in fitted.validation_loss] if fitted.validation_loss else []
        self.early_stopped_ = fitted.early_stopped
        self.timings_ = dict(fitted.timings, prepare=t_prepare, fit=time.perf_counter() - t0)
        return self

    def _split(self, n: int, target, early: bool, seed: int) -> tuple[list, list]:
        """(training rows, validation rows): a validation_fraction of the rows held out when
        early stopping uses them (stratified by class for classifiers), as scikit-learn does."""
        if not early or self.validation_fraction is None:
            return list(range(n)), []
        from ..data.split import train_test_split
        strat = list(target) if isinstance(self, HistGradientBoostingClassifier) else None
        try:
            train, val = train_test_split(n, self.validation_fraction, seed, stratify=strat)
        except ValueError as exc:
            raise ValueError(f"validation split: {exc}") from exc
        return list(train), list(val)

    # -- prediction ------------------------------------------------------------------------------
    def _check_fitted(self):
        if getattr(self, "_trees", None) is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet: await fit() first")

    async def _raw(self, X, n_features=None, staged=False) -> tuple[array, int]:
        self._check_fitted()
        flat, n, F = as_matrix(X, n_features if n_features is not None else self.n_features_in_)
        if F != self.n_features_in_:
            raise ValueError(f"X has {F} features, the model {self.n_features_in_}")
        out = await model.raw_scores(self._backend(), self._trees, self._baseline, flat, n, F,
                                     self.n_iter_, staged)
        return out, n

    async def decision_function(self, X, *, n_features: int | None = None) -> array:
        """The raw scores, (n, K) row-major (K = n_trees_per_iteration_)."""
        return array("d", (await self._raw(X, n_features))[0])

    async def staged_raw(self, X, *, n_features: int | None = None) -> list[array]:
        """The raw scores after each iteration: n_iter_ arrays of (n, K)."""
        out, n = await self._raw(X, n_features, staged=True)
        K, its = self.n_trees_per_iteration_, self.n_iter_
        return [array("d", (out[(r * its + i) * K + k] for r in range(n) for k in range(K)))
                for i in range(its)]

    # -- export ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The fitted model as JSON-ready data (the format: py_core.boosting's docstring)."""
        self._check_fitted()
        out = {"format": FORMAT, "version": VERSION, "estimator": type(self).__name__,
               "params": {k: v for k, v in self.get_params().items() if k != "backend"},
               "loss": self.loss_, "n_features": self.n_features_in_}
        if isinstance(self, HistGradientBoostingClassifier):
            out["classes"] = list(self.classes_)
        out.update(n_trees_per_iteration=self.n_trees_per_iteration_, n_iter=self.n_iter_,
                   baseline=list(self._baseline), categorical=list(self.categorical_),
                   feature_importances=list(self.feature_importances_), trees=self._trees)
        return out

    @classmethod
    def from_dict(cls, data: dict, backend="reference"):
        """A model from `to_dict()`'s output, ready to predict on `backend`."""
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError(f"not a {FORMAT} model of version {VERSION}")
        if data.get("estimator") != cls.__name__:
            raise ValueError(f"the model is a {data.get('estimator')}, not a {cls.__name__}")
        self = cls(**data["params"], backend=backend)
        K, its = data["n_trees_per_iteration"], data["n_iter"]
        if len(data["trees"]) != K * its or len(data["baseline"]) != K:
            raise ValueError(f"{len(data['trees'])} trees for {its} iterations of {K}")
        self.n_features_in_, self.n_trees_per_iteration_, self.n_iter_ = data["n_features"], K, its
        self.loss_, self._baseline = data["loss"], [float(v) for v in data["baseline"]]
        self.categorical_ = list(data["categorical"])
        self.feature_importances_ = list(data["feature_importances"])
        self._trees = data["trees"]
        if "classes" in data:
            self.classes_ = list(data["classes"])
            self.n_classes_ = len(self.classes_)
        return self


def _rows(flat: array, F: int, rows: list) -> array:
    """The rows' values, row-major (a copy of flat's rows, in order)."""
    if len(rows) * F == len(flat):
        return flat
    out = array(flat.typecode)
    for r in rows:
        out.extend(flat[r * F:(r + 1) * F])
    return out


def _median(values: list) -> float:
    """NumPy's median: the middle value, or the mean of the two middle ones."""
    s = sorted(values)
    m = len(s)
    return s[m // 2] if m % 2 else (s[m // 2 - 1] + s[m // 2]) / 2


class HistGradientBoostingRegressor(_Boosting):
    """Gradient-boosted regression trees (squared or absolute error)."""

    _losses = ("squared_error", "absolute_error")

    def _encode(self, y):
        values = [float(v) for v in y]
        if any(not math.isfinite(v) for v in values):
            raise ValueError("y has NaN or infinite values")
        # The kernels hold y as f32: past its largest, an infinity, whose gradients made NaN
        # trees on GPUs and stopped the reference backend ("cannot convert float NaN to integer")
        if any(abs(v) > F32_MAX for v in values):
            raise ValueError(f"y has values past {F32_MAX:.4g} in magnitude, the largest an f32 "
                             "holds: scale the target down")
        return values, 1

    @staticmethod
    def _baseline_of(y, K, loss):
        return [_median(y) if loss == "absolute_error" else math.fsum(y) / len(y)]

    async def predict(self, X, *, n_features: int | None = None) -> array:
        return await self.decision_function(X, n_features=n_features)

    async def staged_predict(self, X, *, n_features: int | None = None) -> list[array]:
        """The predictions after each iteration (n_iter_ arrays)."""
        return await self.staged_raw(X, n_features=n_features)

    async def score(self, X, y, *, n_features: int | None = None) -> float:
        """R^2 of the predictions."""
        return r2_score(list(y), await self.predict(X, n_features=n_features))


class HistGradientBoostingClassifier(_Boosting):
    """Gradient-boosted classification trees (log loss): one tree an iteration for two classes,
    one a class for more, grown together."""

    _losses = ("log_loss",)

    def _encode(self, y):
        classes = sorted(set(y))
        if len(classes) < 2:
            raise ValueError(f"y has {len(classes)} class: a classifier needs at least two")
        if len(classes) > MAXK:
            raise ValueError(f"{len(classes)} classes: gradient boosting handles at most {MAXK}")
        index = {c: i for i, c in enumerate(classes)}
        self.classes_ = classes
        self.n_classes_ = len(classes)
        return [index[v] for v in y], 1 if len(classes) == 2 else len(classes)

    @staticmethod
    def _baseline_of(y, K, loss):
        n = len(y)
        if K == 1:  # log-odds of class 1, clipped as scikit-learn's HalfBinomialLoss
            eps = 10 * 2.220446049250313e-16
            p = min(max(sum(y) / n, eps), 1 - eps)
            return [math.log(p / (1 - p))]
        eps = 2.220446049250313e-16
        counts = [0] * K
        for v in y:
            counts[v] += 1
        logs = [math.log(min(max(c / n, eps), 1 - eps)) for c in counts]
        mean = sum(logs) / K  # the symmetric multinomial logit
        return [v - mean for v in logs]

    async def predict_proba(self, X, *, n_features: int | None = None) -> list[list[float]]:
        raw, _ = await self._raw(X, n_features)
        return model.probabilities(raw, self.n_trees_per_iteration_)

    async def predict(self, X, *, n_features: int | None = None) -> list:
        return [self.classes_[_argmax(r)] for r in await self.predict_proba(X, n_features=n_features)]

    async def staged_predict(self, X, *, n_features: int | None = None) -> list[list]:
        """The predicted labels after each iteration (n_iter_ lists)."""
        K = self.n_trees_per_iteration_
        return [[self.classes_[_argmax(r)] for r in model.probabilities(raw, K)]
                for raw in await self.staged_raw(X, n_features=n_features)]

    async def score(self, X, y, *, n_features: int | None = None) -> float:
        """Accuracy."""
        pred = await self.predict(X, n_features=n_features)
        y = list(y)
        return sum(p == t for p, t in zip(pred, y)) / len(y)


def _argmax(row) -> int:
    return max(range(len(row)), key=row.__getitem__)
