"""Trees at scikit-learn's defaults (max_depth None), grown a level a submission past the first few:
their small nodes split from their rows without histograms (split_small), and their levels queued
ahead of the readback of their open pairs. Both change how fast the forest grows, never the forest:
each test compares with the trees grown the old way, node for node (issue 34, point 1)."""
from __future__ import annotations

import asyncio

import pytest

from py_core.forest import RandomForestClassifier, RandomForestRegressor, builder
from py_core.kernels.forest import CRITERIA


def run(coro):
    return asyncio.run(coro)


def trees(forest) -> tuple:
    t = forest._forest
    return tuple(bytes(memoryview(x)) for x in (t.counts, t.feature, t.threshold, t.left, t.value))


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    return X.tolist(), y.tolist()


@pytest.fixture(scope="module")
def wine():
    from sklearn.datasets import load_wine
    X, y = load_wine(return_X_y=True)
    return X.tolist(), y.tolist()


@pytest.mark.parametrize("kind", ["regression", "gini", "entropy"])
def test_small_nodes_split_from_their_rows_grow_the_same_trees(native_backend, monkeypatch, diabetes, wine, kind):
    """scikit-learn's diabetes (442 rows) and wine (178 rows, 3 classes) at scikit-learn's
    defaults: the nodes of up to row_scan_rows rows split by split_small, from their rows (on the
    CPUs' kernels and the GPUs'), give the trees of histograms alone, node for node."""
    X, y = diabetes if kind == "regression" else wine

    def fit(row_scan, wide):
        monkeypatch.setattr(builder, "row_scan_rows", lambda C, crit: row_scan or 0)
        kw = dict(n_estimators=2, random_state=5, backend=native_backend)
        forest = RandomForestRegressor(**kw) if kind == "regression" else RandomForestClassifier(criterion=kind, **kw)
        ran, submit = set(), native_backend.run

        async def counted(plans, repeat=1):  # the kernels the fit runs
            ran.update(op.kernel.entry for p in (plans if isinstance(plans, list) else [plans])
                       for op in p.ops if hasattr(op, "kernel"))
            await submit(plans, repeat)
        monkeypatch.setattr(native_backend, "run", counted)
        run(forest.fit(X, y, parallel_bins=wide))
        monkeypatch.setattr(native_backend, "run", submit)
        forest.ran = ran
        return forest

    rows = builder.row_scan_rows(4, CRITERIA["squared_error" if kind == "regression" else kind])  # C: 3 classes + rows
    histograms = fit(0, False)
    assert "split_small" not in histograms.ran
    for wide in (False, True):
        small = fit(rows, wide)
        assert "split_small" in small.ran
        assert trees(small) == trees(histograms)


class Reads:
    """Counts the reads of the trees' open pairs a fit waits on with nothing queued since they
    were started (on a GPU: a round trip of idle GPU each)."""

    def __init__(self, backend):
        self.b, self.submitted, self.idle, self.reads = backend, 0, 0, 0
        self.grower = None

    def __enter__(self):
        b, counter = self.b, self
        self.saved = b.run, b.read, b.read_soon
        run_, read, soon = self.saved

        async def counted_run(plan, repeat=1):
            counter.submitted += 1
            await run_(plan, repeat)

        async def counted_read(buf, n=None):
            if counter.grower is not None and buf is counter.grower.meta:
                counter.reads += 1
                counter.idle += 1
            return await read(buf, n)

        def counted_soon(parts, js=False):
            got = soon(parts, js)
            g = counter.grower
            if g is None or not any(parts[0][0] is x for x in getattr(g, "snap", ())):
                return got
            counter.reads += 1
            at = counter.submitted

            class Waited:
                def __await__(self):
                    if counter.submitted == at:
                        counter.idle += 1
                    return got.__await__()
            return Waited()

        b.run, b.read, b.read_soon = counted_run, counted_read, counted_soon
        return self

    def __exit__(self, *exc):
        self.b.run, self.b.read, self.b.read_soon = self.saved


