"""How a job's result crosses from Python to the page: JSON text, and its binary values apart.

The page's worker (web/worker.js, unpackResult) reads each binary part in place in Python's memory
and makes it a typed array of its own, transferred to the page: no copy through a string, and
none in Python.
"""
from __future__ import annotations

import json
import math
from array import array

_DTYPES = {"B": "u8", "I": "u32", "i": "i32", "f": "f32", "d": "f64"}
BUFFERS = (bytes, bytearray, memoryview, array)


class Joined(tuple):
    """Buffers that make one binary value end to end (a forest's binary export in parts): the
    page's worker joins them into one Uint8Array in JavaScript, so Python never makes the whole."""


def encode_result(result) -> tuple[str, list]:
    """A result as JSON text and its binary values apart, as the page's worker transfers them
    (typed arrays, no copy through a string): a buffer (bytes, bytearray, memoryview, array.array)
    becomes {"$binary": i, "dtype": "u8" | "u32" | "i32" | "f32" | "f64"}, a `Joined` one
    {"$binary": [i, j, ...], "dtype": "u8"}, and parts[i] is the buffer itself, not a copy (the
    worker reads it in place)."""
    parts: list = []

    def walk(v):
        if isinstance(v, float) and not math.isfinite(v):
            raise NotFinite(v)
        if isinstance(v, Joined):
            parts.extend(v)
            return {"$binary": list(range(len(parts) - len(v), len(parts))), "dtype": "u8"}
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        if isinstance(v, BUFFERS):
            parts.append(v if not isinstance(v, memoryview) or v.c_contiguous else v.tobytes())
            return {"$binary": len(parts) - 1,
                    "dtype": _DTYPES.get(v.typecode, "u8") if isinstance(v, array) else "u8"}
        return v

    try:
        tree = walk(result)
    except NotFinite as exc:  # where it is, found again (the walk keeps no path: it is hot)
        raise ValueError(f"the job's result has {exc.value} at {_where(result) or 'its top'}, "
                         "which JSON cannot carry: a number that overflowed or was undefined") \
            from None
    return json.dumps(tree, allow_nan=False, default=_jsonable), parts


class NotFinite(Exception):
    """A float JSON cannot carry (NaN, an infinity)."""

    def __init__(self, value: float):
        super().__init__(value)
        self.value = value


def _where(v, path: str = "") -> str | None:
    """The keys down to the first float that is not finite ("metrics.mse", "plots.x[1][1]")."""
    if isinstance(v, float):
        return None if math.isfinite(v) else path
    if isinstance(v, Joined):
        return None
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, (list, tuple)) else ()
    for k, x in items:
        found = _where(x, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}".lstrip("."))
        if found is not None:
            return found
    return None


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
