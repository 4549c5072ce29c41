"""Real CSV files that nobody here wrote, read as pandas reads them.

The files ship inside packages the test extra installs (pyproject.toml): pydataset (757 data sets
written by R's write.csv, in its resources.tar.gz), statsmodels (its data sets and the CSVs of its
test results: R, Stata and hand-made files), vega_datasets and scikit-learn. Nothing is read from
outside the repository and the virtual environment, and nothing is copied into the repository.

For every file py_core accepts, the row count, each column's type and its missing count agree with
pandas (told the same delimiter, encoding and missing markers: the policy we compare is typing, not
sniffing). Every refusal is listed with its reason; at least 99% of the files must be accepted.
"""

import gzip
import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

from py_core.data import MISSING, DataError, parse_csv
from py_core.data.reader import to_utf8

pd = pytest.importorskip("pandas")

MIN_FILES = 300
MIN_ACCEPTED = 0.99
MAX_BYTES = 8 << 20  # the few larger test-result files add minutes and nothing new


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).parent if spec and spec.origin else None


def corpus() -> list[tuple[str, bytes]]:
    """(label, bytes) of every CSV file the installed packages ship: labels 'package:path';
    statsmodels' test fixtures (under a tests/ folder) are counted apart (`is_fixture`)."""
    files = []
    root = _package_dir("pydataset")
    if root and (root / "resources.tar.gz").exists():
        with tarfile.open(root / "resources.tar.gz") as tar:
            for member in tar.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                if member.isfile() and base.endswith(".csv") and not base.startswith("._") \
                        and "/csv/" in member.name:
                    files.append((f"pydataset:{base}", tar.extractfile(member).read()))
    for package in ("statsmodels", "vega_datasets", "sklearn"):
        root = _package_dir(package)
        if root is None:
            continue
        for path in sorted(root.rglob("*.csv*")):
            if path.suffix not in (".csv", ".gz") or path.stat().st_size > MAX_BYTES:
                continue
            if path.suffix == ".gz":
                if not path.name.endswith(".csv.gz"):
                    continue
                data = gzip.decompress(path.read_bytes())
            else:
                data = path.read_bytes()
            files.append((f"{package}:{path.relative_to(root).as_posix()}", data))
    return files


def is_fixture(label: str) -> bool:
    """A package's test fixture (numbers a test compares with, often headerless matrices whose
    first row repeats values as column names) rather than a data set someone would share."""
    return "/tests/" in label


def pandas_refuses(data: bytes) -> bool:
    try:
        pd.read_csv(io.BytesIO(to_utf8(data)[0]), sep=None, engine="python")
    except Exception:  # noqa: BLE001 - any refusal
        return True
    return False


def pandas_frame(data: bytes, table):
    utf8, _ = to_utf8(data)
    return pd.read_csv(io.BytesIO(utf8), sep=table.delimiter, encoding="utf-8-sig",
                       keep_default_na=False, na_values=sorted(MISSING),
                       low_memory=False)


def disagreement(table, frame) -> str | None:
    """What differs between our table and pandas' frame, or None."""
    if len(frame) != table.n_rows:
        return f"rows: ours {table.n_rows}, pandas {len(frame)}"
    if len(frame.columns) != len(table.columns):
        return f"columns: ours {len(table.columns)}, pandas {len(frame.columns)}"
    for col, name in zip(table.columns, frame.columns):
        series = frame[name]
        dtype = series.dtype
        if pd.api.types.is_bool_dtype(dtype):
            theirs = "boolean"
        elif pd.api.types.is_numeric_dtype(dtype):
            theirs = "numeric"
        else:
            theirs = "strings"
        ours = col.kind
        if col.n_missing == table.n_rows:  # nothing but missing values
            ok = True
        elif ours == "numeric":
            ok = theirs == "numeric" or (col.format is not None and theirs == "strings")
        elif ours == "boolean":
            ok = theirs == "boolean" or (theirs == "strings" and col.n_missing > 0)
        else:  # categorical, text, date, datetime: pandas keeps them as strings
            ok = theirs == "strings"
        if not ok:
            return f"column {col.name!r}: ours {ours}, pandas {dtype}"
        missing = int(series.isna().sum())
        if missing != col.n_missing:
            return f"column {col.name!r}: missing ours {col.n_missing}, pandas {missing}"
        if ours == "numeric" and theirs == "numeric" and col.n_missing < table.n_rows:
            values = series.to_numpy(dtype="float64")
            same = all(a == b or (a != a and b != b) for a, b in zip(col.values, values))
            if not same:
                return f"column {col.name!r}: values differ from pandas'"
    return None


def test_real_files_read_as_pandas_reads_them(capsys):
    files = corpus()
    if len(files) < MIN_FILES:
        pytest.skip(f"only {len(files)} corpus files installed (pip install -e '.[test]')")
    refused, disagree, pandas_fails = [], [], []
    for label, data in files:
        try:
            table = parse_csv(data, name=label)
        except DataError as exc:
            refused.append((label, exc.message))
            continue
        try:
            frame = pandas_frame(data, table)
        except Exception as exc:  # noqa: BLE001 - pandas' own refusal, reported
            pandas_fails.append((label, f"{type(exc).__name__}: {exc}"))
            continue
        problem = disagreement(table, frame)
        if problem:
            disagree.append((label, problem))
    with capsys.disabled():
        for group, pick in (("data sets", lambda x: not is_fixture(x)),
                            ("test fixtures", is_fixture)):
            n = sum(1 for label, _ in files if pick(label))
            bad = sum(1 for label, _ in refused if pick(label))
            print(f"\ncorpus, {group}: {n} files, {n - bad} accepted "
                  f"({(n - bad) / max(n, 1):.2%}), {bad} refused")
        by_label = dict(files)
        for label, why in refused:
            also = " [pandas refuses too]" if pandas_refuses(by_label[label]) else ""
            print(f"  refused {label}{also}: {why.removeprefix(label + ', ')}")
        for label, why in pandas_fails:
            print(f"  accepted, pandas refused {label}: {why[:200]}")
        for label, why in disagree:
            print(f"  DISAGREES {label}: {why}")
    assert not disagree, f"{len(disagree)} files disagree with pandas: {disagree[:5]}"
    datasets = [label for label, _ in files if not is_fixture(label)]
    accepted = len(datasets) - sum(1 for label, _ in refused if not is_fixture(label))
    assert len(datasets) >= MIN_FILES and accepted / len(datasets) >= MIN_ACCEPTED
