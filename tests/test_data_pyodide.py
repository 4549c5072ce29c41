"""py_core.data gives the same bits under Pyodide (the browser's Python, run here by Node) as
under this CPython: parsing, summaries, splits, generators, prepared matrices."""

from pyodide_harness import NEEDS_PYODIDE, run_both

pytestmark = NEEDS_PYODIDE
MODULES = ["data", "errors.py"]  # what py_core.data imports

PROGRAM = r'''
import hashlib, json
from py_core.data import GENERATORS, DataError, generate, parse_csv, prepare, train_test_split

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(a.tobytes())
    return h.hexdigest()

out = {"split": [list(a) for a in train_test_split(1000, seed=42,
                                                     stratify=[i % 3 for i in range(1000)])],
       "gens": {n: digest(*(c.values for c in generate(n, n_samples=300).columns))
                for n in GENERATORS}}
rows = b"".join(b"%d,%s,c%d\n" % (i, b"NA" if i % 7 == 0 else b"%.3f" % (i / 3), i % 5)
                for i in range(5000))
table = parse_csv(b"a,b,k\n" + rows)
out["describe"] = table.describe(preview_rows=3)
p = prepare(table, "k")
out["prepare"] = digest(p.X_train, p.y_train, p.X_test, p.y_test)
# big enough for the split's bulk draws and for the medians' byte levels (py_core.data.bulk)
import random
from array import array
from py_core.data import bulk
rng = random.Random(5)
column = array("d", [rng.choice([rng.gauss(0, 1), float("nan"), float(rng.randrange(9))])
                     for _ in range(60000)])
keep = bytes(rng.random() < 0.8 for _ in range(60000))
out["medians"] = [repr(bulk.median(column, keep)), repr(bulk.median(column))]
out["big split"] = digest(*train_test_split(200000, seed=3))
try:
    parse_csv(b'a,b\n1,"x\n2,3\n')
except DataError as e:
    out["error"] = e.to_dict()
print(json.dumps(out, sort_keys=True))
'''

def test_same_results_in_pyodide(tmp_path, capsys):
    in_browser, here = run_both(PROGRAM, tmp_path, capsys, MODULES, timeout=180)
    assert in_browser == here


JS_PROGRAM = r'''
import hashlib, json, random
from py_core.data import parse_csv, table
table._JS_STEP = 1 << 12  # the files go to JavaScript in many pieces, as a big one does
try:
    import js
    table.use_numeric_parser(js.pyCoreParseNumeric)  # as py_core.browser.init does in the tab
    used, calls = [], []
    table_module_parser = table._numeric_parser
    def counted(*args):
        got = table_module_parser(*args)
        calls.append(got is not None)  # True: JavaScript read the piece
        return got
    table.use_numeric_parser(counted)
except ImportError:
    used = calls = None

def numbers(rng):
    r = rng.random()
    if r < 0.25:
        return repr(rng.uniform(-1e6, 1e6))
    if r < 0.45:
        return f"{rng.random() - 0.5:.{rng.randint(0, 17)}g}"  # no libm: same text everywhere
    if r < 0.6:
        return str(rng.randint(-10**20, 10**20))
    if r < 0.7:
        return f"{rng.uniform(-1, 1):.17f}e{rng.randint(-330, 300)}"  # subnormals too
    if r < 0.72:
        return rng.choice(["", "NA", " nan ", "-", "N/A", "#N/A", "null", "."])
    return rng.choice(["-0", "+5", " 7 ", ".5", "5.", "1E5", "1e-400", "0.000", "123456789012345678",
                       "1.7976931348623157e308", "4.9e-324", "2.2250738585072011e-308", "00012"])

out = {}
for case, (crlf, blank, extra) in enumerate([(False, False, ""), (True, True, ""),
                                             (False, True, "-nan"), (False, False, "inf"),
                                             (False, False, "1,2,3"), (False, False, '"7"')]):
    rng = random.Random(case)
    lines = ["a,b,c,d"]
    for i in range(9000):
        lines.append(",".join(numbers(rng) for _ in range(4)))
        if blank and i % 500 == 7:
            lines.append("")
        if extra and i == 8000:
            lines.append(extra if "," in extra else ",".join([extra, "1", "1", "1"]))
    data = (("\r\n" if crlf else "\n").join(lines) + "\n").encode()
    try:
        t = parse_csv(data)
    except Exception as e:
        out[str(case)] = str(e)
        continue
    finally:
        if calls:  # True: JavaScript read the whole file, in pieces
            used.append(len(calls) > 1 and all(calls))
            calls.clear()
    h = hashlib.sha256()
    for c in t.columns:
        h.update(c.kind.encode())
        if c.kind == "numeric":
            h.update(c.values.tobytes())
    out[str(case)] = [t.n_rows, h.hexdigest()]
out["used"] = used
print(json.dumps(out, sort_keys=True))
'''


