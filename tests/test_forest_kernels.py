"""Each forest kernel on the native backend against its reference, on fresh random inputs.

A random forest is grown on the reference backend from random data and parameters; at a random
level, the inputs of one dispatch of the kernel under test are captured, replayed on the native
backend, and every buffer the kernel may write is compared: integers and split scores exactly,
leaf values and predictions within float tolerance. The self-test cases (`py_core/kernels/forest/cases.py`) run too.
"""
from __future__ import annotations

import asyncio
import itertools
import random
from array import array

import pytest

from py_core.forest import RandomForestClassifier, RandomForestRegressor, builder
from py_core.gpu import Dispatch
from py_core.gpu.reference import ReferenceBackend
from py_core.kernels import forest as fk
from py_core.rng import hash3, pcg
from py_core.selftest import CASES, _load_families, max_error


def run(coro):
    return asyncio.run(coro)


class CapturingBackend(ReferenceBackend):
    """The reference backend, keeping a copy of the buffers of the `occurrence`-th dispatch of
    `entry` as they were before it ran."""

    def __init__(self, entry: str, occurrence: int):
        super().__init__()
        self.entry, self.left, self.captured = entry, occurrence, None

    async def _run(self, plan, repeat):
        for op in plan.ops:
            if isinstance(op, Dispatch) and op.kernel.entry == self.entry:
                if self.left == 0:
                    self.captured = (op.grid, [(b.dtype, b.uniform, array(b.handle.typecode, b.handle))
                                               for b in op.buffers])
                self.left -= 1
            sub = self.plan()
            sub.ops.append(op)
            await super()._run(sub, 1)


def replay(backend, family: str, entry: str, bufs, grid, extra=()) -> list:
    """One dispatch of `entry` on `backend` over copies of captured buffers [(dtype, uniform,
    data)] (and `extra` u32 buffers after them): every buffer as it is after it."""
    kern = run(backend.kernel(family, entry))
    made = [backend.buffer(dtype, data=data, uniform=uniform) for dtype, uniform, data in bufs]
    made += [backend.buffer("u32", data=data) for data in extra]
    run(backend.run(backend.plan().dispatch(kern, made, grid)))
    return [run(backend.read(b)) for b in made]


def random_data(rng, task, F=None, n=None):
    n, F = n or rng.randint(20, 120), F or rng.randint(1, 9)
    X = [[rng.choice([rng.gauss(0, 1), float(rng.randint(0, 4))]) for _ in range(F)] for _ in range(n)]
    if task == "regression":
        y = [sum(r) * rng.uniform(-3, 3) + rng.gauss(0, 0.5) for r in X]
    else:
        # 13 or more: more lanes than one chunk of split_scan_wg (CH); 70: more lanes (class
        # channels) than split_pick_wg has threads, so it takes them in two passes
        k = rng.choice([2, 3, 4, 13, 20, 70])
        y = [(int(abs(r[0] * 2 + rng.gauss(0, 1))) + (rng.randrange(k) if k > 4 else 0)) % k for r in X]
    return X, y


def random_forest(rng, task, backend, monkeypatch, bootstrap=None, small=None, **over):
    # Nodes split from their listed rows (split_rows) up to a random size: none, a few, all; alloc
    # in three dispatches, or in one.
    small = rng.choice([0, 3, 20, 2048]) if small is None else small
    monkeypatch.setattr(builder, "small_rows", lambda *_: small)
    monkeypatch.setattr(builder, "ALLOC_SLOTS", rng.choice([0, 1024]))
    kw = dict(n_estimators=rng.randint(1, 6), random_state=rng.randrange(2**32),
              max_depth=rng.choice([None, 2, 4, 7]), min_samples_leaf=rng.choice([1, 1, 2, 3]),
              min_samples_split=rng.choice([2, 2, 5]),
              bootstrap=rng.random() < 0.8 if bootstrap is None else bootstrap,
              n_bins=rng.choice([256, 256, 7, 3]), max_features=rng.choice([None, "sqrt", 0.5, 1]),
              backend=backend)
    kw["oob_score"] = kw["bootstrap"]
    kw.update(over)
    if task == "regression":
        return RandomForestRegressor(**kw)
    return RandomForestClassifier(criterion=task, **kw)


