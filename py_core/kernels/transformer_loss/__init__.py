"""Reference of `transformer_loss.wgsl`: cross-entropy with its gradient, mean loss."""
from __future__ import annotations

import math

from .. import reference
from ..family import Family
from ..layout import Struct
from ..transformer_embedding import SCHED

PARAMS = Struct("rows:u32 V:u32 inv_rows:f32 pad:u32")
FAMILY = Family(structs={"Params": PARAMS, "Sched": SCHED})


@reference("transformer_loss", "cross_entropy", writes={1, 3})
def cross_entropy(bufs, grid, constants):
    prm, logits, tgt, losses = bufs
    p = PARAMS.unpack(prm)
    v_, inv = p["V"], p["inv_rows"]
    for r in range(p["rows"]):
        row = logits[r * v_:(r + 1) * v_]
        t = tgt[r]
        m = max(row)
        e = [math.exp(x - m) for x in row]
        s = sum(e)
        losses[r] = m + math.log(s) - row[t]
        g = [x / s for x in e]
        g[t] -= 1.0
        logits[r * v_:(r + 1) * v_] = type(logits)("f", [x * inv for x in g])


@reference("transformer_loss", "loss_mean", writes={3})
def loss_mean(bufs, grid, constants):
    prm, sched, losses, hist = bufs
    p = PARAMS.unpack(prm)
    hist[SCHED.unpack(sched)["slot"]] = sum(losses[:p["rows"]]) * p["inv_rows"]
