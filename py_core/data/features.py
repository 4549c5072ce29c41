"""From a Table to the models' inputs: a row-major feature matrix, encoded targets, imputation.

    X, y, info = features_and_target(table, "target")
    train, test = train_test_split(info["n_rows"], stratify=y if info["classes"] else None)
    imputer = MedianImputer().fit(X, info["n_features"], rows=train)
    X_train = imputer.transform(take_rows(X, info["n_features"], train), info["n_features"])

or all of it at once with `prepare(table, "target")`, which the page and the server both call so
that their splits and matrices are the same. `prepare` works column by column in C loops
(`bulk`): a million rows by twenty features in about a second, checking Stop every few
milliseconds; the step-by-step functions above give the same numbers, bit for bit.
"""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass
from itertools import compress, repeat
from operator import mul

from ..errors import checker
from .bulk import fill, interleave, median, rows_int, split_rows
from .reader import DataError
from .split import flipped, rows_of, take, test_mask
from .table import CODED, DATE_PARTS, DATES, MISSING_CATEGORY, Table

TASKS = ("regression", "classification")
_BLOCK = 1 << 14  # target values encoded between Stop checks
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
    columns, _, y, info = _feature_columns(table, target, features, task)
    return interleave(columns), y, info


def _feature_columns(table: Table, target: str, features: list[str] | None, task: str | None,
                     check=None) -> tuple[list[array], list[bool], array, dict]:
    """features_and_target's columns one by one (array('d') each, the rows of y), which of them
    may hold NaN, y and info."""
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
    if check is not None:
        check()
    if task not in TASKS:
        raise DataError(f"task {task!r} is not one of {TASKS}")

    keep = None if tcol.n_missing == 0 else bytes(
        v == v if tcol.kind == "numeric" else v is not None for v in tcol.values)
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
        if check is not None:
            check()
        index = {v: i for i, v in enumerate(levels)}
        y = array("i")
        for a in range(0, len(values), _BLOCK):
            y.extend(map(index.__getitem__, values[a:a + _BLOCK]))
            if check is not None:
                check()
        classes = [int(v) if isinstance(v, float) and v.is_integer() else v for v in levels]
    if check is not None:
        check()

    columns, nan, categories = [], [], {}
    for c in cols:
        if c.kind == "numeric":
            vals = c.values if isinstance(c.values, array) and c.values.typecode == "d" \
                else array("d", c.values)
        else:
            vals = c.codes()
            categories[c.name] = c.categories + ([MISSING_CATEGORY] if c.n_missing else [])
        columns.append(vals if keep is None else array("d", compress(vals, keep)))
        nan.append(c.kind == "numeric" and c.n_missing > 0)
        if check is not None:
            check()
    info = {"target": target, "task": task, "features": features, "n_features": len(cols),
            "n_rows": len(y), "n_dropped": table.n_rows - len(y), "classes": classes,
            "kinds": ["categorical" if c.kind in CODED else c.kind for c in cols],
            "categories": categories}
    return columns, nan, y, info


def most_frequent(codes: array) -> float:
    """The most frequent value of `codes` (the smallest of equals), 0.0 when there is none."""
    counts = Counter(codes)
    return max(counts, key=lambda c: (counts[c], -c)) if counts else 0.0


def take_rows(X: array, n_features: int, rows) -> array:
    """The rows `rows` (indices, in that order) of a row-major matrix, as a new array('d')."""
    view = memoryview(X)
    starts = array("q", map(mul, rows, repeat(n_features)))
    ends = array("q", map(n_features.__add__, starts))
    out = array("d")
    out.frombytes(b"".join(map(view.__getitem__, map(slice, starts, ends))))
    return out


class MedianImputer:
    """Replace NaN in each feature with that feature's median over the rows it was fit on (the
    training split), so that no test row leaks into the preprocessing. A feature with no value
    in those rows gets 0.0. Categorical codes are never NaN, so they pass through."""

    def fit(self, X: array, n_features: int, rows=None) -> MedianImputer:
        Xf = X if rows is None else take_rows(X, n_features, rows)
        self.medians_ = [median(Xf[j::n_features]) for j in range(n_features)]
        return self

    def transform(self, X: array, n_features: int) -> array:
        out = array("d", X)
        for j, m in enumerate(self.medians_):
            out[j::n_features] = fill(out[j::n_features], m)
        return out


@dataclass
class Prepared:
    """Train and test matrices (row-major array('d'), imputed unless asked not to) and targets,
    with their rows."""
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
            stratify: bool | None = None, should_stop=None, progress=None,
            impute: bool = True) -> Prepared:
    """features_and_target, a split (stratified by class for classification unless
    stratify=False), and median imputation fit on the training rows (impute=False: NaN stays,
    for a model that handles missing values itself; the medians are computed either way). A
    categorical feature's "median" is its most frequent category in training (the surface holds
    it there, the snippets' example row has it); its missing values are a category already.

    should_stop: called every few milliseconds of work; when it returns True, `Stopped` is
    raised. progress(fraction): called as the work goes, 1.0 at the end."""
    work = _Work(should_stop, progress)
    columns, nan, y, info = _feature_columns(table, target, features, task, work.check)
    nf = info["n_features"]
    if stratify is None:
        stratify = info["task"] == "classification"
    work.done(0.1)
    mask = test_mask(len(y), test_size=test_size, seed=seed, stratify=y if stratify else None,
                     check=work.check)
    work.check()
    train_idx, test_idx = rows_of(mask, 0, work.check), rows_of(mask, 1, work.check)
    train = flipped(mask)
    work.done(0.4)
    train_rows = rows_int(train)
    medians = []
    for j, col in enumerate(columns):
        if info["kinds"][j] == "numeric":
            medians.append(median(col, train_rows))
        else:  # a category's code: the most frequent in training (a median between codes is no category's)
            medians.append(most_frequent(take(col, train, "d", work.check)))
        if nan[j] and impute:
            columns[j] = fill(col, medians[-1])
        work.done(0.4 + 0.3 * (j + 1) / nf)
    X_train, X_test = split_rows(columns, test_idx, check=work.check)
    y_train = take(y, train, y.typecode, work.check)
    y_test = take(y, mask, y.typecode, work.check)
    work.done(1.0)
    return Prepared(X_train, y_train, X_test, y_test, train_idx, test_idx, nf, info, medians)


class _Work:
    """Stop and progress between the pieces of a long step."""

    def __init__(self, should_stop, progress):
        self.check, self.progress = checker(should_stop), progress

    def done(self, fraction: float) -> None:
        if self.progress is not None:
            self.progress(fraction)
        self.check()