ENTRIES = ["check_finite", "targets", "bin_features", "bootstrap", "init_trees", "hist_build", "hist_build_wg",
           "split_vary", "split_rows", "split_small", "split_scan", "split_pick", "split_vary_wg", "split_scan_wg", "split_pick_wg",
           "alloc", "alloc_count", "alloc_scan", "alloc_write", "hist_clear", "hist_clear_wg", "route_rows", "finalize",
           "importance", "oob", "predict"]
# Workgroup-per-item variants (GPUs): replayed on the inputs of the looping kernel, on the grid
# the builder gives them (wg_items).
VARIANTS = {"split_vary_wg": "split_vary", "split_scan_wg": "split_scan", "split_pick_wg": "split_pick",
            "hist_clear_wg": "hist_clear", "hist_build_wg": "hist_build"}
PER_LEVEL = {"hist_build", "hist_build_wg", "split_vary", "split_rows", "split_small", "split_scan", "split_pick", "split_vary_wg", "split_scan_wg",
             "split_pick_wg", "alloc", "alloc_count", "alloc_scan", "alloc_write", "hist_clear", "hist_clear_wg",
             "route_rows"}  # the others run once a fit or a batch: capture their first dispatch


@pytest.mark.parametrize("task", ["regression", "gini", "entropy"])
@pytest.mark.parametrize("entry", ENTRIES)
def test_kernel_matches_reference(native_backend, rng, entry, task, monkeypatch):
    if entry == "targets" and task != "regression":
        pytest.skip("regression targets only")
    # split_small runs in deep trees (max_depth None), on their SMALL nodes
    deep = dict(max_depth=None, small=rng.choice([3, 20, 2048])) if entry == "split_small" else {}
    _replay_matches(native_backend, rng, entry, task, monkeypatch, *random_data(rng, task), **deep)


