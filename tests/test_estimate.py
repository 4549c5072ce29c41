"""The forest's estimate before Train counts the work (rows, features, trees, depth), learns the
tab's own rates from its measured runs, and says before Train when a forest would take minutes or
cannot fit the adapter (the fit's own check, sizes.check_fits)."""
from __future__ import annotations

import pytest

from py_core.forest import RandomForestRegressor
from py_core.gpu import LimitError
from py_core.jobs.estimate import MINUTES, PRIOR, forest_estimate, forest_work, learn_rates, seconds

SMALL = {"n_estimators": 20, "max_depth": 8}
SWIFTSHADER = {"maxStorageBufferBindingSize": 128 * 2**20, "maxBufferSize": 256 * 2**20}


def estimate(rows, features=10, params=SMALL, samples=(), **extra):
    return forest_estimate({"rows": rows, "features": features, "params": params, "n_classes": 0,
                            "adapter_class": "software", "samples": list(samples), **extra})


def test_the_estimate_counts_rows_features_trees_and_depth():
    # The walk: "about 1 s" for 20,000 rows that took 11 s, "about 17 s" for 2,000,000.
    base = estimate(20_000)
    assert estimate(2_000_000)["seconds"] > 40 * base["seconds"] and estimate(2_000_000)["minutes"]
    assert not base["minutes"] and base["seconds"] < MINUTES
    assert estimate(20_000, features=40)["seconds"] > 2 * base["seconds"]
    assert estimate(20_000, params={**SMALL, "n_estimators": 200})["seconds"] > 9 * base["seconds"]
    assert estimate(20_000, params={**SMALL, "max_depth": 16})["seconds"] > 1.5 * base["seconds"]
    # Unbounded trees on 20,000 rows grow to about twice a balanced tree's 15 levels; on 300 rows
    # the data stops them before a max_depth of 30.
    assert forest_work(20_000, 10, {"n_estimators": 1})["levels"] == 30
    assert forest_work(300, 10, {"n_estimators": 1, "max_depth": 30})["levels"] == 18
    assert estimate(20_000, params={"max_depth": -1}) == {
        "error": "max_depth: must be null or an integer in 1..2147483647, not -1"}  # the forest's table


def test_rates_are_learned_from_the_tabs_measured_runs():
    """SwiftShader's two measured forests (bench/results/2026-11-22-swiftshader-gap.md): small data
    pays by the tree-level, large data by the cell; learned from both, each is estimated at what it
    took; from one, that one is."""
    diabetes = {**forest_work(353, 10, {"n_estimators": 200, "max_depth": 16}), "seconds": 40.15}
    million = {**forest_work(800_000, 20, {"n_estimators": 2, "max_depth": 12}), "seconds": 33.28}
    rates = learn_rates(PRIOR["software"], [diabetes, million])
    assert seconds(rates, diabetes) == pytest.approx(40.15, rel=1e-6)
    assert seconds(rates, million) == pytest.approx(33.28, rel=1e-6)
    assert rates["level"] != PRIOR["software"]["level"] and rates["cell"] != PRIOR["software"]["cell"]
    one = learn_rates(PRIOR["software"], [diabetes])
    assert seconds(one, diabetes) == pytest.approx(40.15)
    assert learn_rates(PRIOR["software"], []) == PRIOR["software"]  # the prior before any run
    page = estimate(353, params={"n_estimators": 200, "max_depth": 16}, samples=[million, diabetes])
    assert page["seconds"] == pytest.approx(40.15, rel=1e-6) and page["learned"] == 2


def test_a_forest_the_adapter_cannot_hold_is_refused_before_train(reference_backend):
    """With SwiftShader's binding limit (128 MiB) a forest grown to its leaves on 5M rows needs
    305 MiB of node records a tree: refused before Train with the fit's own message and its way
    out (a max_depth); at depth 12 it fits."""
    refused = estimate(5_000_000, 20, {"n_estimators": 100}, limits=SWIFTSHADER)["refused"]
    assert refused.startswith("the node records of one tree need 305.2 MiB") and "max_depth (at most 21" in refused
    assert estimate(5_000_000, 20, {"n_estimators": 100, "max_depth": 12}, limits=SWIFTSHADER)["refused"] is None
    assert estimate(20_000, limits=SWIFTSHADER)["refused"] is None
    # The same limit on a backend refuses the same fit with the same words when it starts.
    from py_core.forest.sizes import check_fits
    reference_backend.limits, saved = dict(reference_backend.limits, **SWIFTSHADER), reference_backend.limits
    try:
        with pytest.raises(LimitError) as exc:
            check_fits(reference_backend, 5_000_000, 20, RandomForestRegressor(n_estimators=100)._spec(5_000_000, 20, 1))
    finally:
        reference_backend.limits = saved
    assert str(exc.value) == refused


def test_a_generated_table_the_tab_cannot_hold_is_refused_before_it_is_generated():
    """50M rows of friedman1's 10 features need 8.2 GiB (the columns, then the prepared rows):
    refused where 1.5 GiB of the tab's Python memory is left; the page's 1,000 rows are not, nor
    anything outside Pyodide (no room counted)."""
    from py_core.jobs import JobError
    from py_core.jobs.estimate import table_fits
    big = "synthetic:friedman1?n_samples=50000000&n_features=10&seed=0"
    assert table_fits(big, 3 * 2**29) == ("friedman1 with 50,000,000 rows of 10 features needs about 8.2 GiB of "
                                          "the tab's Python memory, and 1.5 GiB is left: use fewer rows or features")
    assert table_fits("synthetic:friedman1?n_samples=1000", 3 * 2**29) is None
    assert table_fits("synthetic:moons?n_samples=50000000", 3 * 2**29).startswith("moons with 50,000,000 rows of 2 features")
    assert table_fits(big, None) is None
    with pytest.raises(JobError, match="no parameter 'rows'"):
        table_fits("synthetic:moons?rows=5", None)
