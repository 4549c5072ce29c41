"""Self-test cases of `transformer_adamw`: the gradient norm and AdamW, on shapes that are not tile
multiples."""
from __future__ import annotations

import math
from array import array

from .. import transformer_adamw as adam
from .. import transformer_elementwise as ew
from .. import transformer_embedding as emb
from ..cases import case, random_floats, uniform


@case("transformer grad norm + AdamW 5000", atol=1e-5, rtol=1e-4)
async def _adamw_case(backend, rng):
    n, n_decay, per = 5000, 3001, 1024
    groups = -(-n // per)
    param = backend.buffer("f32", data=random_floats(rng, n))
    grad = backend.buffer("f32", data=random_floats(rng, n, 0.1))
    m1 = backend.buffer("f32", data=random_floats(rng, n, 0.01))
    m2 = backend.buffer("f32", data=array("f", [rng.uniform(0, 1e-3) for _ in range(n)]))
    part = backend.buffer("f32", groups)
    state = backend.buffer("f32", 4)
    t, lr, b1, b2, wd = 7, 3e-3, 0.9, 0.99, 0.1
    sched = uniform(backend, emb.SCHED, step=t, slot=0, lr=lr, step_size=lr / (1 - b1 ** t),
                     bc2_sqrt=math.sqrt(1 - b2 ** t), decay=1 - lr * wd)
    k = await backend.kernel("transformer_adamw", "reduce_sum")
    plan = backend.plan()
    plan.dispatch(k, [uniform(backend, adam.REDUCE, n=n, per_group=per, out_off=0, flags=adam.SQUARE),
                      grad, part], ew.grid_1d(groups, 1))
    plan.dispatch(k, [uniform(backend, adam.REDUCE, n=groups, per_group=groups, out_off=0, flags=0),
                      part, state], (1, 1, 1))
    plan.dispatch(await backend.kernel("transformer_adamw", "adamw"),
                  [uniform(backend, adam.ADAM, n=n, n_decay=n_decay, beta1=b1, beta2=b2, eps=1e-8, clip=1.0, gscale=0.5),
                   sched, state, param, grad, m1, m2], ew.grid_1d(n))
    return plan, [state, param, m1, m2], 12 * n
