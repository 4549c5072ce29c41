"""The job layer, on top of the algorithms: what the page and the server's runners execute.

`jobs.py` (the context, `run_job`, the session), `results.py` (how a result crosses to the page),
`forest_job.py`, `transformer_job.py`.
"""
from ..errors import JobError, Stopped
from .jobs import RUNNERS, SYNTHETIC, Context, Session, params_of, run_job, synthetic_table
from .params import ParamError

__all__ = ["RUNNERS", "SYNTHETIC", "Context", "JobError", "ParamError", "Session", "Stopped",
           "params_of", "run_job", "synthetic_table"]
