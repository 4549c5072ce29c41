"""Kernels compiled ahead (issue 34.2): the lists the tab warms are exactly the kernels the jobs
then compile, and a job's timings say how long it waited on compiles and how many it started.

The tab's side (compiles side by side, in flight when the job asks) is e2e/test_first_click.py's.
"""
from __future__ import annotations

import asyncio

import pytest
from sklearn.datasets import load_diabetes

from py_core.forest import RandomForestRegressor
from py_core.forest.builder import forest_kernels
from py_core.gpu import get_backend
from py_core.jobs import Context, run_job
from py_core.transformer import builtin_text
from py_core.transformer.config import parse_job_params
from py_core.transformer.train import kernels as transformer_kernels

SMALL = {"preset": "micro", "n_layer": 1, "n_embd": 32, "n_head": 2, "block_size": 16, "batch_size": 2,
         "steps": 2, "eval_interval": 2, "eval_steps": 1, "sample_chars": 3, "seed": 1}


def asked(backend) -> set:
    """The kernels `backend.kernel` is asked for from now on, as (family, entry, constants' items)."""
    seen, real = set(), backend.kernel

    async def kernel(family, entry, constants=None):
        seen.add((family, entry, tuple(sorted((constants or {}).items()))))
        return await real(family, entry, constants)
    backend.kernel = kernel
    return seen


def keys(kernels) -> set:
    return {(f, e, tuple(sorted((c or {}).items()))) for f, e, c in kernels}


@pytest.mark.parametrize("wide", [True, False])
def test_the_forest_warms_the_kernels_a_fit_and_predict_compile(wide):
    """Both kernel sets (parallel_bins, the GPUs', and the CPU adapters'): fit then predict on a
    fresh backend ask for exactly forest_kernels."""
    b = get_backend("reference")
    seen = asked(b)
    X, y = load_diabetes(return_X_y=True)
    forest = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0, backend=b)
    asyncio.run(forest.fit(X[:80].tolist(), y[:80].tolist(), parallel_bins=wide))
    asyncio.run(forest.predict(X[:5].tolist()))
    assert seen == keys(forest_kernels(b, wide))


def test_the_booster_warms_the_kernels_a_fit_and_predict_compile():
    """A boosted fit (early stopping on: the validation rows' kernels too) then predict on a fresh
    backend ask for exactly boosting_kernels."""
    from py_core.boosting import HistGradientBoostingRegressor
    from py_core.boosting.grower import boosting_kernels
    b = get_backend("reference")
    seen = asked(b)
    X, y = load_diabetes(return_X_y=True)
    model = HistGradientBoostingRegressor(max_iter=2, max_leaf_nodes=4, early_stopping=True,
                                          random_state=0, backend=b)
    model = asyncio.run(model.fit(X[:80].tolist(), y[:80].tolist()))
    asyncio.run(model.predict(X[:5].tolist()))
    assert seen == keys(boosting_kernels())


@pytest.mark.parametrize("precision", ["f32", "mixed"])
def test_the_transformer_warms_the_kernels_a_run_compiles(precision):
    """A run's step, evaluation and sampling plans ask for exactly the kernels that the dry
    recording lists for its config (mixed: matmul_f16's entries and their override constants)."""
    b = get_backend("reference")
    params = dict(SMALL, precision=precision)
    cfg, run_ = parse_job_params(params)
    ahead = asyncio.run(transformer_kernels(b, cfg, 65, run_["tiles"], precision))
    seen = asked(b)
    job = {"kind": "transformer", "text": "shakespeare", "params": params}
    asyncio.run(run_job(job, b, Context(load_text=builtin_text)))
    assert seen == keys(ahead) and len(ahead) >= 16


def test_a_job_says_what_it_compiled_and_waited_for():
    """timings.compile (seconds waited on compiles) and pipelines_started: the first job of a
    fresh backend compiles its kernels, the next one none."""
    b = get_backend("reference")
    job = {"kind": "random_forest", "dataset": "diabetes", "target": "y",
           "params": {"n_estimators": 2, "max_depth": 3, "random_state": 0}}
    X, y = load_diabetes(return_X_y=True)
    csv = "\n".join([",".join([f"x{j}" for j in range(10)] + ["y"])]
                    + [",".join(map(str, [*row, t])) for row, t in zip(X[:100], y[:100])]).encode()
    ctx = Context(load_dataset=lambda i: csv)
    first = asyncio.run(run_job(job, b, ctx))["timings"]
    again = asyncio.run(run_job(job, b, ctx))["timings"]
    assert first["pipelines_started"] == len(forest_kernels(b)) and first["compile"] > 0
    assert again["pipelines_started"] == 0 and again["compile"] == 0
