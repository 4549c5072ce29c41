"""The job kinds the server knows, as the page reads them (py_core/jobs/kinds.py's registry).

    GET /api/kinds   {"kinds": [{"name", "label", "job", "params": [{"name", "default", "label",
                     "help", "types": [{"type", "min", "max", "options", ...}]}], "main_timing":
                     {"key", "label", "words"}, "needs", "costed", "plots", "exports", "snippet",
                     "runners", "tab"}, ...]}, in the registry's order

The page fetches it once at start (web/kinds.js): its run and comparison tables' main time and its
forms' labels, help and ranges come from here, so they are the server's own.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from py_core.jobs.kinds import all_kinds


async def get_kinds(request: Request) -> JSONResponse:
    return JSONResponse({"kinds": [k.describe() for k in all_kinds()]})


routes = [Route("/api/kinds", get_kinds, methods=["GET"])]
