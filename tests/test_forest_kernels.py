"""Each forest kernel on the native backend against its reference, on fresh random inputs.

A random forest is grown on the reference backend from random data and parameters; at a random
level, the inputs of one dispatch of the kernel under test are captured, replayed on the native
backend, and every buffer the kernel may write is compared: integers and split scores exactly,
leaf values and predictions within float tolerance. The self-test cases (`forest_cases`) run too.
"""
from __future__ import annotations

import asyncio
from array import array

import pytest

from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.gpu.reference import ReferenceBackend
from py_core.kernels import forest as fk
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
            if op[0] == "dispatch" and op[1].entry == self.entry:
                if self.left == 0:
                    self.captured = (op[3], [(b.dtype, b.uniform, array(b.handle.typecode, b.handle))
                                             for b in op[2]])
                self.left -= 1
            sub = self.plan()
            sub.ops.append(op)
            await super()._run(sub, 1)


def random_data(rng, task):
    n, F = rng.randint(20, 120), rng.randint(1, 9)
    X = [[rng.choice([rng.gauss(0, 1), float(rng.randint(0, 4))]) for _ in range(F)] for _ in range(n)]
    if task == "regression":
        y = [sum(r) * rng.uniform(-3, 3) + rng.gauss(0, 0.5) for r in X]
    else:
        k = rng.randint(2, 4)
        y = [int(abs(r[0] * 2 + rng.gauss(0, 1))) % k for r in X]
    return X, y


def random_forest(rng, task, backend, bootstrap=None):
    kw = dict(n_estimators=rng.randint(1, 6), random_state=rng.randrange(2**32),
              max_depth=rng.choice([None, 2, 4, 7]), min_samples_leaf=rng.choice([1, 1, 2, 3]),
              min_samples_split=rng.choice([2, 2, 5]),
              bootstrap=rng.random() < 0.8 if bootstrap is None else bootstrap,
              n_bins=rng.choice([256, 256, 7, 3]), max_features=rng.choice([None, "sqrt", 0.5, 1]),
              backend=backend)
    kw["oob_score"] = kw["bootstrap"]
    if task == "regression":
        return RandomForestRegressor(**kw)
    return RandomForestClassifier(criterion=task, **kw)


ENTRIES = ["check_finite", "targets", "bin_features", "bootstrap", "init_trees", "hist_build",
           "hist_prefix", "split_scan", "split_pick", "alloc", "hist_clear", "route_rows", "finalize",
           "importance", "oob", "predict"]
PER_LEVEL = {"hist_build", "hist_prefix", "split_scan", "split_pick", "alloc", "hist_clear",
             "route_rows"}  # the others run once a fit or a batch: capture their first dispatch


@pytest.mark.parametrize("task", ["regression", "gini", "entropy"])
@pytest.mark.parametrize("entry", ENTRIES)
def test_kernel_matches_reference(native_backend, rng, entry, task):
    if entry == "targets" and task != "regression":
        pytest.skip("regression targets only")
    X, y = random_data(rng, task)
    for attempt in range(5):  # a small random forest may never reach the chosen dispatch
        ref = CapturingBackend(entry, rng.randrange(6) if entry in PER_LEVEL and attempt < 3 else 0)
        forest = random_forest(rng, task, ref, bootstrap=True if entry == "oob" else None)
        run(forest.fit(X, y))
        if entry == "predict":
            run(forest.predict(X[:7]))
        if ref.captured is not None:
            break
    assert ref.captured is not None, f"no {entry} dispatch happened"
    grid, bufs = ref.captured

    def replay(backend):
        kern = run(backend.kernel("forest", entry))
        made = [backend.buffer(dtype, data=data, uniform=uniform) for dtype, uniform, data in bufs]
        total = grid[0] * grid[1] * grid[2]
        g = fk.grid(total, backend.limits["maxComputeWorkgroupsPerDimension"])
        run(backend.run(backend.plan().dispatch(kern, made, g)))
        return [run(backend.read(b)) for b in made]

    want = replay(ReferenceBackend())
    got = replay(native_backend)
    for i, (g, w) in enumerate(zip(got, want)):
        if g.typecode == "f":  # inputs may hold inf (a feature's last bin): equal is fine
            pairs = [(a, b) for a, b in zip(g, w) if a != b]
            err, _, ok = max_error([a for a, _ in pairs], [b for _, b in pairs], atol=1e-6, rtol=1e-5)
            assert ok, f"{entry} binding {i}: largest error {err}"
        else:
            diff = [j for j, (a, b) in enumerate(zip(g, w)) if a != b]
            assert not diff, f"{entry} binding {i}: {len(diff)} words differ, first at {diff[0]}: " \
                             f"native {g[diff[0]]}, reference {w[diff[0]]}"


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
    assert [fk.pcg(x) for x in (0, 1, 0xFFFFFFFF)] == [129708002, 2831084092, 3861530882]
    assert fk.hash3(42, 0, 0) == 4004461565 and fk.hash3(1, 2, 3) == 3404032338
    for F in (1, 2, 3, 7, 64, 100):
        hb = fk.half_bits(F)
        for key in (0, 12345, 0xFFFFFFFF):
            ranks = sorted(fk.feature_rank(key, f, hb, F) for f in range(F))
            assert ranks == list(range(F))  # a permutation
