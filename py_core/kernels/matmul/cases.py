"""Self-test cases of the matmul family: each layout, on shapes that are not tile multiples."""
from __future__ import annotations

from ..cases import case, random_floats
from . import ACCUMULATE, PARAMS, TRANS_A, TRANS_B, grid


def _matmul_case(m, n, k, flags):
    async def setup(backend, rng):
        kern = await backend.kernel("matmul", "matmul")
        a = backend.buffer("f32", data=random_floats(rng, m * k))
        b = backend.buffer("f32", data=random_floats(rng, k * n))
        c = backend.buffer("f32", data=random_floats(rng, m * n))
        p = backend.buffer("u32", data=PARAMS.pack(M=m, N=n, K=k, flags=flags, alpha=0.5), uniform=True)
        plan = backend.plan().dispatch(kern, [p, a, b, c], grid(m, n))
        if flags & ACCUMULATE:  # keep the timed repeats from growing C without bound
            plan = backend.plan().copy(c, c2 := backend.buffer("f32", m * n)).dispatch(kern, [p, a, b, c2], grid(m, n))
            return plan, [c2], 2 * m * n * k
        return plan, [c], 2 * m * n * k
    return setup


case("matmul 131x97x75", atol=1e-5, rtol=1e-4)(_matmul_case(131, 97, 75, 0))
case("matmul A^T 70x129x66", atol=1e-5, rtol=1e-4)(_matmul_case(70, 129, 66, TRANS_A))
case("matmul B^T 96x64x130", atol=1e-5, rtol=1e-4)(_matmul_case(96, 64, 130, TRANS_B))
case("matmul accumulate 65x65x33", atol=1e-5, rtol=1e-4)(_matmul_case(65, 65, 33, ACCUMULATE))
