"""The column_mean job and its Kind.

    {"kind": "column_mean", "dataset": ID, "column": NAME, "params": {"trim": 0.1}}

Result: {"metrics": {"mean", "n"}, "timings": {"mean": seconds of the mean}}.
"""
from __future__ import annotations

import math
import time

from py_core.errors import JobError
from py_core.jobs.kinds import Kind, Timing
from py_core.params import Param, Params, Real

PARAMS = Params("column_mean", Param("trim", 0.0, Real(0, 0.5, hi_open=True), label="Trim",
                                     help="the share of values cut off each end"))


def trim_mean(values: list[float], trim: float) -> float:
    """scipy.stats.trim_mean: int(trim * n) values cut off each end of the sorted values."""
    cut = int(trim * len(values))
    kept = sorted(values)[cut:len(values) - cut]
    return math.fsum(kept) / len(kept)


async def run(job: dict, backend, ctx, session=None) -> dict:
    for key in KIND.needs:
        if not isinstance(job.get(key), str):
            raise JobError(f'a column_mean job needs "{key}" (a string)')
    params = PARAMS.values(job.get("params"))
    table = await ctx.load_table(job["dataset"])
    values = [v for v in table.column(job["column"]).values if not math.isnan(v)]
    t0 = time.perf_counter()
    mean = trim_mean(values, params["trim"])
    return {"metrics": {"mean": mean, "n": len(values)},
            "timings": {"mean": time.perf_counter() - t0}}


def cost(params: dict, shape) -> dict:
    rows, _, _ = shape()
    return {"cost": rows, "unit": "rows"}


KIND = Kind(
    name="column_mean", label="Trimmed mean", run=run, params=PARAMS,
    main_timing=Timing("mean", "Mean", "Seconds of the mean"), needs=("dataset", "column"),
    cost=cost, plots=(), exports=(), snippet=None,
    runners=("tests.kind_demo.runner:RUNNER",), tab="")
