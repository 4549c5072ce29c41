"""Reference of `transformer_adamw.wgsl`: gradient norm reduction and AdamW."""
from __future__ import annotations

import math

from .. import reference
from ..family import Family
from ..layout import Struct
from ..transformer_embedding import SCHED

REDUCE = Struct("n:u32 per_group:u32 out_off:u32 flags:u32")
# gscale: the gradients' scale is undone here (1 / the loss scale of mixed precision; else 1)
ADAM = Struct("n:u32 n_decay:u32 beta1:f32 beta2:f32 eps:f32 clip:f32 gscale:f32")
SQUARE = 1
FAMILY = Family(structs={"Reduce": REDUCE, "Adam": ADAM, "Sched": SCHED}, consts={"SQUARE": SQUARE})


@reference("transformer_adamw", "reduce_sum", writes={2})
def reduce_sum(bufs, grid, constants):
    prm, x, out = bufs
    p = REDUCE.unpack(prm)
    n, per = p["n"], p["per_group"]
    for g in range(-(-n // per)):
        part = x[g * per:min(n, (g + 1) * per)]
        out[p["out_off"] + g] = sum(v * v for v in part) if p["flags"] & SQUARE else sum(part)


@reference("transformer_adamw", "adamw", writes={3, 5, 6})
def adamw(bufs, grid, constants):
    prm, sched, state, param, grad, m1, m2 = bufs
    p = ADAM.unpack(prm)
    s = SCHED.unpack(sched)
    b1, b2, eps = p["beta1"], p["beta2"], p["eps"]
    gs = p["gscale"]
    coef = min(1.0, p["clip"] / (math.sqrt(state[0]) * gs + 1e-6)) if p["clip"] > 0 else 1.0
    for i in range(p["n"]):
        g = grad[i] * gs * coef
        w = param[i] * s["decay"] if i < p["n_decay"] else param[i]
        m = b1 * m1[i] + (1 - b1) * g
        v = b2 * m2[i] + (1 - b2) * g * g
        m1[i], m2[i] = m, v
        param[i] = w - s["step_size"] * m / (math.sqrt(v) / s["bc2_sqrt"] + eps)
