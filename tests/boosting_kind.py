"""A stand-in for gradient boosting's Kind until py_core/jobs/boosting_job.py's KIND lands: the
server's parts as that KIND names them (its cost, exports, snippet and runners), its job left
out (the tab's booster is another branch's). Tests register it only where the registry lacks
the kind (`register`), so they run on the real KIND once it is there."""
from __future__ import annotations

from py_core.boosting import PARAMS
from py_core.boosting.cost import cost
from py_core.errors import JobError
from py_core.jobs.kinds import KINDS, Kind, Timing
from server.runners.boosters import RUNNERS

LINE = "gradient_boosting=tests.boosting_kind:KIND"  # the registry line (PLAYGROUND_KINDS)


async def run(job: dict, backend, ctx, session=None) -> dict:
    raise JobError("the stand-in gradient_boosting kind runs no job in the tab")


KIND = Kind(
    name="gradient_boosting", label="Gradient boosting", run=run, params=PARAMS,
    main_timing=Timing("fit", "Fit", "Seconds to fit"), needs=("dataset", "target"), cost=cost,
    plots=(), exports=("json", "onnx"), snippet=("boosting", "json", "server.snippets:boosting"),
    runners=RUNNERS, tab="", panel="")


def register(monkeypatch) -> None:
    """The kind in this process's registry and its comparison workers' (PLAYGROUND_KINDS), unless
    py_core declares it already."""
    if "gradient_boosting" in KINDS:
        return
    monkeypatch.setitem(KINDS, *LINE.split("=", 1))
    monkeypatch.setenv("PLAYGROUND_KINDS", LINE)