@pytest.mark.parametrize("entry", ["split_rows", "split_scan_wg", "split_vary_wg"])
def test_wide_data_finds_ranks_by_undoing_the_rounds(native_backend, rng, entry, monkeypatch):
    """2,400 features: more a thread (38 of 64 threads' share) than the permutation's 36 rounds, so
    rank_run finds each rank's feature by undoing the rounds (rank_feature) rather than putting
    each feature in its rank's place from the candidates, as it does for every narrower data set
    the test above draws. Either way the reference's features. And split_vary_wg's workgroups
    take several features each (vary_features: 2,400 a slot is over WG_TREE), their ranks a
    thread each."""
    F = 2400
    assert -(-F // 64) > fk.perm_rounds(F)
    for _ in range(5):  # until the captured dispatch had a node to split (its candidates written)
        task = rng.choice(["regression", "gini"])
        before, after = _replay_matches(
            native_backend, rng, entry, task, monkeypatch, *random_data(rng, task, F=F, n=20),
            occurrence=1 if entry == "split_rows" else 0, max_features=rng.choice(["sqrt", 0.01]),
            small=2048 if entry == "split_rows" else 0)  # every node below the root split from its rows, or none
        if before[5] != after[5]:  # binding 5: the candidates, in all three kernels
            return
    pytest.fail(f"no {entry} dispatch split a node")


def _replay_matches(native_backend, rng, entry, task, monkeypatch, X, y, occurrence=None, **forest_kw):
    """Grow a random forest on the reference, capture a dispatch of `entry` (the occurrence-th, or
    a random one), replay it on the native backend and the reference and compare what they write.
    Returns the captured buffers' contents before and after (the reference's)."""
    for attempt in range(5):  # a small random forest may never reach the chosen dispatch
        nth = rng.randrange(6) if entry in PER_LEVEL and attempt < 3 else 0
        ref = CapturingBackend(VARIANTS.get(entry, entry), nth if occurrence is None else occurrence)
        forest = random_forest(rng, task, ref, monkeypatch, bootstrap=True if entry == "oob" else None, **forest_kw)
        if entry.startswith("alloc"):  # the one the entry is: three dispatches, or one
            monkeypatch.setattr(builder, "ALLOC_SLOTS", 0 if entry != "alloc" else 2**32)
        run(forest.fit(X, y))
        if entry == "predict":
            run(forest.predict(X[:7]))
        if ref.captured is not None:
            break
    assert ref.captured is not None, f"no {entry} dispatch happened"
    grid, bufs = ref.captured

    total, extra = grid[0] * grid[1] * grid[2], ()
    if entry in VARIANTS:  # a workgroup per item (wg_items), as the builder dispatches it
        p = fk.PARAMS.unpack(bufs[0][2])
        groups = fk.hist_groups(bufs[2][2], p["C"]) if entry == "hist_build_wg" else None
        if entry == "hist_build_wg":
            if groups is None:
                pytest.skip("a feature's bins x channels exceed HB_WORDS: the builder runs hist_build")
            extra = (groups, _hmap(p, bufs[5][2]))
        total = fk.wg_items(entry, p["T"], min(p["S_h"], p["S_cur"] - p["s_lo"]), p["F"], p["mf"],
                            p["NB"] * p["C"], p["n"], groups[0] if groups else 0)
    want, got = (replay(backend, "forest", entry, bufs, fk.grid(
        total, backend.limits["maxComputeWorkgroupsPerDimension"]), extra)
        for backend in (ReferenceBackend(), native_backend))
    if entry == "route_rows":  # each SMALL slot's list: its rows in the atomics' order, so sorted
        p = fk.PARAMS.unpack(bufs[0][2])
        before, after = bufs[6][2], want[6]
        for i in range(1, p["T"] * p["S"] * 4, 4):
            if after[i] & fk.SMALL:
                a, b = (i // (4 * p["S"])) * p["n"] + before[i + 2], (i // (4 * p["S"])) * p["n"] + after[i + 2]
                assert b - a == got[6][i + 2] - before[i + 2], "a SMALL slot listed other rows"
                got[7][a:b], want[7][a:b] = (array("I", sorted(x[7][a:b])) for x in (got, want))
    for i, (g, w) in enumerate(zip(got, want)):
        if g.typecode == "f":  # inputs may hold inf (a feature's last bin): equal is fine
            pairs = [(a, b) for a, b in zip(g, w) if a != b]
            err, _, ok = max_error([a for a, _ in pairs], [b for _, b in pairs], atol=1e-6, rtol=1e-5)
            assert ok, f"{entry} binding {i}: largest error {err}"
        else:
            diff = [j for j, (a, b) in enumerate(zip(g, w)) if a != b]
            assert not diff, f"{entry} binding {i}: {len(diff)} words differ, first at {diff[0]}: " \
                             f"native {g[diff[0]]}, reference {w[diff[0]]}"
    return [data for _, _, data in bufs], want


@pytest.mark.parametrize("task", ["regression", "gini", "entropy"])
def test_nodes_split_from_their_rows_make_the_same_forest(native_backend, rng, task, monkeypatch):
    """Whole fits: nodes of up to 0, a few, or any number of rows split from their listed rows
    (split_rows), on the native backend (the CPUs' kernels and the GPUs') and the reference: the
    same trees, node for node."""
    X, y = random_data(rng, task)
    seed = rng.randrange(2**32)
    grown = []
    few = rng.choice([3, 20])
    for backend, small, wide in ((native_backend, 0, None), (native_backend, few, None),
                                 (native_backend, few, True), (native_backend, 10**6, None),
                                 (native_backend, 10**6, True), (ReferenceBackend(), 20, None)):
        forest = random_forest(random.Random(seed), task, backend, monkeypatch)
        monkeypatch.setattr(builder, "small_rows", lambda *_, small=small: small)
        run(forest.fit(X, y, parallel_bins=wide))
        grown.append(_tree_bytes(forest))
    assert all(g == grown[0] for g in grown[1:])


def test_nodes_split_from_their_rows_on_real_data(native_backend, monkeypatch):
    """scikit-learn's digits (1,797 scanned handwritten digits, 64 pixels, 10 classes, shipped in
    its package), 4 trees of depth 10 on the kernels GPUs run: nodes split from their rows (up to
    40 rows, or every node but the root) give the trees of histograms alone, node for node."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X, y = X.tolist(), y.tolist()
    grown = []
    for small in (0, 40, 10**6):
        monkeypatch.setattr(builder, "small_rows", lambda *_, small=small: small)
        forest = RandomForestClassifier(n_estimators=4, max_depth=10, random_state=3, backend=native_backend)
        run(forest.fit(X, y, parallel_bins=True))
        grown.append(_tree_bytes(forest))
    assert sum(memoryview(grown[0][0]).cast("I")) > 4 * 200  # deep trees: many small nodes
    assert grown[1] == grown[0] and grown[2] == grown[0]


def _hmap(p, slots) -> array:
    """The slot of each histogram number (alloc's hmap), from the slots' numbers (word 3): what
    hist_build_wg reads beside hist_build's bindings where a level's histograms are numbered."""
    hmap = array("I", bytes(4 * p["T"] * p["S"]))
    for t in range(p["T"]):
        for s in range(p["S_cur"]):
            flags, word3 = slots[(t * p["S"] + s) * 4 + 1], slots[(t * p["S"] + s) * 4 + 3]
            if fk.numbered(p) and flags and not flags & fk.SMALL:
                hmap[t * p["S"] + word3] = s
    return hmap


def _tree_bytes(forest) -> list:
    t = forest._forest
    return [bytes(memoryview(a)) for a in (t.counts, t.feature, t.threshold, t.left)]


@pytest.mark.parametrize("crit, b16", [(fk.MSE, 0), (fk.GINI, 0), (fk.MSE, 1)])
def test_hist_build_wg_sums_runs_of_rows_as_hist_build(native_backend, rng, crit, b16):
    """hist_build_wg over several runs of HB_ROWS rows and several feature groups (the replay
    above has at most 120 rows): the same words as hist_build, 64-bit carries included; b16:
    16-bit bins, features of up to 700."""
    from py_core.kernels.forest.cases import _data, _params
    n, F, T, S = 2 * fk.HB_ROWS + rng.randrange(1, 999), rng.randint(5, 12), 2, 2
    K = 1 if crit == fk.MSE else rng.randint(2, 15)
    C = 4 if crit == fk.MSE else K + 1
    fmeta, binned, target, NB, FW = _data(rng, n, F, crit, K, b16)
    if crit == fk.MSE:  # large targets and weights: the low words carry often
        target = array("I", array("i", [rng.choice([-1, 1]) * rng.randint(2**22, 2**23 - 1)
                                        for _ in range(n)]).tobytes())
    state = array("I", [(rng.randrange(S + 1) << 8) | rng.choice([0, 1, 2, 200]) for _ in range(T * n)])
    slots = array("I", [0, fk.OPEN | fk.BUILT, 0, 0, 0, fk.OPEN, 0, 0] * T)
    groups = fk.hist_groups(fmeta, C)
    assert groups is not None and groups[0] >= 1
    P = _params(n=n, F=F, FW=FW, NB=NB, C=C, K=K, crit=crit, T=T, S=S, S_cur=S, b16=b16)

    def hist(entry):
        b = native_backend
        kern = run(b.kernel("forest", entry))
        bufs = [b.buffer("u32", uniform=True, data=P)] + [b.buffer("u32", data=d) for d in
                                                         (binned, fmeta, target, state, slots)]
        out = b.buffer("u32", T * S * NB * C)
        if entry == "hist_build":
            g = fk.grid(-(-T * n // fk.WG))
            bufs.append(out)
        else:
            g = fk.grid(fk.wg_items(entry, T, S, F, 0, 0, n, groups[0]))
            bufs += [out, b.buffer("u32", data=groups), b.buffer("u32", T * S)]  # hmap: unused (by slot)
        run(b.run(b.plan().clear(out).dispatch(kern, bufs, g)))
        return run(b.read(out))

    want, got = hist("hist_build"), hist("hist_build_wg")
    assert any(want), "no row was added"
    diff = [j for j, (a, b) in enumerate(zip(got, want)) if a != b]
    assert not diff, f"{len(diff)} words differ, first at {diff[0]}: {got[diff[0]]} != {want[diff[0]]}"


def test_selftest_cases_match_reference(native_backend, rng):
    _load_families()
    cases = [c for c in CASES if c.name.startswith("forest")]
    assert len(cases) >= 2
    ref = ReferenceBackend()
    seed = rng.randrange(2**32)
    for c in cases:
        import random
        plan, outs, _ = run(c.setup(native_backend, random.Random(seed)))
        run(native_backend.run(plan))
        got = [run(native_backend.read(b)) for b in outs]
        rplan, routs, _ = run(c.setup(ref, random.Random(seed)))
        run(ref.run(rplan))
        want = [run(ref.read(b)) for b in routs]
        for g, w in zip(got, want):
            err, _, ok = max_error(g, w, c.atol, c.rtol)
            assert ok, f"{c.name}: largest error {err}"


def test_hash_is_pinned():
    """The RNG the shader and Python share: a change here changes every forest."""
    assert [pcg(x) for x in (0, 1, 0xFFFFFFFF)] == [129708002, 2831084092, 3861530882]
    assert hash3(42, 0, 0) == 4004461565 and hash3(1, 2, 3) == 3404032338
    for F in (1, 2, 3, 7, 64, 100):
        R = fk.perm_rounds(F)
        for key in (0, 12345, 0xFFFFFFFF):
            ranks = [fk.feature_rank(key, f, R, F) for f in range(F)]
            assert sorted(ranks) == list(range(F))  # a permutation
            assert [fk.rank_feature(key, r, R, F) for r in ranks] == list(range(F))  # its inverse


@pytest.mark.parametrize("F", [6, 7, 9, 17])
def test_every_feature_is_drawn_as_often(F):
    """A node's first max_features (sqrt) of its permutation: each feature among them in mf/F of
    3,000 nodes, within 12% (3,000 draws: a few percent of noise); and first in 1/F of them,
    within 25%. The 4-round Feistel network used before drew some features 1.6x (F = 7) to 3.4x
    (F = 17, first) as often as others."""
    mf, R, n = max(1, int(F ** 0.5)), fk.perm_rounds(F), 3000
    among, first = [0] * F, [0] * F
    for node in range(n):
        key = fk.hash3(5, 7, node)
        for f in range(F):
            r = fk.feature_rank(key, f, R, F)
            among[f] += r < mf
            first[f] += r == 0
    assert max(abs(c * F / (mf * n) - 1) for c in among) < 0.12, among
    assert max(abs(c * F / n - 1) for c in first) < 0.25, first


def _edge_doubles(rng, count):
    """f64 values that test rounding to f32: halfway cases, the ends of f32's range, subnormals,
    zeros of both signs, and random values over many magnitudes."""
    import struct
    out = [0.0, -0.0, 1.0, -1.0, 3.4028234663852886e38, 3.4028235677973366e38 * 0.9999999,
           1.1754943508222875e-38, 1.401298464324817e-45, 7.006492321624085e-46, 2.1e-45, 5e-324]
    for _ in range(count):
        f = struct.unpack("<f", struct.pack("<I", rng.getrandbits(31)))[0]  # a finite f32 or not
        if f != f or abs(f) == float("inf"):
            continue
        ulp = abs(f) * 2.0 ** -24 if f else 1e-45
        out += [f, f + ulp, f - ulp, f + ulp * rng.random(), -(f + ulp), rng.uniform(-1e6, 1e6),
                rng.gauss(0, 1) * 10.0 ** rng.randint(-40, 38)]
    return out


def test_device_rounds_f64_to_f32_as_the_cpu_and_sorts_the_subsample(native_backend, rng):
    """`sample` (step 1) reads each f64 as the f32 the CPU rounds it to (array('f')), -0 as +0;
    `sort_pass` leaves every feature sorted as Python's sort does; equal values stay equal."""
    F = 3
    col = _edge_doubles(rng, 300)
    col += [rng.choice(col) for _ in range(200)]  # duplicates
    n = len(col)
    X = array("d", [v * (1 + f) if f < 2 else col[(i * 7) % n] for i, v in enumerate(col) for f in range(F)])
    SM = 1 << (n - 1).bit_length()
    b = native_backend
    k = {e: run(b.kernel("forest", e)) for e in ("sample", "sort_pass")}
    P = b.buffer("u32", uniform=True, data=fk.PARAMS.pack(**dict(
        {name: 0 for name, _ in fk.PARAMS.fields}, n=n, F=F, xd=1, step=1, SM=SM, inv_scale=1.0)))
    Xb = b.buffer("u32", data=memoryview(X))
    samp = b.buffer("u32", F * SM)
    g = fk.grid(-(-F * SM // fk.WG))
    run(b.run(b.plan().dispatch(k["sample"], [P, Xb, samp], g)))
    got = array("f", run(b.read(samp)).tobytes())
    want = array("f", [v + 0.0 for v in array("f", X)])
    for f in range(F):
        assert got[f * SM:f * SM + n].tobytes() == array("f", want[f::F]).tobytes(), f"feature {f}"
    plan = b.plan()
    for kk in (2 ** i for i in range(1, SM.bit_length())):
        for j in (kk >> i for i in range(1, kk.bit_length())):
            Ps = b.buffer("u32", uniform=True, data=fk.SORT.pack(j=j, k=kk, len=SM, count=F))
            plan.dispatch(k["sort_pass"], [Ps, samp], fk.grid(-(-F * SM // 2 // fk.WG)))
    run(b.run(plan))
    got = array("f", run(b.read(samp)).tobytes())
    from py_core.forest.binning import sorted_columns
    for f, col_sorted in enumerate(sorted_columns(X, n, F)):
        assert got[f * SM:f * SM + n].tolist() == col_sorted, f"feature {f} not sorted as Python sorts"


def _sorted_columns(rng):
    """Sorted f32 columns that test the thresholds: few distinct values, exactly as many as the
    bins or one more, the largest value repeated past the top cut, long runs of ties across cut
    positions, subnormals and zeros, negative values, wide magnitudes; one value, two."""
    import struct
    tiny = [struct.unpack("<f", struct.pack("<I", b))[0] for b in (1, 2, 3, 0x7FFFFF, 0x800000)]
    cols = [[1.5], [2.0, 2.0], [-1.0, 1.0], [0.0] * 7 + tiny + [-t for t in tiny]]
    for d in (2, 15, 16, 17, 255, 256, 257, 300, 1024, 1025):
        cols.append([float(rng.randrange(d) - d // 3) for _ in range(rng.randrange(d, 3 * d + 50))])
    cols.append([1.0] * 5000 + [i / 1000 for i in range(300)])  # the top bin: most values the max
    cols.append([0.0] * 900 + [rng.gauss(0, 1) for _ in range(400)])  # runs across the cuts
    cols.append([rng.choice((-1, 1)) * 10.0 ** rng.uniform(-40, 38) for _ in range(2000)])
    cols.append([rng.random() for _ in range(rng.randrange(3000, 9000))])
    return [sorted(v + 0.0 for v in array("f", col)) for col in cols]


@pytest.mark.parametrize("nbins, exact", [(2, 0), (3, 0), (16, 0), (255, 0), (256, 0), (16, 300),
                                          (256, 1024), (3, 2**16)])
def test_thresholds_on_the_device_are_binnings(native_backend, reference_backend, rng, nbins, exact):
    """`thresholds` (each feature's bins from its sorted sample, on the device) gives the bits
    binning.feature_bins gives on the CPU, for columns of every shape, those of one length at
    once, padded with +inf as `sample` pads them; so does its reference. With `exact`, a column
    of up to that many distinct values gets a bin each, thousands of them (16-bit bins)."""
    from py_core.forest.binning import feature_bins
    by_length = {500: [sorted(array("f", [rng.random() for _ in range(500)])) for _ in range(3)]}
    for col in _sorted_columns(rng):
        by_length.setdefault(len(col), []).append(col)
    spare = 0xDEADBEEF  # a word past the records: a grid's spare workgroup must leave it
    for (m, cols), b in itertools.product(by_length.items(), (native_backend, reference_backend)):
        k = run(b.kernel("forest", "thresholds"))
        SM = 1 << (m - 1).bit_length()
        F, W = len(cols), fk.record_words(nbins, exact, m)
        samp = array("f", [v for c in cols for v in c + [fk.INF] * (SM - m)])
        P = b.buffer("u32", uniform=True, data=fk.BINS.pack(m=m, SM=SM, F=F, nbins=nbins, exact=exact))
        sb = b.buffer("u32", data=memoryview(samp).cast("B").cast("I"))
        out = b.buffer("u32", data=array("I", [spare]) * ((F + 1) * W))
        run(b.run(b.plan().dispatch(k, [P, sb, out], fk.grid(F, 2))))  # 2-D: F odd has a spare
        got = run(b.read(out))
        assert set(got[F * W:]) == {spare}
        for f, col in enumerate(cols):
            th, lo, hi = feature_bins(col, nbins, exact)
            assert len(th) + 1 == (len(set(col)) if len(set(col)) <= max(nbins, exact) else len(th) + 1)
            want = array("f", [v for j in range(len(th) + 1) for v in (th[j] if j < len(th) else fk.INF, lo[j], hi[j])])
            assert got[f * W] == len(th) + 1, (m, f, nbins)
            assert got[f * W + 1:f * W + 1 + len(want)].tobytes() == want.tobytes(), (m, f, nbins)
        for buf in (P, sb, out):
            b.free(buf)


def test_targets_are_exact_fixed_point(native_backend, rng):
    """round(y 2^e) - M from y's f64 bits, ties to even, on the device as in exact arithmetic."""
    from py_core.forest.builder import fixed_point_scale
    for scale, offset in ((1.0, 0.0), (1e-3, 5.0), (1e6, -1e7), (1.0, 1e15), (1e-30, 0.0)):
        y = [offset + scale * rng.gauss(0, 1) for _ in range(500)]
        e, M, _ = fixed_point_scale(y)
        y += [(M + q + 0.5) / 2.0 ** e for q in range(-3, 3)]  # halfway cases (where exact in f64)
        n = len(y)
        P = native_backend.buffer("u32", uniform=True, data=fk.PARAMS.pack(**dict(
            {name: 0 for name, _ in fk.PARAMS.fields}, n=n, inv_scale=1.0, ye=e,
            ym_lo=M & fk.M32, ym_hi=(M >> 32) & fk.M32)))
        yb = native_backend.buffer("u32", data=memoryview(array("d", y)))
        out, flags = native_backend.buffer("u32", n), native_backend.buffer("u32", 1)
        kern = run(native_backend.kernel("forest", "targets"))
        run(native_backend.run(native_backend.plan().dispatch(kern, [P, yb, out, flags],
                                                              fk.grid(-(-n // fk.WG)))))
        got = array("i", run(native_backend.read(out)).tobytes()).tolist()
        from fractions import Fraction
        want = [round(Fraction(v) * Fraction(2) ** e) - M for v in y]
        assert got == want and run(native_backend.read(flags))[0] == 0
        assert max(map(abs, want)) < 2 ** 23


def test_exact_division_and_midpoints_are_the_cpus_bits(native_backend, rng):
    """div_rn (split scores, leaf values) and mid_down (thresholds) are integer steps in WGSL, so
    every GPU gets the same bits: against the CPU's correctly rounded f32 division and the exact
    largest f32 at or below the real midpoint, on random and awkward operands."""
    import struct

    def bits(x):
        return struct.unpack("<I", struct.pack("<f", x))[0]

    def f32(x):
        return struct.unpack("<f", struct.pack("<f", x))[0]

    ops = []
    for i in range(3000):
        kind = i % 5
        if kind == 0:    # integer-valued squares and counts, as the scores have
            a = f32(float(rng.randrange(1, 2**47)) ** 2 if rng.random() < 0.5 else rng.randrange(2**24))
        elif kind == 1:  # values on a decimal grid, as real features
            a = f32(round(rng.uniform(-50, 50), 1))
        elif kind == 2:  # anything finite, sign and exponent at random
            a = f32(rng.uniform(1, 2) * 2.0 ** rng.randrange(-140, 120) * rng.choice([-1, 1]))
        elif kind == 3:
            a = f32(rng.choice([0.0, 1e-45, -1e-45, 1.0, -1.0, 3.4e38, -3.4e38, 1e-38]))
        else:
            a = f32(rng.uniform(-1e6, 1e6))
        b = a + abs(a) * rng.choice([1e-7, 1e-3, 1.0, 1e20]) + rng.choice([0.0, 1e-45, 0.1, 1e30])
        b = f32(b) if b < 3.4e38 else a
        if not b > a:  # the next f32 up
            b = struct.unpack("<f", struct.pack("<I", bits(a) + (1 if a > 0 else -1)))[0] if a != 0 else 1e-45
        ops += [bits(a), bits(b), rng.choice([1, 2, 3, 7, rng.randrange(1, 2**24)])]
    n = len(ops) // 3
    out = []
    for backend in (ReferenceBackend(), native_backend):
        kern = run(backend.kernel("forest", "exact_ops"))
        P = backend.buffer("u32", uniform=True, data=fk.PARAMS.pack(**{k: 0 for k, _ in fk.PARAMS.fields} | {"n": n}))
        src = backend.buffer("u32", data=array("I", ops))
        dst = backend.buffer("u32", 2 * n)
        run(backend.run(backend.plan().dispatch(kern, [P, src, dst], fk.grid(-(-n // 256)))))
        out.append(run(backend.read(dst)).tolist())
    want, got = out
    assert got == want, [(ops[3 * (j // 2):3 * (j // 2) + 3], got[j], want[j])
                         for j in range(2 * n) if got[j] != want[j]][:5]
    for i in range(0, n, 7):  # the reference itself: mid_down is the largest f32 <= the midpoint
        a, b = (struct.unpack("<f", struct.pack("<I", v))[0] for v in ops[3 * i:3 * i + 2])
        from fractions import Fraction
        t = struct.unpack("<f", struct.pack("<I", want[2 * i + 1]))[0]
        mid = (Fraction(a) + Fraction(b)) / 2
        assert a <= t < b and Fraction(t) <= mid


def test_a_node_scans_the_features_scikit_learn_draws():
    """scikit-learn's splitter counts every feature it draws, constant or not, and draws past
    max_features only until one varies (sklearn/tree/_splitter.pyx): of a node's order (ranks),
    the varying features among the first mf, or the first varying one if none of those varies."""
    varying = [(1, 4), (3, 0), (5, 2)]  # (rank, feature) of the features that vary, sorted
    assert fk.scanned(varying, 2) == [(1, 4)]  # ranks 0 and 1 drawn: rank 0 is constant
    assert fk.scanned(varying, 4) == [(1, 4), (3, 0)]
    assert fk.scanned(varying[1:], 2) == [(3, 0)]  # ranks 0, 1 constant: drawn on to rank 3
    assert fk.scanned(varying, 6) == varying and fk.scanned([], 3) == []
