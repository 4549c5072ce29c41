"""The column_mean job and its Kind.

    {"kind": "column_mean", "dataset": ID, "column": NAME, "params": {"trim": 0.1}}

Result: {"metrics": {"mean", "n"}, "timings": {"mean": seconds of the mean}}. The values are
sorted and cut here; their sum is the kind's own kernel family's (column_sum, on the tab's GPU).
"""
from __future__ import annotations

import math
import time

from py_core.errors import JobError
from py_core.jobs.kinds import Kind, Timing
from py_core.params import Param, Params, Real

from . import column_sum

PARAMS = Params("column_mean", Param("trim", 0.0, Real(0, 0.5, hi_open=True), label="Trim",
                                     help="the share of values cut off each end"))


def trimmed(values: list[float], trim: float) -> list[float]:
    """What scipy.stats.trim_mean averages: the sorted values less int(trim * n) off each end."""
    cut = int(trim * len(values))
    return sorted(values)[cut:len(values) - cut]


async def run(job: dict, backend, ctx, session=None) -> dict:
    for key in KIND.needs:
        if not isinstance(job.get(key), str):
            raise JobError(f'a column_mean job needs "{key}" (a string)')
    params = PARAMS.values(job.get("params"))
    table = await ctx.load_table(job["dataset"])
    values = [v for v in table.column(job["column"]).values if not math.isnan(v)]
    if not values:
        raise JobError(f'column {job["column"]!r} holds no numbers')
    t0 = time.perf_counter()
    kept = trimmed(values, params["trim"])
    mean = await column_sum.total(backend, kept) / len(kept)
    return {"metrics": {"mean": mean, "n": len(values)},
            "timings": {"mean": time.perf_counter() - t0}}


def cost(params: dict, shape) -> dict:
    rows, _, _ = shape()
    return {"cost": rows, "unit": "rows"}


KIND = Kind(
    name="column_mean", label="Trimmed mean", run=run, params=PARAMS,
    main_timing=Timing("mean", "Mean", "Seconds of the mean"), needs=("dataset", "column"),
    cost=cost, plots=(), exports=(), snippet=None,
    runners=("tests.kind_demo.runner:RUNNER",), tab="column_mean", panel="panel.js")
