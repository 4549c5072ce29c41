"""What a job kind is, declared once beside its job module, and the registry of them.

A `Kind` says everything the rest of the project needs to know about a kind: its parameters (a
`py_core.params.Params` table: types, ranges, defaults, labels and help for the page's form), its
main timing (the one number the run and comparison tables show), the job fields it needs, what a
server job of it costs, its plots and exports, its snippet and its comparison runners. From these
are derived: the tab's dispatch (`run_job`), the server's validation and caps (POST /api/runs; a
kind the registry lacks is refused, one without a cost never runs on the server), the run and
comparison tables, the snippets, and the page's forms and tables (GET /api/kinds serves
`describe()`).

Server-side parts are named by "module:attr" (a runner, a snippet function), imported only by the
server, so the tab's worker loads none of them, nor the kinds it does not run.

The registry is one line a kind. A kind in its own package adds its line with `register`, or, for
every process of a server (its comparison workers too), with the environment variable
PLAYGROUND_KINDS="name=module:attr,..." (tests/kind_demo is such a kind, with its own kernel family
and panel: the server serves its package to the tab, whose worker unpacks and registers it).
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, fields

KINDS = {  # name: where its Kind is declared
    "selftest": "py_core.jobs.tool_jobs:SELFTEST",
    "random_forest": "py_core.jobs.forest_job:KIND",
    "gradient_boosting": "py_core.jobs.boosting_job:KIND",
    "transformer": "py_core.jobs.transformer_job:KIND",
    "dataset_load": "py_core.jobs.tool_jobs:DATASET_LOAD",
    "suite": "py_core.jobs.tool_jobs:SUITE",
}


@dataclass(frozen=True)
class Timing:
    """The run's "main" time: `key` in its timings, and its words in the page's tables."""
    key: str       # "fit"
    label: str     # the column's heading: "Fit"
    words: str     # the chart's: "Seconds to fit"


@dataclass(frozen=True)
class Kind:
    """One job kind. Every field is given (no defaults): None or () says "this kind has none"."""
    name: str
    label: str                  # in words: "Random forest"
    run: object                 # async (job, backend, ctx, session) -> result; None: a run the
                                # page composes (a suite), never a job
    params: object              # its Params table, or None: it takes none
    main_timing: Timing | None  # None: no main phase (the tables show the total alone)
    needs: tuple                # the job's fields that must be non-empty strings to run it again
    cost: object                # (params as given and checked, data) -> {"cost", "unit", ...}:
                                # what a server job costs (server/jobcost.py `Data`: `data()` gives
                                # the data set's (rows, columns, generated), `data.classes()` its
                                # target's most classes); None: no server job
    plots: tuple                # what its result draws (extra.plots, or metrics' curves)
    exports: tuple              # its model's downloads ("onnx", "safetensors", ...)
    snippet: tuple | None       # (file stem, extension, "module:function" of the snippet that
                                # loads the download elsewhere), or None
    runners: tuple              # "module:attr" of the server's comparison runners, in order
    tab: str                    # the page's panel that opens a run's set-up ("" none)
    panel: str                  # the ES module of the kind's own panel, which the page shows as
                                # tab `tab` titled `label` (it exports mount(root, playground)):
                                # a URL ("/web/panels/forest.js") or a file of the kind's own
                                # package ("panel.js": server/kinds.py serves it); "" none

    def describe(self) -> dict:
        """As GET /api/kinds serves it (the page's tables and forms read it). `code`: for a kind
        declared outside py_core, the zip of its package that the tab's worker unpacks and its
        registry line's "module:attr" (py_core's kinds are in the wheel already)."""
        path = outside(self.name)
        home = f"/kinds/{self.name}/"
        return {"name": self.name, "label": self.label, "job": self.run is not None,
                "params": self.params.describe() if self.params is not None else [],
                "main_timing": None if self.main_timing is None else {
                    "key": self.main_timing.key, "label": self.main_timing.label,
                    "words": self.main_timing.words},
                "needs": list(self.needs), "costed": self.cost is not None,
                "plots": list(self.plots), "exports": list(self.exports),
                "snippet": self.snippet[0] if self.snippet else None,
                "runners": [load(r).name for r in self.runners], "tab": self.tab,
                "panel": self.panel if not self.panel or self.panel.startswith("/") else home + self.panel,
                "code": {"zip": home + PACKAGE_ZIP, "path": path} if path else None}


PARTS = tuple(f.name for f in fields(Kind))
PACKAGE_ZIP = "package.zip"  # /kinds/<name>/package.zip: a kind's own package, for the tab


def load(path: str):
    """The object a "module:attr" names."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def register(name: str, path: str) -> None:
    """One registry line: kind `name` is declared at `path` ("module:attr")."""
    KINDS[name] = path


for _line in filter(None, os.environ.get("PLAYGROUND_KINDS", "").split(",")):
    register(*_line.strip().split("=", 1))


def outside(name: str) -> str:
    """The registry line ("module:attr") of kind `name` when it is declared in a package of its
    own, outside py_core (and so outside the tab's wheel); else ""."""
    path = KINDS.get(name, "")
    return path if path and path.split(".", 1)[0] != "py_core" else ""


def kind(name) -> Kind | None:
    """The kind called `name`, or None for one the registry lacks."""
    path = KINDS.get(name) if isinstance(name, str) else None
    if path is None:
        return None
    got = load(path)
    if not isinstance(got, Kind) or got.name != name:
        raise TypeError(f"{path} is no Kind called {name!r}")
    return got


def all_kinds() -> list[Kind]:
    return [kind(name) for name in KINDS]


def params_of(name: str):
    """The `Params` table of a job kind, or None for a kind without params (selftest) or unknown."""
    k = kind(name)
    return k.params if k is not None else None