def test_javascript_numeric_parser_same_bits_as_python(tmp_path, capsys):
    """web/csvparse.js, which reads plain numeric files in the tab, gives float()'s bits, and
    gives way (to the same result or the same error) where py_core's fast path does."""
    in_browser, here = run_both(JS_PROGRAM, tmp_path, capsys, MODULES,
                                js={"pyCoreParseNumeric": ("csvparse.js", "parseNumericFromPython")})
    # JS reads the plain files, gives way at -nan (a sign bit float() keeps), inf and a ragged
    # row; py_core does not ask it about the file with a quote
    assert in_browser.pop("used") == [True, True, False, False, False]
    assert here.pop("used") is None
    assert in_browser == here
    assert here["0"][0] == 9000 and here["1"][0] == 9000 and here["2"][0] == 9001
    assert "row has 3 fields" in here["4"]


SYNTH_PROGRAM = r'''
import hashlib, json
from py_core.data import make_blobs, make_regression, synthetic
try:
    import js
    kernels = js.pyCoreSynthetic
except ImportError:
    kernels = None

def digest(t):
    h = hashlib.sha256()
    for c in t.columns:
        h.update(c.values.tobytes())
    return h.hexdigest()

out = {"python": [digest(make_regression(n_samples=3000, n_features=6, n_informative=3, noise=10,
                                         seed=5)),
                  digest(make_blobs(n_samples=3000, n_features=4, centers=5, seed=2))]}
if kernels is not None:  # the same through web/synthetic.js, and a big one
    synthetic.use_bulk(kernels)
    out["js"] = [digest(make_regression(n_samples=3000, n_features=6, n_informative=3, noise=10,
                                        seed=5)),
                 digest(make_blobs(n_samples=3000, n_features=4, centers=5, seed=2))]
    column = synthetic.normal_column(9, 4, 300_000)
    out["column"] = [column[i] for i in (0, 1, 77_777, 299_999)]
else:
    out["js"] = out["python"]
    out["column"] = [synthetic.inverse_normal(synthetic.uniform_at(*synthetic.stream_key(9, 4), i))
                     for i in (0, 1, 77_777, 299_999)]
print(json.dumps(out, sort_keys=True))
'''


def test_javascript_synthetic_kernels_same_bits_as_python(tmp_path, capsys):
    """web/synthetic.js, which fills the synthetic sets' columns in the tab, gives py_core's
    bits: the tables equal Pyodide's pure-Python ones and this CPython's."""
    in_browser, here = run_both(SYNTH_PROGRAM, tmp_path, capsys, MODULES,
                                js={"pyCoreSynthetic": ("synthetic.js", "kernels")})
    assert in_browser["js"] == in_browser["python"] == here["python"]
    assert in_browser["column"] == here["column"]


STATS_PROGRAM = r'''
import json, random
from array import array
from py_core.data import Column, Table, table
try:
    import js
    table.use_stats_kernel(js.pyCoreColumnStats)
except ImportError:
    pass
used = []
kernel_stats = table._kernel_stats
def spy(values):
    got = kernel_stats(values)
    used.append(got is not None)  # True: the kernel's sums passed the check and were used
    return got
table._kernel_stats = spy
rng = random.Random(11)
n = 20_000
cols = [
    [rng.gauss(0, 1) for _ in range(n)],
    [1e16 + rng.random() for _ in range(n)],  # a mean that dwarfs the spread
    [rng.choice([1e300, -1e300, 1.0, -0.0, 0.0, 3e-310]) for _ in range(n)],  # cancellation
    [float("nan") if i % 3 else rng.uniform(-5, 5) for i in range(n)],  # missing values
    [0.0] + [-0.0] * (n - 1),
    [float("nan")] * (n - 1) + [2.5],
]
t = Table("t", [Column.numeric(f"c{j}", array("d", c)) for j, c in enumerate(cols)])
stats = [[repr(v) for v in c.stats().values()] for c in t.columns]
print(json.dumps({"stats": stats, "used": used}))
'''


def test_javascript_column_stats_same_bits_as_python(tmp_path, capsys):
    """web/colstats.js, which summarises big numeric columns in the tab, gives math.fsum's bits
    (exact sums, correctly rounded), and min/max as Python's min() and max()."""
    in_browser, here = run_both(STATS_PROGRAM, tmp_path, capsys, MODULES,
                                js={"pyCoreColumnStats": ("colstats.js", "columnStats")})
    # column 2's squares overflow (1e300 ** 2): the kernel's sum fails the check, Python's is used
    assert in_browser["used"] == [True, True, False, True, True, True] and here["used"] == []
    assert in_browser["stats"] == here["stats"]
