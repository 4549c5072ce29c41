"""Reference of `transformer_layernorm.wgsl`: LayerNorm forward, backward, param grads."""
from __future__ import annotations

import math

from .. import reference
from ..family import Family
from ..layout import Struct

PARAMS = Struct("rows:u32 C:u32 w_off:u32 flags:u32 eps:f32 chunk:u32")
ACCUMULATE = 1
FAMILY = Family(structs={"Params": PARAMS}, consts={"ACCUMULATE": ACCUMULATE})
EPS = 1e-5  # torch.nn.LayerNorm's default


@reference("transformer_layernorm", "layernorm_forward", writes={3, 4})
def layernorm_forward(bufs, grid, constants):
    prm, x, w, y, stats = bufs
    p = PARAMS.unpack(prm)
    c_, wo = p["C"], p["w_off"]
    for r in range(p["rows"]):
        row = x[r * c_:(r + 1) * c_]
        mean = sum(row) / c_
        rstd = 1.0 / math.sqrt(sum((v - mean) ** 2 for v in row) / c_ + p["eps"])
        for c in range(c_):
            y[r * c_ + c] = (row[c] - mean) * rstd * w[wo + c] + w[wo + c_ + c]
        stats[2 * r], stats[2 * r + 1] = mean, rstd


@reference("transformer_layernorm", "layernorm_backward", writes={5})
def layernorm_backward(bufs, grid, constants):
    prm, x, w, stats, dy, dx = bufs
    p = PARAMS.unpack(prm)
    c_, wo = p["C"], p["w_off"]
    for r in range(p["rows"]):
        mean, rstd = stats[2 * r], stats[2 * r + 1]
        g = [dy[r * c_ + c] * w[wo + c] for c in range(c_)]
        xhat = [(x[r * c_ + c] - mean) * rstd for c in range(c_)]
        mg = sum(g) / c_
        mgx = sum(a * b for a, b in zip(g, xhat)) / c_
        for c in range(c_):
            d = rstd * (g[c] - mg - xhat[c] * mgx)
            dx[r * c_ + c] = dx[r * c_ + c] + d if p["flags"] & ACCUMULATE else d


@reference("transformer_layernorm", "layernorm_param_grads", writes={4})
def layernorm_param_grads(bufs, grid, constants):
    prm, x, stats, dy, part = bufs
    p = PARAMS.unpack(prm)
    c_, rows, chunk = p["C"], p["rows"], p["chunk"]
    for k in range(grid[1]):
        dw, db = [0.0] * c_, [0.0] * c_
        for r in range(k * chunk, min(rows, (k + 1) * chunk)):
            mean, rstd = stats[2 * r], stats[2 * r + 1]
            for c in range(c_):
                d = dy[r * c_ + c]
                dw[c] += d * (x[r * c_ + c] - mean) * rstd
                db[c] += d
        part[k * 2 * c_:(k + 1) * 2 * c_] = type(part)(part.typecode, dw + db)
