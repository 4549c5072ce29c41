"""Read a JSON request body strictly, within a size cap.

`await read_json(request, max_bytes)` returns the parsed value or raises ClientError (a body that
may be left out: `read_json(request, max_bytes, empty={})`):
415 not JSON, 413 over the cap (counted while reading, so a missing or lying Content-Length does not
help), 400 for anything that is not plain, portable JSON: bad UTF-8, syntax errors, NaN/Infinity
(and numbers, integers included, that overflow a double: a browser reads them as Infinity),
duplicate keys, lone surrogates, NUL in keys, nesting deeper than MAX_DEPTH, arrays longer than
MAX_ITEMS. Each names its field (a dotted path) where it has one. What passes can be stored as JSON
text and read back by any JSON parser, a browser's included.
"""

from __future__ import annotations

import json
import math
import sys

import anyio.to_thread
from starlette.requests import Request

from server.errors import ClientError

MAX_DEPTH = 64  # a run is a few levels deep; 64 is far beyond any real one, far below recursion limits
OFFLOAD_BYTES = 64 * 1024  # parsing and checking 1 MB takes tens of ms: do it off the event loop
MAX_ITEMS = 100_000  # one array: a long loss curve fits; a million-element array is not a run


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


class _Refused:
    """Put in the tree in place of a value the parser refuses, so check_tree can name its field."""

    def __init__(self, message: str):
        self.message = message


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not valid JSON; send finite numbers or null")


def _parse_int(digits: str):
    # Past a double's range (about 1.8e308, 309 digits) a browser reads the number as Infinity; a
    # long literal is refused before int() spends time on it (or hits its 4,300-digit limit).
    value = int(digits) if len(digits.lstrip("-")) <= 309 else None
    if value is None or abs(value) > sys.float_info.max:
        return _Refused("number too large (it overflows to infinity)")
    return value


def _pairs(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return obj


def parse_strict(data: bytes):
    """Parse bytes as strict JSON, then check the tree (see module docstring)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClientError(400, f"body is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_parse_constant, parse_int=_parse_int,
                           object_pairs_hook=_pairs)
    except _DuplicateKey as exc:
        raise ClientError(400, "duplicate key in an object", field=exc.key) from None
    except json.JSONDecodeError as exc:
        raise ClientError(400, f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ClientError(400, f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # e.g. an integer with more digits than int() accepts
        raise ClientError(400, f"invalid JSON value: {exc}") from None
    check_tree(value)
    return value


def _path(parts: tuple) -> str | None:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out or None


def _check_str(s: str, parts: tuple, what: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ClientError(400, f"{what} holds a lone UTF-16 surrogate", field=_path(parts)) from None


def check_tree(value) -> None:
    """Depth, array length, finite numbers, encodable strings, keys without NUL; iteratively."""
    if isinstance(value, str):
        _check_str(value, (), "string")
    if isinstance(value, _Refused):
        raise ClientError(400, value.message)
    stack = [(value, ())]  # (node, path to it); scalars among children are checked inline
    while stack:
        node, parts = stack.pop()
        if len(parts) >= MAX_DEPTH:
            raise ClientError(400, f"JSON nested deeper than {MAX_DEPTH} levels", field=_path(parts))
        if isinstance(node, dict):
            items = node.items()
            for k, _ in items:
                if "\x00" in k:
                    raise ClientError(400, "object key contains a NUL character", field=_path(parts + (k,)))
                _check_str(k, parts + (k,), "object key")
        elif isinstance(node, list):
            if len(node) > MAX_ITEMS:
                raise ClientError(400, f"array longer than {MAX_ITEMS} items", field=_path(parts))
            items = enumerate(node)
        else:
            continue
        for k, v in items:
            if isinstance(v, (dict, list)):
                stack.append((v, parts + (k,)))
            elif isinstance(v, _Refused):
                raise ClientError(400, v.message, field=_path(parts + (k,)))
            elif isinstance(v, float) and not math.isfinite(v):
                raise ClientError(400, "number too large (it overflows to infinity)", field=_path(parts + (k,)))
            elif isinstance(v, str):
                _check_str(v, parts + (k,), "string")


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body, refused with 413 as soon as it passes max_bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ClientError(413, f"body larger than {max_bytes // 1024} KB")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise ClientError(413, f"body larger than {max_bytes // 1024} KB")
        chunks.append(chunk)
    return b"".join(chunks)


_REQUIRED = object()


async def read_json(request: Request, max_bytes: int, empty=_REQUIRED):
    """The body parsed (see the module docstring). With `empty` given, a body may be left out
    and `empty` is returned for it: the body is read (chunked or not, within the cap) to know."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    # Requiring application/json also stops cross-site HTML forms from posting (they cannot set it
    # without a CORS preflight, which this server never grants).
    is_json = ctype == "application/json" or ctype.endswith("+json")
    if not is_json and empty is _REQUIRED:
        raise ClientError(415, "send the body as application/json")
    data = await read_body(request, max_bytes)
    if not data and empty is not _REQUIRED:
        return empty
    if not is_json:
        raise ClientError(415, "send the body as application/json")
    if len(data) <= OFFLOAD_BYTES:
        return parse_strict(data)
    return await anyio.to_thread.run_sync(parse_strict, data)  # keep the event loop responsive
