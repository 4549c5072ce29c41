"""Self-test cases of `transformer_matmul`: the transformer's matmul tilings (64 x 64, 128 x 64,
128 x 128) with their fused flags, on shapes that are not tile multiples."""
from __future__ import annotations

from .. import transformer_matmul as mm
from ..cases import case, random_floats, uniform


def _matmul_case(m, n, k, flags, batches=1, entry="matmul"):
    async def setup(backend, rng):
        kern = await backend.kernel("transformer_matmul", entry)
        # operands sit at offsets inside bigger buffers, with padded leading dimensions
        lda = (m if flags & mm.TRANS_A else k) + 3
        ldb = (k if flags & mm.TRANS_B else n) + 5
        rows_a = k if flags & mm.TRANS_A else m
        rows_b = n if flags & mm.TRANS_B else k
        a = backend.buffer("f32", data=random_floats(rng, 7 + batches * rows_a * lda))
        b = backend.buffer("f32", data=random_floats(rng, 11 + batches * rows_b * ldb + n + 2))
        c_len = batches * m * (n + 1) + 4
        c = backend.buffer("f32", data=random_floats(rng, c_len))
        res = backend.buffer("f32", data=random_floats(rng, c_len, 2.0))  # residual, pre-activation
        g = backend.buffer("f32", data=random_floats(rng, c_len))
        prm = uniform(backend, mm.PARAMS, **mm.params(
            m, n, k, flags, alpha=0.75, lda=lda, ldb=ldb, ldc=n + 1, a_off=7, b_off=11, c_off=4,
            bias_off=11 + batches * rows_b * ldb, inner=2 if batches % 2 == 0 else 1,
            a_so=2 * rows_a * lda, a_si=rows_a * lda, b_so=2 * rows_b * ldb, b_si=rows_b * ldb,
            c_so=2 * m * (n + 1), c_si=m * (n + 1)))
        plan = backend.plan().dispatch(kern, [prm, a, b, c, b, res, g], mm.entry_grid(entry, m, n, batches))
        return plan, [c, g] if flags & (mm.GELU | mm.ROWSUM) else [c], 2 * m * n * k * batches
    return setup


case("transformer matmul bias 70x50x33", atol=1e-5, rtol=1e-4)(_matmul_case(70, 50, 33, mm.BIAS))
case("transformer matmul A^T accumulate 66x40x70", atol=1e-5, rtol=1e-4)(
    _matmul_case(66, 40, 70, mm.TRANS_A | mm.ACCUMULATE))
case("transformer matmul B^T batched 4x 67x30x9", atol=1e-5, rtol=1e-4)(
    _matmul_case(67, 30, 9, mm.TRANS_B, batches=4))
case("transformer matmul causal tiles 130x130x8", atol=1e-5, rtol=1e-4)(
    _matmul_case(130, 130, 8, mm.TRANS_B | mm.SKIP_UPPER))
case("transformer matmul k<=row 130x8x130", atol=1e-5, rtol=1e-4)(
    _matmul_case(130, 8, 130, mm.K_UPTO_ROW))
case("transformer matmul k>=row A^T 130x8x130", atol=1e-5, rtol=1e-4)(
    _matmul_case(130, 8, 130, mm.TRANS_A | mm.K_FROM_ROW))
case("transformer matmul 128-tile bias 150x140x37", atol=1e-5, rtol=1e-4)(
    _matmul_case(150, 140, 37, mm.BIAS, entry="matmul_big"))
case("transformer matmul 128-tile A^T B^T accumulate 2x 131x129x20", atol=1e-5, rtol=1e-4)(
    _matmul_case(131, 129, 20, mm.TRANS_A | mm.TRANS_B | mm.ACCUMULATE, batches=2, entry="matmul_big"))
case("transformer matmul 128-tile causal 260x260x5", atol=1e-5, rtol=1e-4)(
    _matmul_case(260, 260, 5, mm.TRANS_B | mm.SKIP_UPPER, entry="matmul_big"))
case("transformer matmul 128-tile k<=row 260x5x260", atol=1e-5, rtol=1e-4)(
    _matmul_case(260, 5, 260, mm.K_UPTO_ROW, entry="matmul_big"))
case("transformer matmul 128-tile k>=row A^T 260x5x260", atol=1e-5, rtol=1e-4)(
    _matmul_case(260, 5, 260, mm.TRANS_A | mm.K_FROM_ROW, entry="matmul_big"))
case("transformer matmul bias residual + GELU 70x50x33", atol=1e-5, rtol=1e-4)(
    _matmul_case(70, 50, 33, mm.BIAS | mm.RESIDUAL | mm.GELU | mm.TRANS_B))
case("transformer matmul GELU backward 66x40x21", atol=1e-5, rtol=1e-4)(
    _matmul_case(66, 40, 21, mm.GELU_GRAD))
case("transformer matmul 128-tile residual + GELU 150x131x40", atol=1e-5, rtol=1e-4)(
    _matmul_case(150, 131, 40, mm.BIAS | mm.RESIDUAL | mm.GELU, entry="matmul_big"))
case("transformer matmul 128-tile GELU backward A^T 140x129x35", atol=1e-5, rtol=1e-4)(
    _matmul_case(140, 129, 35, mm.TRANS_A | mm.GELU_GRAD, entry="matmul_big"))
case("transformer matmul A^T + row sums 2x 70x45x40", atol=1e-5, rtol=1e-4)(
    _matmul_case(70, 45, 40, mm.TRANS_A | mm.ROWSUM, batches=2))
case("transformer matmul 128-tile A^T + row sums 2x 140x130x50", atol=1e-5, rtol=1e-4)(
    _matmul_case(140, 130, 50, mm.TRANS_A | mm.ROWSUM, batches=2, entry="matmul_big"))
for _name, _args, _flags, _b in (
        ("bias residual + GELU 150x70x37", (150, 70, 37), mm.BIAS | mm.RESIDUAL | mm.GELU | mm.TRANS_B, 1),
        ("A^T B^T accumulate 2x 131x65x20", (131, 65, 20), mm.TRANS_A | mm.TRANS_B | mm.ACCUMULATE, 2),
        ("GELU backward 140x70x35", (140, 70, 35), mm.GELU_GRAD, 1),
        ("A^T + row sums 2x 140x70x50", (140, 70, 50), mm.TRANS_A | mm.ROWSUM, 2),
        ("causal 260x260x5", (260, 260, 5), mm.TRANS_B | mm.SKIP_UPPER, 1),
        ("k<=row 260x5x260", (260, 5, 260), mm.K_UPTO_ROW, 1),
        ("k>=row A^T 260x5x260", (260, 5, 260), mm.TRANS_A | mm.K_FROM_ROW, 1)):
    case(f"transformer matmul 128x64-tile {_name}", atol=1e-5, rtol=1e-4)(
        _matmul_case(*_args, _flags, batches=_b, entry="matmul_wide"))
