"""py_core.data.summary: an uploaded CSV's summary read as a stream, the same as
`parse_csv(...).describe()` (std to a few units in the last place), in memory that does not grow
with the rows: about the largest column's distinct values (issue 16, point 7)."""

import math
import random
import string
import tracemalloc

import pytest
from test_data_reader import SPECTRUM, TEST_DATA

from py_core.data import DataError, encoding, parse_csv, reader, summary, table
from py_core.data.summary import summarize_csv


def outcome(fn):
    try:
        return fn()
    except DataError as exc:
        return {"error": exc.to_dict()}


def differences(want, got, path="") -> list[str]:
    """Where `got` differs from `want`: exact, but for std (relative 1e-12)."""
    if isinstance(want, dict) and isinstance(got, dict):
        if list(want) != list(got):
            return [f"{path}: keys {list(want)} != {list(got)}"]
        return [d for k in want for d in differences(want[k], got[k], f"{path}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items != {len(got)}"]
        return [d for i, (a, b) in enumerate(zip(want, got)) for d in differences(a, b, f"{path}[{i}]")]
    if path.endswith(".std") and isinstance(want, float) and isinstance(got, float):
        return [] if math.isclose(want, got, rel_tol=1e-12) else [f"{path}: {want!r} != {got!r}"]
    return [] if type(want) is type(got) and want == got else [f"{path}: {want!r} != {got!r}"]


def check(tmp_path, data: bytes, name="data.csv", **kw):
    path = tmp_path / "upload.csv"
    path.write_bytes(data)
    want = outcome(lambda: parse_csv(data, name=name, **kw).describe())
    got = outcome(lambda: summarize_csv(path, name=name, **kw))
    assert not differences(want, got), (differences(want, got)[:5], data[:300])
    return got


def test_the_test_corpora_summarise_as_parse_csv_describes_them(tmp_path):
    files = sorted(SPECTRUM.glob("*.csv")) + sorted(TEST_DATA.rglob("*.csv"))
    assert len(files) >= 10
    for path in files:
        for strict in (True, False):
            check(tmp_path, path.read_bytes(), name=path.name, strict=strict)


def test_a_sample_of_the_real_files_summarises_as_parse_csv_describes_them(tmp_path):
    corpus = pytest.importorskip("test_data_corpus").corpus()
    if len(corpus) < 100:
        pytest.skip("the corpus packages are not installed (pip install -e '.[test]')")
    for label, data in corpus[::12]:
        check(tmp_path, data, name=label)


# --- many chunks and small budgets: every pass the summary can make ---

def column(rng: random.Random, kind: str, n: int) -> list[str]:
    markers = ["", "NA", "nan", "-", " NULL ", "N/A", "NAN"]
    missing = rng.choice([0, 0, 0.05, 0.3])

    def m(v):
        return rng.choice(markers) if rng.random() < missing else v

    made = {
        "seq": lambda start=rng.choice([0, 1]): [str(start + i) for i in range(n)],
        "float": lambda: [m(repr(rng.gauss(0, 10) * rng.choice([1, 1e-3, 1e6]))) for _ in range(n)],
        "int": lambda: [m(str(rng.randrange(rng.choice([3, 20, 21, 1000])))) for _ in range(n)],
        "intish": lambda: [m(rng.choice(["1", "1.0", "2", "-0.0", "0", " 3 "])) for _ in range(n)],
        "decimal": lambda: [m(f"{rng.randrange(5000)},{rng.randrange(100):02d}") for _ in range(n)],
        "dotdecimal": lambda: [m(f"{rng.randrange(1, 999)}.{rng.randrange(1000):03d},5")
                               for _ in range(n)],
        "thousands": lambda: [m(f"{rng.randrange(1, 99)},{rng.randrange(1000):03d}.5")
                              for _ in range(n)],
        "bool": lambda: [m(rng.choice(["TRUE", "False", "true", "FALSE"])) for _ in range(n)],
        "date": lambda: [m(f"20{rng.randrange(10, 30)}-0{rng.randrange(1, 10)}-1{rng.randrange(10)}"
                           + ("T10:00" if rng.random() < 0.01 else "")) for _ in range(n)],
        "cat": lambda: [m(f"c{rng.randrange(rng.choice([2, 15, 40, 200]))}") for _ in range(n)],
        "text": lambda: [m("".join(rng.choices("abcxyz ", k=rng.randrange(1, 8)))) for _ in range(n)],
        "missing": lambda: [rng.choice(markers) for _ in range(n)],
        "unique": lambda: [f"r{i}" for i in rng.sample(range(10 * n), n)],
        "unique_numbers": lambda: [str(x) for x in rng.sample(range(10 * n), n)],
    }
    if kind == "late":  # numbers, then one value that is not a number after the first chunk
        values = [str(rng.randrange(100)) for _ in range(n)]
        values[rng.randrange(n // 2, n)] = rng.choice(["x", "1,5", "TRUE", "2020-01-01"])
        return values
    return made[kind]()


KINDS = ["seq", "float", "int", "intish", "decimal", "dotdecimal", "thousands", "bool", "date",
         "cat", "text", "late", "missing", "unique", "unique_numbers"]


def random_csv(rng: random.Random, kinds: list[str], numeric_only: bool = False) -> bytes:
    n = rng.choice([1, 5, 63, 64, 65, 200, 700, 2500])
    cols = [column(rng, k, n) for k in kinds]
    header = ["" if j == 0 and rng.random() < 0.4 else f"h{j}" for j in range(len(kinds))]
    delim = "," if numeric_only else rng.choice([",", ";", "\t"])

    def quoted(v):
        return f'"{v}"' if delim in v or (not numeric_only and rng.random() < 0.02) else v

    lines = [delim.join(map(quoted, header))]
    lines += [delim.join(quoted(c[i]) for c in cols) for i in range(n)]
    if rng.random() < 0.15:
        lines.insert(rng.randrange(1, len(lines) + 1), "")
    eol = rng.choice(["\n", "\r\n"])
    return ("\n" * rng.randrange(2) + eol.join(lines) + rng.choice([eol, ""])).encode()


@pytest.fixture
def small_pieces(monkeypatch):
    """Chunks of 64 rows, fast-path blocks of 256 bytes: a file of a few hundred rows takes every
    path a large one does."""
    monkeypatch.setattr(reader, "_CHUNK_CELLS", 256)
    monkeypatch.setattr(table, "_FAST_STEP", 256)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("budget", [(1 << 18, 64), (8, 8)], ids=["budget", "recount"])
def test_random_files_summarise_as_parse_csv_describes_them(tmp_path, small_pieces, monkeypatch,
                                                            seed, budget):
    monkeypatch.setattr(summary, "DISTINCT_BUDGET", budget[0])
    monkeypatch.setattr(summary, "MIN_SHARE", budget[1])
    rng = random.Random(seed)
    for _ in range(40):
        check(tmp_path, random_csv(rng, [rng.choice(KINDS) for _ in range(rng.randint(1, 5))]))
    numeric = ["seq", "float", "int", "intish", "missing", "unique_numbers"]
    for _ in range(40):  # plain numeric files: the fast path, or its giving way mid-file
        data = random_csv(rng, [rng.choice(numeric) for _ in range(rng.randint(2, 4))], True)
        if rng.random() < 0.2:
            lines = data.split(b"\n")
            lines.insert(rng.randrange(1, len(lines)), rng.choice([b"1,x", b"1_0,2", b'"1",2']))
            data = b"\n".join(lines)
        check(tmp_path, data)


@pytest.mark.parametrize("data", [
    b"", b"\n\n", b"a,b\n", b"a,a\n1,2\n", b"a,b\n1,2\n3\n", b'a,b\n1,"2\n', b'a,b\n1,x"y\n',
    b'a,b\n1,"x"y\n', b"a,b\n1,\x002\n", "a,b\n\x81é,1\n".encode("latin-1") + b"\x9d",
    b"a,b\n" + b"1,2\n" * 5000 + b"1,2,3\n",
])
def test_bad_files_are_refused_with_parse_csvs_error(tmp_path, small_pieces, data):
    assert "error" in check(tmp_path, data)


def test_the_mean_is_exact_across_chunks(tmp_path, small_pieces):
    rows = [1e16, 1.0, -1e16, 3.0, 1e-8] * 200
    got = check(tmp_path, ("a,b\n" + "".join(f"{v!r},x\n" for v in rows)).encode())
    assert got["columns"][0]["stats"]["mean"] == math.fsum(rows) / len(rows)


# --- memory ---

def traced_peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def repeated_csv(path, rows: int) -> None:
    """Numbers, and strings whose distinct values do not grow with the rows."""
    rng = random.Random(0)
    words = ["".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(1000)]
    with open(path, "w") as f:
        f.write("x,cat,flag,day,word\n")
        for i in range(rows):
            f.write(f"{rng.random():.6f},c{i % 50},{'TRUE' if i % 3 else 'FALSE'},"
                    f"2024-0{i % 9 + 1}-1{i % 10},{words[i % 1000]}\n")


def test_memory_does_not_grow_with_the_rows(tmp_path, monkeypatch):
    # Chunks of 1,638 rows, blocks of 64 KB: the fixed buffers at a test's size.
    monkeypatch.setattr(reader, "_CHUNK_CELLS", 1 << 13)
    monkeypatch.setattr(table, "_FAST_STEP", 1 << 16)
    monkeypatch.setattr(encoding, "STEP", 1 << 16)
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    repeated_csv(small, 10_000)
    repeated_csv(big, 100_000)
    peaks = [traced_peak(lambda p=p: summarize_csv(p)) for p in (small, big)]
    # parse_csv(...).describe() holds every value: its peak grows tenfold here.
    assert peaks[1] < 1.25 * peaks[0], f"peak {peaks[0] / 2**20:.1f} MB for 10,000 rows, " \
                                       f"{peaks[1] / 2**20:.1f} MB for 100,000"


def distinct_csv(path, rows: int, distinct_columns: int) -> None:
    rng = random.Random(1)
    with open(path, "w") as f:
        f.write("a,b,note\n")
        for i in range(rows):
            note = "".join(rng.choices(string.ascii_letters, k=20))
            first = f"k{i}" if distinct_columns == 3 else f"c{i % 7}"
            second = "".join(rng.choices(string.ascii_letters, k=12)) if distinct_columns == 3 \
                else f"d{i % 30}"
            f.write(f"{first},{second},{note}\n")


def test_distinct_values_are_held_a_column_at_a_time(tmp_path, monkeypatch):
    """Three columns of distinct strings take about the memory of one: the first past its share
    of the budget grows on, the others are counted in passes of their own."""
    monkeypatch.setattr(summary, "DISTINCT_BUDGET", 4096)  # the mechanism at a test's size
    one, three = tmp_path / "one.csv", tmp_path / "three.csv"
    distinct_csv(one, 60_000, 1)
    distinct_csv(three, 60_000, 3)
    peaks = [traced_peak(lambda p=p: summarize_csv(p)) for p in (one, three)]
    assert peaks[1] < 1.3 * peaks[0], f"peak {peaks[0] / 2**20:.1f} MB with one column of " \
                                      f"distinct values, {peaks[1] / 2**20:.1f} MB with three"
    got = check(tmp_path, three.read_bytes())
    assert [c["stats"]["distinct"] for c in got["columns"]] == [60_000] * 3
