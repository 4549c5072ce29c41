"""The job layer, on top of the algorithms: what the page and the server's runners execute.

`jobs.py` (the context, `run_job`, the session), `results.py` (how a result crosses to the page),
`kinds.py` (what a kind is, and the registry), `forest_job.py`, `transformer_job.py`,
`tool_jobs.py` (the kinds that are no model).
"""
from ..errors import JobError, Stopped
from ..params import ParamError
from .jobs import SYNTHETIC, Context, Session, run_job, synthetic_table
from .kinds import KINDS, Kind, kind, params_of

__all__ = ["KINDS", "SYNTHETIC", "Context", "JobError", "Kind", "ParamError", "Session", "Stopped",
           "kind", "params_of", "run_job", "synthetic_table"]
