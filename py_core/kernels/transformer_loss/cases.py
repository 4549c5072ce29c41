"""Self-test cases of `transformer_loss`: cross-entropy and the mean loss, on shapes that are not
tile multiples."""
from __future__ import annotations

from array import array

from .. import transformer_elementwise as ew
from .. import transformer_embedding as emb
from .. import transformer_loss as loss
from ..cases import case, random_floats, uniform


@case("transformer cross-entropy + mean loss 70x67", atol=1e-5, rtol=1e-4)
async def _loss_case(backend, rng):
    rows, v_ = 70, 67
    logits = backend.buffer("f32", data=random_floats(rng, rows * v_, 4.0))
    tgt = backend.buffer("u32", data=array("I", [rng.randrange(v_) for _ in range(rows)]))
    losses = backend.buffer("f32", rows)
    hist = backend.buffer("f32", data=random_floats(rng, 8))
    sched = uniform(backend, emb.SCHED, step=0, slot=5, lr=0.0, step_size=0.0, bc2_sqrt=1.0, decay=1.0)
    u = uniform(backend, loss.PARAMS, rows=rows, V=v_, inv_rows=1 / rows, pad=0)
    plan = backend.plan()
    plan.dispatch(await backend.kernel("transformer_loss", "cross_entropy"), [u, logits, tgt, losses],
                  ew.rows_grid(rows))
    plan.dispatch(await backend.kernel("transformer_loss", "loss_mean"), [u, sched, losses, hist], (1, 1, 1))
    return plan, [logits, losses, hist], 5 * rows * v_
