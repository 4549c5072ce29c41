"""From a Table to the models' inputs: a row-major feature matrix, encoded targets, imputation.

    X, y, info = features_and_target(table, "target")
    train, test = train_test_split(info["n_rows"], stratify=y if info["classes"] else None)
    imputer = MedianImputer().fit(X, info["n_features"], rows=train)
    X_train = imputer.transform(take_rows(X, info["n_features"], train), info["n_features"])

or all of it at once with `prepare(table, "target")`, which the page and the server both call so
that their splits and matrices are the same.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import compress

from .reader import DataError
from .split import train_test_split
from .table import CODED, DATE_PARTS, DATES, MISSING_CATEGORY, Table

TASKS = ("regression", "classification")
MAX_CLASSES = 1000  # a classification target with more distinct values is refused


def features_and_target(table: Table, target: str, features: list[str] | None = None,
                        task: str | None = None) -> tuple[array, array, dict]:
    """(X, y, info).

    X: array('d'), row-major, n_rows x n_features: numeric columns as they are (NaN where
    missing, for `MedianImputer`), categorical columns as ordinal codes (`Column.codes`).
    features: default every column but the target, the row index (`Table.index`), text and
    date columns; text columns are refused; a date or datetime column listed here is expanded to
    its parts NAME.year, NAME.month, NAME.day, NAME.weekday (`Column.date_part`), which are the
    feature names in info['features']. Boolean columns are coded like categorical ones.
    task: 'regression' or 'classification', default `Column.task` of the target.
    y: array('d') for regression; array('i') of class codes 0..k-1 for classification, the code
    being the index in info['classes'] (sorted distinct target values).
    Rows whose target is missing are left out (info['n_dropped']).
    """
    tcol = table.column(target)
    if features is None:
        features = [c.name for c in table.columns if c.name != target and not c.index
                    and c.kind not in ("text",) + DATES]
    features = [f"{f}.{part}" if table.column(f).kind in DATES else f
                for f in features for part in (DATE_PARTS if table.column(f).kind in DATES
                                               else (None,))]
    cols = [table.column(f) for f in features]
    for c in cols:
        if c.name == target:
            raise DataError(f"{table.name}: the target {target!r} cannot also be a feature",
                            field=target)
        if c.kind == "text":
            raise DataError(f"{table.name}: column {c.name!r} is free text (too many distinct "
                            f"values to be categorical) and cannot be a feature", field=c.name)
    if len(set(features)) != len(features):
        raise DataError(f"{table.name}: a feature is listed twice in {features}")
    if not cols:
        raise DataError(f"{table.name}: no feature columns besides the target {target!r}")
    task = task or tcol.task
    if task not in TASKS:
        raise DataError(f"task {task!r} is not one of {TASKS}")

    keep = None if tcol.n_missing == 0 else [
        v == v if tcol.kind == "numeric" else v is not None for v in tcol.values]
    values = tcol.values if keep is None else list(compress(tcol.values, keep))
    if task == "regression":
        if tcol.kind != "numeric":
            raise DataError(f"{table.name}: target {target!r} is {tcol.kind}; regression needs "
                            f"a numeric target", field=target)
        y, classes = array("d", values), None
    else:
        levels = tcol.levels(MAX_CLASSES)
        if levels is None:
            raise DataError(f"{table.name}: target {target!r} has more than {MAX_CLASSES} "
                            f"distinct values, too many for classification", field=target)
        if len(levels) < 2:
            raise DataError(f"{table.name}: target {target!r} has {len(levels)} distinct value"
                            f"{'s' * (len(levels) != 1)}; classification needs at least two",
                            field=target)
        index = {v: i for i, v in enumerate(levels)}
        y = array("i", map(index.__getitem__, values))
        classes = [int(v) if isinstance(v, float) and v.is_integer() else v for v in levels]

    n, nf = len(y), len(cols)
    X = array("d", bytes(8 * n * nf))
    categories = {}
    for j, c in enumerate(cols):
        if c.kind == "numeric":
            vals = c.values
        else:
            vals = c.codes()
            categories[c.name] = c.categories + ([MISSING_CATEGORY] if c.n_missing else [])
        X[j::nf] = vals if keep is None else array("d", compress(vals, keep))
    info = {"target": target, "task": task, "features": features, "n_features": nf,
            "n_rows": n, "n_dropped": table.n_rows - n, "classes": classes,
            "kinds": ["categorical" if c.kind in CODED else c.kind for c in cols],
            "categories": categories}
    return X, y, info


def take_rows(X: array, n_features: int, rows) -> array:
    """The rows `rows` (indices, in that order) of a row-major matrix, as a new array('d')."""
    out = array("d")
    extend = out.extend
    for i in rows:
        extend(X[i * n_features:(i + 1) * n_features])
    return out


class MedianImputer:
    """Replace NaN in each feature with that feature's median over the rows it was fit on (the
    training split), so that no test row leaks into the preprocessing. A feature with no value
    in those rows gets 0.0. Categorical codes are never NaN, so they pass through."""

    def fit(self, X: array, n_features: int, rows=None) -> MedianImputer:
        Xf = X if rows is None else take_rows(X, n_features, rows)
        self.medians_ = []
        for j in range(n_features):
            vals = sorted(v for v in Xf[j::n_features] if v == v)
            k = len(vals)
            median = 0.0 if k == 0 else (vals[k // 2] if k % 2 else
                                         (vals[k // 2 - 1] + vals[k // 2]) / 2)
            self.medians_.append(median)
        return self

    def transform(self, X: array, n_features: int) -> array:
        out = array("d", X)
        for j, m in enumerate(self.medians_):
            col = out[j::n_features]
            if any(v != v for v in col):
                out[j::n_features] = array("d", [m if v != v else v for v in col])
        return out


@dataclass
class Prepared:
    """Train and test matrices (row-major array('d'), imputed) and targets, with their rows."""
    X_train: array
    y_train: array
    X_test: array
    y_test: array
    train_idx: array
    test_idx: array
    n_features: int
    info: dict
    medians: list


def prepare(table: Table, target: str, *, features: list[str] | None = None,
            task: str | None = None, test_size: float = 0.2, seed: int = 42,
            stratify: bool | None = None) -> Prepared:
    """features_and_target, a split (stratified by class for classification unless
    stratify=False), and median imputation fit on the training rows."""
    X, y, info = features_and_target(table, target, features, task)
    nf = info["n_features"]
    if stratify is None:
        stratify = info["task"] == "classification"
    train, test = train_test_split(len(y), test_size=test_size, seed=seed,
                                   stratify=y if stratify else None)
    imputer = MedianImputer().fit(X, nf, rows=train)
    return Prepared(imputer.transform(take_rows(X, nf, train), nf), _take(y, train),
                    imputer.transform(take_rows(X, nf, test), nf), _take(y, test),
                    train, test, nf, info, imputer.medians_)


def _take(y: array, rows) -> array:
    return array(y.typecode, map(y.__getitem__, rows))
