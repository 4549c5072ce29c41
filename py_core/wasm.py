"""The tab's Python memory: Pyodide's WebAssembly heap, read through its Emscripten module.

wasm32 addresses 4 GiB at most (Emscripten's getHeapMax: 4 GiB less 64 KiB), and one Python
object at most 2 GiB (Py_ssize_t is 32 bits). But Pyodide 314.0.7 hands a buffer to JavaScript
(a PyProxy's getBuffer, JsProxy.assign_to and to_bytes) at a signed 32-bit address: a Python
buffer lying above 2 GiB fails with "RangeError: offset is out of bounds" or "Start offset
-1584618576 is outside the bounds of the buffer" (tests/test_forest_memory.py pins it). A fit's
readbacks and its result cross there, so the usable heap is its first 2 GiB: `HEAP_USABLE`.
The heap grows as needed and never shrinks, so its size says what was once used; what is held
now is malloc's count (mallinfo) plus what lies below malloc's arena (static data and the
stack). `heap()` is None outside Pyodide.
"""
from __future__ import annotations

from dataclasses import dataclass

MALLINFO_WORDS = 10  # struct mallinfo (dlmalloc): arena, ..., uordblks (the 8th), ...
HEAP_USABLE = 2**31  # bytes of the heap whose buffers can cross to JavaScript (see above)


@dataclass
class Heap:
    size: int    # bytes of WebAssembly memory now (the most ever held)
    limit: int   # bytes it may grow to and still pass buffers to JavaScript
    in_use: int  # bytes held now: malloc's blocks in use, static data and the stack

    @property
    def room(self) -> int:
        """Bytes that can still be allocated: free blocks and the growth left."""
        return self.limit - self.in_use


def heap() -> Heap | None:
    """The WebAssembly heap under Pyodide, else None."""
    try:
        import pyodide_js
    except ImportError:
        return None
    m = pyodide_js._module
    size, limit = int(m.HEAP8.length), min(int(m.getHeapMax()), HEAP_USABLE)
    try:
        p = m._malloc(4 * MALLINFO_WORDS)
        try:
            m._mallinfo(p)  # fills the struct at p (its return slot)
            arena, used = int(m.HEAPU32[p >> 2]), int(m.HEAPU32[(p >> 2) + 7])
        finally:
            m._free(p)
        in_use = int(m._sbrk(0)) - arena + used  # below the arena, and its blocks in use
    except Exception:  # a build without mallinfo: count the whole heap as held
        in_use = size
    return Heap(size, limit, in_use)
