"""Self-test cases of `transformer_layernorm`: LayerNorm forward, backward and its parameter
gradients, on shapes that are not tile multiples."""
from __future__ import annotations

from .. import transformer_elementwise as ew
from .. import transformer_layernorm as ln
from ..cases import case, random_floats, uniform


@case("transformer layernorm fwd+bwd+param grads 45x70", atol=1e-4, rtol=1e-3)
async def _layernorm_case(backend, rng):
    rows, c_, chunk = 45, 70, 16
    x = backend.buffer("f32", data=random_floats(rng, rows * c_, 2.0))
    w = backend.buffer("f32", data=random_floats(rng, 5 + 2 * c_))
    y = backend.buffer("f32", data=random_floats(rng, rows * c_))
    stats = backend.buffer("f32", data=random_floats(rng, 2 * rows))
    dy = backend.buffer("f32", data=random_floats(rng, rows * c_))
    dx = backend.buffer("f32", data=random_floats(rng, rows * c_))
    chunks = -(-rows // chunk)
    part = backend.buffer("f32", data=random_floats(rng, chunks * 2 * c_))
    grads = backend.buffer("f32", data=random_floats(rng, 3 + 2 * c_))
    prm = dict(rows=rows, C=c_, w_off=5, eps=ln.EPS, chunk=chunk)
    plan = backend.plan()
    plan.dispatch(await backend.kernel("transformer_layernorm", "layernorm_forward"),
                  [uniform(backend, ln.PARAMS, flags=0, **prm), x, w, y, stats], ew.rows_grid(rows))
    plan.dispatch(await backend.kernel("transformer_layernorm", "layernorm_backward"),
                  [uniform(backend, ln.PARAMS, flags=ln.ACCUMULATE, **prm), x, w, stats, dy, dx],
                  ew.rows_grid(rows))
    plan.dispatch(await backend.kernel("transformer_layernorm", "layernorm_param_grads"),
                  [uniform(backend, ln.PARAMS, flags=0, **prm), x, stats, dy, part],
                  (-(-c_ // 64), chunks, 1))
    plan.dispatch(await backend.kernel("transformer_elementwise", "colsum"),
                  [uniform(backend, ew.COLSUM, rows=chunks, cols=2 * c_, chunk=chunks, out_off=3),
                   part, grads], (-(-2 * c_ // 64), 1, 1))
    return plan, [y, stats, dx, grads], 20 * rows * c_