def test_deep_levels_run_ahead_of_the_readback_of_their_open_pairs(native_backend, monkeypatch, diabetes):
    """Past its first levels a deep tree reads back how many slots its next level has open. The
    host reads them after each level while the next one (in a tree's tail, the next three) is
    already queued: of a fit's reads, only the first and the last few find nothing queued behind
    them, where each did before. The trees are those grown a level a readback."""
    X, y = diabetes
    grown, keep = {}, builder.Grower._tree_buffers
    for ahead, tail in ((0, 0), (builder.AHEAD, builder.TAIL_AHEAD)):
        monkeypatch.setattr(builder, "AHEAD", ahead)
        monkeypatch.setattr(builder, "TAIL_AHEAD", tail)
        forest = RandomForestRegressor(n_estimators=2, random_state=1, backend=native_backend)
        with Reads(native_backend) as reads:
            def tree_buffers(g, reads=reads):
                reads.grower = g
                keep(g)
            monkeypatch.setattr(builder.Grower, "_tree_buffers", tree_buffers)
            run(forest.fit(X, y))
        grown[ahead] = (trees(forest), reads.reads, reads.idle)
    (before, reads0, idle0), (after, reads1, idle1) = grown[0], grown[builder.AHEAD]
    assert after == before
    assert reads0 >= 8 and idle0 == reads0  # a round trip a level
    assert idle1 <= 2 + builder.TAIL_AHEAD and reads1 >= reads0


def test_deep_levels_go_in_passes_of_their_histogram_slots_alone(native_backend, monkeypatch, diabetes):
    """Where a level's histograms exceed a buffer (a 256 KiB binding here: 4 slots a tree a pass,
    as 128 MiB adapters at 20,000 rows), a deep level builds its histograms in passes of the slots
    that have one (BUILT or derived, numbered by alloc) and splits its SMALL slots, which need
    none, in passes of their own: hist_build, over every row of the batch, runs a pass of the
    first kind, no longer one a pass of the level's slots, and not at all in a level whose
    slots are all SMALL (the histogram slots a level has at most: twice the last level's, as
    read back with its open pairs). The trees are those of whole levels."""
    X, y = diabetes
    plans, plan_sizes = [], builder.plan_sizes
    monkeypatch.setattr(builder, "plan_sizes", lambda *a, **k: plans.append(plan_sizes(*a, **k)) or plans[-1])

    def fit():
        forest = RandomForestRegressor(n_estimators=2, random_state=3, backend=native_backend)
        levels, submit = {}, native_backend.run

        async def counted(got, repeat=1):  # each level's dispatches, by kernel
            for plan in got if isinstance(got, list) else [got]:
                for i, op in enumerate(plan.ops):
                    name, _, level = plan.label(i).partition(builder.LEVEL_MARK)
                    if level:
                        c = levels.setdefault(int(level), {})
                        c[op.kernel.entry] = c.get(op.kernel.entry, 0) + 1
            await submit(got, repeat)
        monkeypatch.setattr(native_backend, "run", counted)
        run(forest.fit(X, y))
        monkeypatch.setattr(native_backend, "run", submit)
        return trees(forest), levels

    whole, _ = fit()
    limits = dict(native_backend.limits)
    try:
        native_backend.limits["maxStorageBufferBindingSize"] = 2**18
        grown, levels = fit()
    finally:
        native_backend.limits.update(limits)
    z = plans[-1]
    assert z.S_h < z.S and grown == whole
    small = builder.row_scan_rows(z.C, CRITERIA["squared_error"])
    most = -(-(len(y) // (small + 1)) // z.S_h)  # histogram passes a level: n // (small + 1) slots at most
    deep = [c for c in levels.values() if c.get("split_small", 0) > most]  # levels of many slots
    assert deep and all(c.get("hist_build", 0) <= most for c in deep)
    assert any("hist_build" not in c for c in deep)  # a level whose slots are all SMALL: none
