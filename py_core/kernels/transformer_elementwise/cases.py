"""Self-test cases of `transformer_elementwise`: GELU and the column sums, on shapes that are not
tile multiples."""
from __future__ import annotations

from .. import transformer_elementwise as ew
from ..cases import case, random_floats, uniform


@case("transformer gelu fwd+bwd 1000", atol=1e-5, rtol=1e-4)
async def _gelu_case(backend, rng):
    n = 1000
    x = backend.buffer("f32", data=random_floats(rng, n, 4.0))
    y = backend.buffer("f32", data=random_floats(rng, n))
    dy = backend.buffer("f32", data=random_floats(rng, n))
    u = uniform(backend, ew.GELU, n=n, pad0=0, pad1=0, pad2=0)
    plan = backend.plan()
    plan.dispatch(await backend.kernel("transformer_elementwise", "gelu_forward"), [u, x, y], ew.grid_1d(n))
    plan.dispatch(await backend.kernel("transformer_elementwise", "gelu_backward"), [u, x, dy], ew.grid_1d(n))
    return plan, [y, dy], 30 * n


@case("transformer colsum 300x70 two passes", atol=1e-4, rtol=1e-4)
async def _colsum_case(backend, rng):
    rows, cols, chunk = 300, 70, 64
    chunks = -(-rows // chunk)
    x = backend.buffer("f32", data=random_floats(rng, rows * cols))
    part = backend.buffer("f32", chunks * cols)
    out = backend.buffer("f32", data=random_floats(rng, cols + 9))
    k = await backend.kernel("transformer_elementwise", "colsum")
    plan = backend.plan()
    plan.dispatch(k, [uniform(backend, ew.COLSUM, rows=rows, cols=cols, chunk=chunk, out_off=0), x, part],
                  (-(-cols // 64), chunks, 1))
    plan.dispatch(k, [uniform(backend, ew.COLSUM, rows=chunks, cols=cols, chunk=chunks, out_off=9), part, out],
                  (-(-cols // 64), 1, 1))
    return plan, [out], rows * cols
