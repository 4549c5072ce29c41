"""Reference of `transformer_elementwise.wgsl`: GELU (tanh form) and column sums."""
from __future__ import annotations

import math

from .. import reference
from ..family import Family
from ..layout import Struct

GELU = Struct("n:u32 pad0:u32 pad1:u32 pad2:u32")
COLSUM = Struct("rows:u32 cols:u32 chunk:u32 out_off:u32")
K0 = math.sqrt(2.0 / math.pi)
K1 = 0.044715
FAMILY = Family(structs={"Gelu": GELU, "Colsum": COLSUM})
MAX_GROUPS = 65535


def grid_1d(n: int, per_group: int = 256) -> tuple[int, int, int]:
    """Workgroups for n items, folded into y past WebGPU's 65535 per dimension."""
    groups = max(1, -(-n // per_group))
    return (min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS), 1)


def rows_grid(rows: int) -> tuple[int, int, int]:
    """A workgroup per row, as (x, y) with x <= MAX_GROUPS (the per-row kernels' grid)."""
    return (min(rows, MAX_GROUPS), -(-rows // MAX_GROUPS), 1)


def gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.tanh(K0 * (x + K1 * x ** 3)))


def gelu_grad(x: float) -> float:
    t = math.tanh(K0 * (x + K1 * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * K0 * (1.0 + 3.0 * K1 * x * x)


@reference("transformer_elementwise", "gelu_forward", writes={2})
def gelu_forward(bufs, grid, constants):
    prm, x, y = bufs
    n = GELU.unpack(prm)["n"]
    y[:n] = type(y)("f", [gelu(v) for v in x[:n]])


@reference("transformer_elementwise", "gelu_backward", writes={2})
def gelu_backward(bufs, grid, constants):
    prm, x, dy = bufs
    n = GELU.unpack(prm)["n"]
    dy[:n] = type(dy)("f", [d * gelu_grad(v) for v, d in zip(x[:n], dy[:n])])


@reference("transformer_elementwise", "colsum", writes={2})
def colsum(bufs, grid, constants):
    prm, src, out = bufs
    p = COLSUM.unpack(prm)
    rows, cols, chunk = p["rows"], p["cols"], p["chunk"]
    for k in range(grid[1]):
        s = [0.0] * cols
        for r in range(k * chunk, min(rows, (k + 1) * chunk)):
            s = [a + b for a, b in zip(s, src[r * cols:(r + 1) * cols])]
        o = p["out_off"] + k * cols
        out[o:o + cols] = type(out)("f", s)
