"""A job kind's parameters, declared once: name, default, what values it takes, what it means.

One table a kind, beside what it parameterizes (`forest.PARAMS`: the estimators', which
`forest_job.PARAMS` extends; `transformer_job.PARAMS`), reached through the kind
(py_core/jobs/kinds.py: `kind(name).params`). Below every layer that uses it (the estimators
validate from it too), so it imports nothing of py_core. The same table checks a job's params in the tab before it
runs, on the server when the run is posted (POST /api/runs: 400 naming the field), and wherever
the server reads them again: the caps' cost (server/jobcost.py) and every runner take their
values from `values`, never from the raw JSON, so what is costed is what runs.

    PARAMS.check({"n_estimators": "1000000"})
        ParamError: n_estimators: must be an integer in 1..2147483647, not '1000000'
    PARAMS.check(params)    the params as sent, checked (unknown names refused too)
    PARAMS.values(params)   checked, with every parameter's default filled in

Types are strict, as JSON gives them: an integer is an int (not a bool, not 100.0, not "100");
a number is finite; a `Real(..., ints=False)` takes floats only, where an int means something
else (scikit-learn's `max_features=1` is one feature, `1.0` all of them). Standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

BIG = 2**31 - 1  # an upper bound for counts that have no natural one: no integer is unbounded


class ParamError(ValueError):
    """A parameter the table refuses; `name` is its name ("" for the params as a whole)."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}" if name else message)
        self.name, self.message = name, message


@dataclass(frozen=True)
class Int:
    lo: int = 0
    hi: int = BIG

    def accepts(self, v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and self.lo <= v <= self.hi

    def what(self) -> str:
        return f"an integer in {self.lo}..{self.hi}"

    def describe(self) -> dict:
        return {"type": "integer", "min": self.lo, "max": self.hi}


@dataclass(frozen=True)
class Real:
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    ints: bool = True  # whether an int stands for the same number (lr=1), or means something else

    def accepts(self, v) -> bool:
        if isinstance(v, bool) or not isinstance(v, float if not self.ints else (int, float)):
            return False
        if not math.isfinite(v):
            return False
        if self.lo is not None and (v < self.lo or self.lo_open and v == self.lo):
            return False
        return self.hi is None or not (v > self.hi or self.hi_open and v == self.hi)

    def what(self) -> str:
        noun = "a number" if self.ints else "a fraction"
        if self.lo is None and self.hi is None:
            return noun
        if self.hi is None:
            return f"{noun} {'>' if self.lo_open else '>='} {self.lo:g}"
        return (f"{noun} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}"
                f"{')' if self.hi_open else ']'}")

    def describe(self) -> dict:
        return {"type": "number" if self.ints else "fraction", "min": self.lo, "max": self.hi,
                "min_open": self.lo_open, "max_open": self.hi_open}


@dataclass(frozen=True)
class Choice:
    options: tuple

    def accepts(self, v) -> bool:
        return isinstance(v, str) and v in self.options

    def what(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def describe(self) -> dict:
        return {"type": "choice", "options": list(self.options)}


@dataclass(frozen=True)
class Bool:
    def accepts(self, v) -> bool:
        return isinstance(v, bool)

    def what(self) -> str:
        return "true or false"

    def describe(self) -> dict:
        return {"type": "boolean"}


@dataclass(frozen=True)
class Null:
    def accepts(self, v) -> bool:
        return v is None

    def what(self) -> str:
        return "null"

    def describe(self) -> dict:
        return {"type": "null"}


@dataclass(frozen=True)
class Text:
    max_len: int = 256

    def accepts(self, v) -> bool:
        return isinstance(v, str) and len(v) <= self.max_len

    def what(self) -> str:
        return f"a string of at most {self.max_len} characters"

    def describe(self) -> dict:
        return {"type": "string", "max_length": self.max_len}


class Param:
    """One parameter: its default, the types it takes (any one of them), and for the page's form
    its label (short: "Trees", also what the form's messages call it) and help text."""

    def __init__(self, name: str, default, *types, label: str = "", help: str = ""):
        self.name, self.default, self.types = name, default, types
        self.label, self.help = label or name, help

    def describe(self) -> dict:
        """As GET /api/kinds serves it: what the page's form reads its labels and ranges from."""
        return {"name": self.name, "default": self.default, "label": self.label, "help": self.help,
                "types": [t.describe() for t in self.types]}

    def what(self) -> str:
        return " or ".join(t.what() for t in self.types)

    def check(self, value):
        if not any(t.accepts(value) for t in self.types):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise ParamError(self.name, f"must be {self.what()}, not {shown}")
        return value


class Params:
    """A kind's table. `whole(params)`, when given, checks what one parameter alone cannot (a
    transformer's n_embd a multiple of n_head), raising ValueError."""

    def __init__(self, label: str, *params: Param, whole=None):
        self.label = label  # "forest": in "unknown forest parameter"
        self.params = {p.name: p for p in params}
        self.whole = whole

    def __iter__(self):
        return iter(self.params.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self.params)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self}

    def extend(self, label: str, *params: Param, whole=None) -> Params:
        """This table and more parameters (a job's beside its estimator's)."""
        return Params(label, *self, *params, whole=whole or self.whole)

    def describe(self) -> list:
        return [p.describe() for p in self]

    def check(self, params) -> dict:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ParamError("", "params must be an object")
        out = {}
        for name, value in params.items():
            if name not in self.params:
                raise ParamError(name, f"unknown {self.label} parameter; one of "
                                 + ", ".join(self.params))
            out[name] = self.params[name].check(value)
        if self.whole is not None:
            try:
                self.whole(out)
            except ParamError:
                raise
            except (ValueError, TypeError) as exc:
                raise ParamError("", str(exc)) from None
        return out

    def values(self, params) -> dict:
        return {**self.defaults(), **self.check(params)}
