"""Self-test cases of `transformer_attention`: the causal softmax, chained with the matmuls as
attention does, on shapes that are not tile multiples."""
from __future__ import annotations

import math

from .. import transformer_attention as att
from .. import transformer_elementwise as ew
from .. import transformer_matmul as mm
from ..cases import case, random_floats, uniform


def _attention_buffers(backend, rng, b_, h_, t_, d_):
    c_ = h_ * d_
    qkv = backend.buffer("f32", data=random_floats(rng, b_ * t_ * 3 * c_))
    s = backend.buffer("f32", data=random_floats(rng, b_ * h_ * t_ * t_))  # stale values
    y = backend.buffer("f32", data=random_floats(rng, b_ * t_ * c_))
    return qkv, s, y


async def _attention_forward(backend, plan, qkv, s, y, b_, h_, t_, d_):
    """S = q k^T / sqrt(d) per (sequence, head), causal softmax in place, y = P v."""
    c_ = h_ * d_
    kern = await backend.kernel("transformer_matmul", "matmul")
    spare = backend.buffer("f32", 4)  # the unused G output
    scores = uniform(backend, mm.PARAMS, **mm.params(
        t_, t_, d_, mm.TRANS_B | mm.SKIP_UPPER, alpha=1 / math.sqrt(d_), lda=3 * c_, ldb=3 * c_,
        inner=h_, a_off=0, b_off=c_, a_so=t_ * 3 * c_, a_si=d_, b_so=t_ * 3 * c_, b_si=d_,
        c_so=h_ * t_ * t_, c_si=t_ * t_))
    plan.dispatch(kern, [scores, qkv, qkv, s, qkv, qkv, spare], mm.grid(t_, t_, b_ * h_))
    sm = await backend.kernel("transformer_attention", "softmax_causal")
    rows = b_ * h_ * t_
    plan.dispatch(sm, [uniform(backend, att.PARAMS, T=t_, rows=rows, scale=1.0, pad=0), s],
                  ew.rows_grid(rows))
    pv = uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.K_UPTO_ROW, lda=t_, ldb=3 * c_, ldc=c_, inner=h_, b_off=2 * c_,
        a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * 3 * c_, b_si=d_, c_so=t_ * c_, c_si=d_))
    plan.dispatch(kern, [pv, s, qkv, y, qkv, qkv, spare], mm.grid(t_, d_, b_ * h_))


@case("transformer attention forward 2 heads T=70 d=8", atol=1e-5, rtol=1e-4)
async def _attention_forward_case(backend, rng):
    b_, h_, t_, d_ = 1, 2, 70, 8
    qkv, s, y = _attention_buffers(backend, rng, b_, h_, t_, d_)
    plan = backend.plan()
    await _attention_forward(backend, plan, qkv, s, y, b_, h_, t_, d_)
    return plan, [s, y], 2 * 2 * b_ * h_ * t_ * t_ * d_ // 2


@case("transformer attention backward 2 heads T=67 d=8", atol=2e-5, rtol=1e-4)
async def _attention_backward_case(backend, rng):
    b_, h_, t_, d_ = 1, 2, 67, 8
    c_ = h_ * d_
    qkv, s, y = _attention_buffers(backend, rng, b_, h_, t_, d_)
    dy = backend.buffer("f32", data=random_floats(rng, b_ * t_ * c_))
    dp = backend.buffer("f32", data=random_floats(rng, b_ * h_ * t_ * t_))
    dqkv = backend.buffer("f32", data=random_floats(rng, b_ * t_ * 3 * c_))
    plan = backend.plan()
    await _attention_forward(backend, plan, qkv, s, y, b_, h_, t_, d_)
    kern = await backend.kernel("transformer_matmul", "matmul")
    spare = backend.buffer("f32", 4)
    sh = dict(c_so=h_ * t_ * t_, c_si=t_ * t_)
    # dP = dy v^T
    u = uniform(backend, mm.PARAMS, **mm.params(
        t_, t_, d_, mm.TRANS_B | mm.SKIP_UPPER, lda=c_, ldb=3 * c_, inner=h_, b_off=2 * c_,
        a_so=t_ * c_, a_si=d_, b_so=t_ * 3 * c_, b_si=d_, **sh))
    plan.dispatch(kern, [u, dy, qkv, dp, qkv, qkv, spare], mm.grid(t_, t_, b_ * h_))
    # dv = P^T dy
    u = uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.TRANS_A | mm.K_FROM_ROW, lda=t_, ldb=c_, ldc=3 * c_, inner=h_,
        c_off=2 * c_, a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * c_, b_si=d_, c_so=t_ * 3 * c_, c_si=d_))
    plan.dispatch(kern, [u, s, dy, dqkv, dy, dy, spare], mm.grid(t_, d_, b_ * h_))
    smb = await backend.kernel("transformer_attention", "softmax_causal_backward")
    rows = b_ * h_ * t_
    plan.dispatch(smb, [uniform(backend, att.PARAMS, T=t_, rows=rows, scale=1 / math.sqrt(d_), pad=0),
                        s, dp], ew.rows_grid(rows))
    # dq = dS k, dk = dS^T q
    u = uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.K_UPTO_ROW, lda=t_, ldb=3 * c_, ldc=3 * c_, inner=h_, b_off=c_,
        a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * 3 * c_, b_si=d_, c_so=t_ * 3 * c_, c_si=d_))
    plan.dispatch(kern, [u, dp, qkv, dqkv, qkv, qkv, spare], mm.grid(t_, d_, b_ * h_))
    u = uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.TRANS_A | mm.K_FROM_ROW, lda=t_, ldb=3 * c_, ldc=3 * c_, inner=h_,
        c_off=c_, a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * 3 * c_, b_si=d_, c_so=t_ * 3 * c_, c_si=d_))
    plan.dispatch(kern, [u, dp, qkv, dqkv, qkv, qkv, spare], mm.grid(t_, d_, b_ * h_))
    return plan, [dp, dqkv], 4 * 2 * b_ * h_ * t_ * t_ * d_ // 2
