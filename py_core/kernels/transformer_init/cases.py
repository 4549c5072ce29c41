"""Self-test cases of `transformer_init`: the initial weights (bit-exact against the reference), on
shapes that are not tile multiples."""
from __future__ import annotations

from ...rng import quantile_table, scale_of
from .. import transformer_elementwise as ew
from .. import transformer_init as init
from ..cases import case, random_floats, uniform


@case("transformer init normals 5000 (bit-exact)", atol=1e-30, rtol=0.0)
async def _init_case(backend, rng):
    n, off = 5000, 3
    table = backend.buffer("u32", data=quantile_table())
    out = backend.buffer("f32", data=random_floats(rng, n + 2 * off))
    u = uniform(backend, init.INIT, n=n, offset=off, key=rng.getrandbits(32),
                 scale=scale_of(rng.uniform(0.001, 0.1)))
    plan = backend.plan().dispatch(await backend.kernel("transformer_init", "init_normal"),
                                   [u, table, out], ew.grid_1d(n))
    return plan, [out], n
