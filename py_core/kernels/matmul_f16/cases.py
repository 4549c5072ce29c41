"""Self-test cases of `matmul_f16` (tensor cores): the transformer's flags on shapes that are not
tile multiples, f32 operands rounded to f16 when staged and packed f16 operands. Skipped on GPU
backends whose adapter lacks f16 subgroup matrices."""
from __future__ import annotations

from .. import matmul_f16 as mf
from ..cases import case, random_floats, uniform


def _case(m, n, k, flags, batches=1, in_f16=False, entry="matmul"):
    """entry: "matmul" (the staged kernel, any shape), or a direct entry (f16 operands, tile
    multiples, offsets and paddings of 8 f16 and 4 f32: what pick_direct allows)."""
    direct = entry != "matmul"
    pad_a, pad_b = (8, 16) if direct else (2, 4)

    async def setup(backend, rng):
        kern = await backend.kernel("matmul_f16", entry, mf.constants(flags, in_f16))
        lda = (m if flags & mf.TRANS_A else k) + pad_a  # padded leading dimensions (even: f16 pairs)
        ldb = (k if flags & mf.TRANS_B else n) + pad_b
        rows_a = k if flags & mf.TRANS_A else m
        rows_b = n if flags & mf.TRANS_B else k
        a_vals = random_floats(rng, 6 + batches * rows_a * lda)
        b_vals = random_floats(rng, 10 + batches * rows_b * ldb)
        if in_f16:
            a = backend.buffer("u32", data=mf.pack_f16(a_vals))
            b = backend.buffer("u32", data=mf.pack_f16(b_vals))
        else:
            a = backend.buffer("f32", data=a_vals)
            b = backend.buffer("f32", data=b_vals)
        ldc = n + (4 if direct else 1)
        c_len = batches * m * ldc + 4
        c = backend.buffer("f32", data=random_floats(rng, c_len))
        bias = backend.buffer("f32", data=random_floats(rng, n))
        res = backend.buffer("f32", data=random_floats(rng, c_len, 2.0))
        g = backend.buffer("f32", data=random_floats(rng, max(c_len, batches * m)))
        prm = uniform(backend, mf.PARAMS, **mf.params(
            m, n, k, flags, alpha=0.75 if not flags & mf.SKIP_UPPER else 0.125, lda=lda, ldb=ldb,
            ldc=ldc, a_off=6 + 2 * direct, b_off=10 + 6 * direct, c_off=4, inner=2 if batches % 2 == 0 else 1,
            a_so=2 * rows_a * lda, a_si=rows_a * lda, b_so=2 * rows_b * ldb, b_si=rows_b * ldb,
            c_so=2 * m * ldc, c_si=m * ldc))
        grid = mf.direct_grid(entry, m, n, batches) if direct else mf.grid(m, n, batches)
        plan = backend.plan().dispatch(kern, [prm, a, b, c, bias, res, g], grid)
        return plan, [c, g] if flags & (mf.GELU | mf.ROWSUM) else [c], 2 * m * n * k * batches
    return setup


def _f16_case(name, *args, **kw):
    case(f"matmul f16 (tensor cores) {name}", atol=2e-4, rtol=1e-4, needs=mf.FEATURES)(_case(*args, **kw))


_f16_case("bias 150x140x37", 150, 140, 37, mf.BIAS)
_f16_case("A^T B^T accumulate 2x 131x129x40", 131, 129, 40, mf.TRANS_A | mf.TRANS_B | mf.ACCUMULATE, batches=2)
_f16_case("causal B^T 260x260x16", 260, 260, 16, mf.TRANS_B | mf.SKIP_UPPER)
_f16_case("k<=row 260x16x260", 260, 16, 260, mf.K_UPTO_ROW)
_f16_case("k>=row A^T 260x16x260", 260, 16, 260, mf.TRANS_A | mf.K_FROM_ROW)
_f16_case("bias residual GELU 130x200x48", 130, 200, 48, mf.BIAS | mf.RESIDUAL | mf.GELU)
_f16_case("GELU gradient B^T 140x130x50", 140, 130, 50, mf.TRANS_B | mf.GELU_GRAD)
_f16_case("row sums A^T 140x70x150", 140, 70, 150, mf.TRANS_A | mf.ROWSUM)
_f16_case("packed f16 operands 200x136x96", 200, 136, 96, 0, in_f16=True)
_f16_case("direct_64 A^T row sums 2x 64x128x48", 64, 128, 48, mf.TRANS_A | mf.ROWSUM, batches=2, in_f16=True,
          entry="direct_64")
_f16_case("direct_128 B^T bias residual GELU 128x128x32", 128, 128, 32, mf.TRANS_B | mf.BIAS | mf.RESIDUAL | mf.GELU,
          in_f16=True, entry="direct_128")
_f16_case("direct_32x64 A^T B^T GELU gradient accumulate 64x64x48", 64, 64, 48,
          mf.TRANS_A | mf.TRANS_B | mf.GELU_GRAD | mf.ACCUMULATE, in_f16=True, entry="direct_32x64")
_f16_case("direct_64_u2 64x64x64", 64, 64, 64, 0, in_f16=True, entry="direct_64_u2")


@case("matmul f16 (tensor cores) cast_f16 1201 values", atol=0.5, rtol=0.0, needs=mf.FEATURES)
async def _cast(backend, rng):
    """f32 -> packed f16 pairs over three workgroups (an odd count: the last pair's high half
    zero), word for word: the same rounding as the staged kernel's f16() (atol 0.5 on integers)."""
    kern = await backend.kernel("matmul_f16", "cast_f16")
    src = backend.buffer("f32", data=random_floats(rng, 1300, 3.0))
    dst = backend.buffer("u32", 700)
    prm = uniform(backend, mf.CAST, n=1201, src_off=5, dst_off=4, pad=0)
    return backend.plan().dispatch(kern, [prm, src, dst], mf.cast_grid(1201)), [dst], 0
