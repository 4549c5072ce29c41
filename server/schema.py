"""A small per-field schema for stored runs: types and lengths, checked at POST.

The run's own fields (id, kind, backend, adapter...) and the parts of config and metrics that the
page and the run summaries read (data set, metric names, adapter strings, the self-test's kernel
table, a suite's run list) have a declared type and a length cap; anything else inside config,
metrics, env and extra stays free-form JSON (jsonbody.py has already bounded its size, depth and
array lengths). A value of the wrong type is refused with a 400 naming its dotted path, so a
stored run never holds an object where the page expects a string.

    check(value, spec, "adapter")   # raises ClientError(400, "must be ...", field="adapter.vendor")

A spec is one of: Str(max_len), Num(min=None), Int(), Bool(), Null(), Any(), Arr(item, max_items),
Obj(fields, other), or a tuple of specs (any one of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from server.errors import ClientError


@dataclass(frozen=True)
class Str:
    max_len: int = 256

    def what(self) -> str:
        return f"a string of at most {self.max_len} characters"


@dataclass(frozen=True)
class Num:
    min: float | None = None

    def what(self) -> str:
        return "a number" if self.min is None else f"a number >= {self.min:g}"


@dataclass(frozen=True)
class Int:
    min: int = 0

    def what(self) -> str:
        return f"an integer >= {self.min}"


@dataclass(frozen=True)
class Bool:
    def what(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Null:
    def what(self) -> str:
        return "null"


@dataclass(frozen=True)
class Any:
    def what(self) -> str:
        return "any JSON value"


@dataclass(frozen=True)
class Arr:
    item: object = field(default_factory=Any)
    max_items: int = 100_000

    def what(self) -> str:
        return f"an array of at most {self.max_items} items"


@dataclass(frozen=True)
class Obj:
    fields: dict = field(default_factory=dict)
    other: object = field(default_factory=Any)  # the spec of keys not in `fields`; None: refused
    max_keys: int = 10_000

    def what(self) -> str:
        return "an object"


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _matches(value, spec) -> bool:
    """The top-level type only (children are checked by check())."""
    if isinstance(spec, tuple):
        return any(_matches(value, s) for s in spec)
    if isinstance(spec, Any):
        return True
    if isinstance(spec, Str):
        return isinstance(value, str) and len(value) <= spec.max_len
    if isinstance(spec, Num):
        return _is_num(value) and (spec.min is None or value >= spec.min)
    if isinstance(spec, Int):
        return isinstance(value, int) and not isinstance(value, bool) and value >= spec.min
    if isinstance(spec, Bool):
        return isinstance(value, bool)
    if isinstance(spec, Null):
        return value is None
    if isinstance(spec, Arr):
        return isinstance(value, list) and len(value) <= spec.max_items
    if isinstance(spec, Obj):
        return isinstance(value, dict) and len(value) <= spec.max_keys
    raise TypeError(f"not a spec: {spec!r}")


def _what(spec) -> str:
    if isinstance(spec, tuple):
        return " or ".join(s.what() for s in spec)
    return spec.what()


def check(value, spec, path: str) -> None:
    """Raise ClientError(400) naming the first field (dotted path) that does not match."""
    stack = [(value, spec, path)]
    while stack:
        v, s, p = stack.pop()
        if not _matches(v, s):
            raise ClientError(400, f"must be {_what(s)}", field=p)
        if isinstance(s, tuple):  # the first alternative that matches decides the children
            s = next(x for x in s if _matches(v, x))
        if isinstance(s, Arr) and not isinstance(s.item, Any):
            stack.extend((item, s.item, f"{p}[{i}]") for i, item in enumerate(v))
        elif isinstance(s, Obj):
            for k, item in v.items():
                sub = s.fields.get(k, s.other)
                if sub is None:
                    raise ClientError(400, f"unknown field; expected some of {sorted(s.fields)}",
                                      field=f"{p}.{k}")
                if not isinstance(sub, Any):
                    stack.append((item, sub, f"{p}.{k}"))


# --- the run ---

NAME = Str(256)  # data set, text, column, label, adapter strings: shown as text in the page
MAYBE_NUM = (Num(), Null())
CURVE = Arr(Arr(MAYBE_NUM, 8))  # [[step, loss], ...]

CONFIG = Obj({
    "kind": Str(64),
    "dataset": (NAME, Null()),
    "text": (NAME, Null()),
    "target": (NAME, Null()),
    "features": (Arr(NAME, 10_000), Null()),
    "params": (Obj(other=Any()), Null()),
})
ADAPTER = Obj({
    "vendor": Str(256), "architecture": Str(256), "device": Str(256), "description": Str(1024),
    "is_fallback_adapter": Bool(),
})  # other keys (subgroup sizes, matrix configs, tensor cores...): free-form
KERNEL = Obj({
    "name": Str(128), "ok": Bool(), "max_abs_err": MAYBE_NUM, "err_over_tol": MAYBE_NUM,
    "atol": MAYBE_NUM, "rtol": MAYBE_NUM, "time_s": MAYBE_NUM, "rate": MAYBE_NUM,
    "unit": (Str(64), Null()),
    "skipped": (Str(256), Null()),  # why a case did not run (the adapter lacks a feature)
})
METRICS = Obj({
    # The headline metrics the Runs tab and the comparisons show.
    "mse": MAYBE_NUM, "mae": MAYBE_NUM, "r2": MAYBE_NUM, "accuracy": MAYBE_NUM,
    "val_loss": MAYBE_NUM, "train_loss": MAYBE_NUM, "oob_score": MAYBE_NUM,
    "n_train": (Int(), Null()), "n_test": (Int(), Null()), "n_features": (Int(), Null()),
    "loss_curve": CURVE, "val_curve": CURVE,
    # The self-test's kernel table and a suite's summary.
    "all_ok": Bool(), "kernels": Arr(KERNEL, 1000),
    "runs": Arr(Obj({"id": Str(64), "label": Str(256), "rep": Int()}), 10_000),
    "errors": Arr(Obj({"label": Str(256), "message": Str(4096)}), 10_000),
    "ok": Bool(),
    # The self-test's benchmark mode (py_core/benchmark.py) and a transformer run's step profile.
    "benchmark": Arr(Obj({"kernel": Str(128), "n": Int(), "seconds": MAYBE_NUM, "tflops": MAYBE_NUM,
                          "max_err": MAYBE_NUM, "ok": Bool()}), 16),
    "profile": Obj(other=Any()),
})
TIMINGS = Obj(other=Num(min=0))
FREE = Obj(other=Any())
