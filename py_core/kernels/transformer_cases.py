"""Self-test cases of the transformer's kernel families, on shapes that are not tile multiples.

Each case chains the kernels the way the model does (scores, softmax, product with v; LayerNorm
and its gradients; ...) on fresh random inputs; `tests/test_transformer_kernels.py` runs every
case on the native backend against the reference backend, and "Check my GPU" runs them too.
"""
from __future__ import annotations

import math
from array import array

from .cases import case, random_floats
from . import transformer_adamw as adam
from . import transformer_attention as att
from . import transformer_elementwise as ew
from . import transformer_embedding as emb
from . import transformer_init as init
from . import transformer_layernorm as ln
from . import transformer_loss as loss
from . import transformer_matmul as mm


def _uniform(backend, struct, **values):
    return backend.buffer("u32", data=struct.pack(**values), uniform=True)


def _rows_grid(rows: int):
    return (min(rows, ew.MAX_GROUPS), -(-rows // ew.MAX_GROUPS), 1)


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
        prm = _uniform(backend, mm.PARAMS, **mm.params(
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


@case("transformer init normals 5000 (bit-exact)", atol=1e-30, rtol=0.0)
async def _init_case(backend, rng):
    n, off = 5000, 3
    table = backend.buffer("u32", data=init.quantile_table())
    out = backend.buffer("f32", data=random_floats(rng, n + 2 * off))
    u = _uniform(backend, init.INIT, n=n, offset=off, key=rng.getrandbits(32),
                 scale=init.scale_of(rng.uniform(0.001, 0.1)))
    plan = backend.plan().dispatch(await backend.kernel("transformer_init", "init_normal"),
                                   [u, table, out], ew.grid_1d(n))
    return plan, [out], n


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
    scores = _uniform(backend, mm.PARAMS, **mm.params(
        t_, t_, d_, mm.TRANS_B | mm.SKIP_UPPER, alpha=1 / math.sqrt(d_), lda=3 * c_, ldb=3 * c_,
        inner=h_, a_off=0, b_off=c_, a_so=t_ * 3 * c_, a_si=d_, b_so=t_ * 3 * c_, b_si=d_,
        c_so=h_ * t_ * t_, c_si=t_ * t_))
    plan.dispatch(kern, [scores, qkv, qkv, s, qkv, qkv, spare], mm.grid(t_, t_, b_ * h_))
    sm = await backend.kernel("transformer_attention", "softmax_causal")
    rows = b_ * h_ * t_
    plan.dispatch(sm, [_uniform(backend, att.PARAMS, T=t_, rows=rows, scale=1.0, pad=0), s],
                  _rows_grid(rows))
    pv = _uniform(backend, mm.PARAMS, **mm.params(
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
    sq, sh = dict(a_so=t_ * 3 * c_, a_si=d_), dict(c_so=h_ * t_ * t_, c_si=t_ * t_)
    # dP = dy v^T
    u = _uniform(backend, mm.PARAMS, **mm.params(
        t_, t_, d_, mm.TRANS_B | mm.SKIP_UPPER, lda=c_, ldb=3 * c_, inner=h_, b_off=2 * c_,
        a_so=t_ * c_, a_si=d_, b_so=t_ * 3 * c_, b_si=d_, **sh))
    plan.dispatch(kern, [u, dy, qkv, dp, qkv, qkv, spare], mm.grid(t_, t_, b_ * h_))
    # dv = P^T dy
    u = _uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.TRANS_A | mm.K_FROM_ROW, lda=t_, ldb=c_, ldc=3 * c_, inner=h_,
        c_off=2 * c_, a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * c_, b_si=d_, c_so=t_ * 3 * c_, c_si=d_))
    plan.dispatch(kern, [u, s, dy, dqkv, dy, dy, spare], mm.grid(t_, d_, b_ * h_))
    smb = await backend.kernel("transformer_attention", "softmax_causal_backward")
    rows = b_ * h_ * t_
    plan.dispatch(smb, [_uniform(backend, att.PARAMS, T=t_, rows=rows, scale=1 / math.sqrt(d_), pad=0),
                        s, dp], _rows_grid(rows))
    # dq = dS k, dk = dS^T q
    u = _uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.K_UPTO_ROW, lda=t_, ldb=3 * c_, ldc=3 * c_, inner=h_, b_off=c_,
        a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * 3 * c_, b_si=d_, c_so=t_ * 3 * c_, c_si=d_))
    plan.dispatch(kern, [u, dp, qkv, dqkv, qkv, qkv, spare], mm.grid(t_, d_, b_ * h_))
    u = _uniform(backend, mm.PARAMS, **mm.params(
        t_, d_, t_, mm.TRANS_A | mm.K_FROM_ROW, lda=t_, ldb=3 * c_, ldc=3 * c_, inner=h_,
        c_off=c_, a_so=h_ * t_ * t_, a_si=t_ * t_, b_so=t_ * 3 * c_, b_si=d_, c_so=t_ * 3 * c_, c_si=d_))
    plan.dispatch(kern, [u, dp, qkv, dqkv, qkv, qkv, spare], mm.grid(t_, d_, b_ * h_))
    return plan, [dp, dqkv], 4 * 2 * b_ * h_ * t_ * t_ * d_ // 2


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
                  [_uniform(backend, ln.PARAMS, flags=0, **prm), x, w, y, stats], _rows_grid(rows))
    plan.dispatch(await backend.kernel("transformer_layernorm", "layernorm_backward"),
                  [_uniform(backend, ln.PARAMS, flags=ln.ACCUMULATE, **prm), x, w, stats, dy, dx],
                  _rows_grid(rows))
    plan.dispatch(await backend.kernel("transformer_layernorm", "layernorm_param_grads"),
                  [_uniform(backend, ln.PARAMS, flags=0, **prm), x, stats, dy, part],
                  (-(-c_ // 64), chunks, 1))
    plan.dispatch(await backend.kernel("transformer_elementwise", "colsum"),
                  [_uniform(backend, ew.COLSUM, rows=chunks, cols=2 * c_, chunk=chunks, out_off=3),
                   part, grads], (-(-2 * c_ // 64), 1, 1))
    return plan, [y, stats, dx, grads], 20 * rows * c_


@case("transformer gelu fwd+bwd 1000", atol=1e-5, rtol=1e-4)
async def _gelu_case(backend, rng):
    n = 1000
    x = backend.buffer("f32", data=random_floats(rng, n, 4.0))
    y = backend.buffer("f32", data=random_floats(rng, n))
    dy = backend.buffer("f32", data=random_floats(rng, n))
    u = _uniform(backend, ew.GELU, n=n, pad0=0, pad1=0, pad2=0)
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
    plan.dispatch(k, [_uniform(backend, ew.COLSUM, rows=rows, cols=cols, chunk=chunk, out_off=0), x, part],
                  (-(-cols // 64), chunks, 1))
    plan.dispatch(k, [_uniform(backend, ew.COLSUM, rows=chunks, cols=cols, chunk=chunks, out_off=9), part, out],
                  (-(-cols // 64), 1, 1))
    return plan, [out], rows * cols


@case("transformer batch + embeddings fwd/bwd V=13 T=9 C=70", atol=1e-5, rtol=1e-4)
async def _embedding_case(backend, rng):
    b_, t_, c_, v_, n_tok = 5, 9, 70, 13, 200
    m_ = b_ * t_
    tokens = backend.buffer("u32", data=array("I", [rng.randrange(v_) for _ in range(n_tok)]))
    idx, tgt = backend.buffer("u32", m_), backend.buffer("u32", m_)
    w = backend.buffer("f32", data=random_floats(rng, 3 + (v_ + t_) * c_))
    x = backend.buffer("f32", m_ * c_)
    dx = backend.buffer("f32", data=random_floats(rng, m_ * c_))
    g = backend.buffer("f32", data=random_floats(rng, 3 + (v_ + t_) * c_))
    sched = _uniform(backend, emb.SCHED, step=rng.randrange(1000), slot=0, lr=0.0, step_size=0.0,
                     bc2_sqrt=1.0, decay=1.0)
    bp = _uniform(backend, emb.BATCH, B=b_, T=t_, n_windows=n_tok - t_, key=rng.getrandbits(32))
    ep = _uniform(backend, emb.EMBED, M=m_, T=t_, C=c_, V=v_, wte_off=3, wpe_off=3 + v_ * c_)
    plan = backend.plan()
    plan.dispatch(await backend.kernel("transformer_embedding", "get_batch"),
                  [bp, sched, tokens, idx, tgt], (-(-m_ // 64), 1, 1))
    plan.dispatch(await backend.kernel("transformer_embedding", "embed_forward"), [ep, idx, w, x],
                  ew.grid_1d(m_ * c_))
    chunk = 16  # positions a part sums: 3 parts, the last one short
    parts = backend.buffer("f32", data=random_floats(rng, 5 + 3 * v_ * c_))
    pp = _uniform(backend, emb.EMBED_PART, M=m_, C=c_, V=v_, chunk=chunk, out_off=5)
    plan.dispatch(await backend.kernel("transformer_embedding", "embed_backward_wte"), [pp, idx, dx, parts],
                  (-(-c_ // 64), v_, -(-m_ // chunk)))
    plan.dispatch(await backend.kernel("transformer_embedding", "embed_backward_wpe"), [ep, dx, g],
                  ew.grid_1d(t_ * c_))
    return plan, [idx, tgt, x, g, parts], 4 * m_ * c_


@case("transformer cross-entropy + mean loss 70x67", atol=1e-5, rtol=1e-4)
async def _loss_case(backend, rng):
    rows, v_ = 70, 67
    logits = backend.buffer("f32", data=random_floats(rng, rows * v_, 4.0))
    tgt = backend.buffer("u32", data=array("I", [rng.randrange(v_) for _ in range(rows)]))
    losses = backend.buffer("f32", rows)
    hist = backend.buffer("f32", data=random_floats(rng, 8))
    sched = _uniform(backend, emb.SCHED, step=0, slot=5, lr=0.0, step_size=0.0, bc2_sqrt=1.0, decay=1.0)
    u = _uniform(backend, loss.PARAMS, rows=rows, V=v_, inv_rows=1 / rows, pad=0)
    plan = backend.plan()
    plan.dispatch(await backend.kernel("transformer_loss", "cross_entropy"), [u, logits, tgt, losses],
                  _rows_grid(rows))
    plan.dispatch(await backend.kernel("transformer_loss", "loss_mean"), [u, sched, losses, hist], (1, 1, 1))
    return plan, [logits, losses, hist], 5 * rows * v_


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
    sched = _uniform(backend, emb.SCHED, step=t, slot=0, lr=lr, step_size=lr / (1 - b1 ** t),
                     bc2_sqrt=math.sqrt(1 - b2 ** t), decay=1 - lr * wd)
    k = await backend.kernel("transformer_adamw", "reduce_sum")
    plan = backend.plan()
    plan.dispatch(k, [_uniform(backend, adam.REDUCE, n=n, per_group=per, out_off=0, flags=adam.SQUARE),
                      grad, part], ew.grid_1d(groups, 1))
    plan.dispatch(k, [_uniform(backend, adam.REDUCE, n=groups, per_group=groups, out_off=0, flags=0),
                      part, state], (1, 1, 1))
    plan.dispatch(await backend.kernel("transformer_adamw", "adamw"),
                  [_uniform(backend, adam.ADAM, n=n, n_decay=n_decay, beta1=b1, beta2=b2, eps=1e-8, clip=1.0),
                   sched, state, param, grad, m1, m2], ew.grid_1d(n))
    return plan, [state, param, m1, m2], 12 * n
