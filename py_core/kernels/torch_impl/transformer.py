"""Torch versions of the transformer's kernel families (`shaders/transformer_*.wgsl`).

Float results agree with the references to the self-test's tolerances (reductions may sum in
another order); everything integer (batch offsets, token gathers) is exact. Nothing here reads a
device value back to the host: schedule values come from the uniform's host copy, and the gradient
clip coefficient stays on the device, so a training step is queued without a synchronisation.
"""
from __future__ import annotations

import torch

from .. import transformer_adamw as adam
from .. import transformer_attention as attn
from .. import transformer_elementwise as ew
from .. import transformer_embedding as emb
from .. import transformer_init as init
from .. import transformer_layernorm as ln
from .. import transformer_loss as loss
from .. import transformer_matmul as mm
from . import params, torch_kernel, u32

WRITTEN_FOR = {  # fingerprints of the WGSL mirrored here
    "transformer_matmul": "df4a84374635be47",
    "transformer_attention": "9d00cff12037eda0",
    "transformer_layernorm": "918b9c4eeb89a880",
    "transformer_elementwise": "40e56aeaa357515e",
    "transformer_embedding": "535ca086f8e5dab8",
    "transformer_loss": "91e4e8e47c32b0a7",
    "transformer_init": "5b9f9fa6e470c252",
    "transformer_adamw": "8985db81df08cf6d",
}
F32 = torch.float32


def _f(buf):
    return buf.t  # float32 tensor


# ---- transformer_matmul --------------------------------------------------------------------------

def _strided(t, off, so, si, outer, inner, rows, cols, ld, trans):
    """(outer, inner, rows, cols) view of a row-major (or transposed) matrix batch in t."""
    stride = (so, si, 1, ld) if trans else (so, si, ld, 1)
    return t.as_strided((outer, inner, rows, cols), stride, off)


@torch_kernel("transformer_matmul", "matmul")
def matmul(bufs, grid, constants):
    _matmul(bufs, grid, mm.TILE, mm.TILE)


@torch_kernel("transformer_matmul", "matmul_wide")
def matmul_wide(bufs, grid, constants):
    _matmul(bufs, grid, mm.BIG_TILE, mm.TILE)


@torch_kernel("transformer_matmul", "matmul_big")
def matmul_big(bufs, grid, constants):
    _matmul(bufs, grid, mm.BIG_TILE, mm.BIG_TILE)


def _gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(mm.K0 * (x + mm.K1 * x * x * x)))


def _gelu_grad(x):
    t = torch.tanh(mm.K0 * (x + mm.K1 * x * x * x))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * mm.K0 * (1.0 + 3.0 * mm.K1 * x * x)


def _matmul(bufs, grid, tile, tile_n):
    """C = alpha op(A) op(B) (+ bias) (+ R) (* gelu'(R)) (+ C) per batch z, then G = gelu(C) or
    G = A's row sums; the causal flags act on whole tiles (tile rows, tile_n columns)."""
    p = params(bufs[0], mm.PARAMS)
    a, b, c, bias, res, g = (x.t for x in bufs[1:])
    M, N, K, flags, inner = p["M"], p["N"], p["K"], p["flags"], p["inner"]
    Z = grid[2]
    pieces = [(0, Z // inner, inner)] if Z % inner == 0 else [(z, 1, 1) for z in range(Z)]
    rows = torch.arange(M, device=a.device)
    row0 = rows // tile * tile
    kk = torch.arange(K, device=a.device)
    k_ok = None
    if flags & (mm.K_UPTO_ROW | mm.K_FROM_ROW):  # op(A) triangular by tiles: skip the rest
        k_end = torch.clamp(row0 + tile, max=K) if flags & mm.K_UPTO_ROW else torch.full_like(row0, K)
        k_begin = torch.minimum(row0, k_end) if flags & mm.K_FROM_ROW else torch.zeros_like(row0)
        k_ok = (kk[None, :] >= k_begin[:, None]) & (kk[None, :] < k_end[:, None])
    keep = None
    if flags & mm.SKIP_UPPER:  # output tiles right of the diagonal tile are left as they are
        cols = torch.arange(N, device=a.device)
        keep = (cols[None, :] // tile_n * tile_n) <= (row0 + tile - 1)[:, None]
    for z0, outer, inn in pieces:
        o, i = divmod(z0, inner)
        ab = p["a_off"] + o * p["a_so"] + i * p["a_si"]
        bb = p["b_off"] + o * p["b_so"] + i * p["b_si"]
        cb = p["c_off"] + o * p["c_so"] + i * p["c_si"]
        A = _strided(a, ab, p["a_so"], p["a_si"], outer, inn, M, K, p["lda"], flags & mm.TRANS_A)
        B = _strided(b, bb, p["b_so"], p["b_si"], outer, inn, K, N, p["ldb"], flags & mm.TRANS_B)
        C = _strided(c, cb, p["c_so"], p["c_si"], outer, inn, M, N, p["ldc"], False)
        if k_ok is not None:
            A = torch.where(k_ok, A, 0.0)
        if flags & mm.ROWSUM:  # G[z M + i]: the row sums of op(A) over the k it multiplies
            g[z0 * M:(z0 + outer * inn) * M] = A.sum(-1).reshape(-1)
        v = p["alpha"] * torch.matmul(A, B)
        if flags & mm.BIAS:
            v = v + bias[p["bias_off"]:p["bias_off"] + N]
        if flags & (mm.RESIDUAL | mm.GELU_GRAD):
            R = _strided(res, cb, p["c_so"], p["c_si"], outer, inn, M, N, p["ldc"], False)
            if flags & mm.RESIDUAL:
                v = v + R
            if flags & mm.GELU_GRAD:
                v = v * _gelu_grad(R)
        if flags & mm.ACCUMULATE:
            v = C + v
        if keep is not None:
            v = torch.where(keep, v, C)
        if flags & mm.GELU:
            G = _strided(g, cb, p["c_so"], p["c_si"], outer, inn, M, N, p["ldc"], False)
            G.copy_(_gelu(v) if keep is None else torch.where(keep, _gelu(v), G))
        C.copy_(v)


# ---- transformer_attention -----------------------------------------------------------------------

def _causal(T: int, rows: int, device):
    """(rows, T) mask j <= i, row r being position i = r % T of its sequence."""
    i = torch.arange(rows, device=device) % T
    return torch.arange(T, device=device)[None, :] <= i[:, None]


@torch_kernel("transformer_attention", "softmax_causal")
def softmax_causal(bufs, grid, constants):
    p = params(bufs[0], attn.PARAMS)
    T, rows = p["T"], p["rows"]
    s = _f(bufs[1])[:rows * T].view(rows, T)
    mask = _causal(T, rows, s.device)
    s.copy_(torch.softmax(s.masked_fill(~mask, float("-inf")), dim=1))


@torch_kernel("transformer_attention", "softmax_causal_backward")
def softmax_causal_backward(bufs, grid, constants):
    p = params(bufs[0], attn.PARAMS)
    T, rows = p["T"], p["rows"]
    pr = _f(bufs[1])[:rows * T].view(rows, T)
    dp = _f(bufs[2])[:rows * T].view(rows, T)
    mask = _causal(T, rows, pr.device)
    pm = torch.where(mask, pr, 0.0)
    d = (pm * torch.where(mask, dp, 0.0)).sum(1, keepdim=True)
    dp.copy_(torch.where(mask, p["scale"] * pm * (dp - d), 0.0))


# ---- transformer_layernorm -----------------------------------------------------------------------

@torch_kernel("transformer_layernorm", "layernorm_forward")
def layernorm_forward(bufs, grid, constants):
    p = params(bufs[0], ln.PARAMS)
    x, w, y, stats = (_f(b) for b in bufs[1:])
    R, C, wo = p["rows"], p["C"], p["w_off"]
    xv = x[:R * C].view(R, C)
    mean = xv.mean(1)
    rstd = torch.rsqrt(((xv - mean[:, None]) ** 2).mean(1) + p["eps"])
    y[:R * C].view(R, C).copy_((xv - mean[:, None]) * rstd[:, None] * w[wo:wo + C] + w[wo + C:wo + 2 * C])
    stats[:2 * R].view(R, 2).copy_(torch.stack([mean, rstd], 1))


def _xhat(x, stats, R, C):
    st = stats[:2 * R].view(R, 2)
    return (x[:R * C].view(R, C) - st[:, :1]) * st[:, 1:]


@torch_kernel("transformer_layernorm", "layernorm_backward")
def layernorm_backward(bufs, grid, constants):
    p = params(bufs[0], ln.PARAMS)
    x, w, stats, dy, dx = (_f(b) for b in bufs[1:])
    R, C, wo = p["rows"], p["C"], p["w_off"]
    g = dy[:R * C].view(R, C) * w[wo:wo + C]
    xhat = _xhat(x, stats, R, C)
    rstd = stats[:2 * R].view(R, 2)[:, 1:]
    d = rstd * (g - g.mean(1, keepdim=True) - xhat * (g * xhat).mean(1, keepdim=True))
    out = dx[:R * C].view(R, C)
    out.copy_(out + d if p["flags"] & ln.ACCUMULATE else d)


def _chunk_sums(x, rows: int, chunk: int, groups: int):
    """Sums of x (rows, C) over row chunks [k chunk, (k + 1) chunk), k < groups -> (groups, C)."""
    pad = groups * chunk - rows
    if pad > 0:
        x = torch.cat([x, x.new_zeros(pad, x.shape[1])])
    return x[:groups * chunk].view(groups, chunk, -1).sum(1)


@torch_kernel("transformer_layernorm", "layernorm_param_grads")
def layernorm_param_grads(bufs, grid, constants):
    p = params(bufs[0], ln.PARAMS)
    x, stats, dy, part = (_f(b) for b in bufs[1:])
    R, C, chunk, G = p["rows"], p["C"], p["chunk"], grid[1]
    d = dy[:R * C].view(R, C)
    dw = _chunk_sums(d * _xhat(x, stats, R, C), R, chunk, G)
    db = _chunk_sums(d, R, chunk, G)
    part[:G * 2 * C].view(G, 2, C).copy_(torch.stack([dw, db], 1))


# ---- transformer_elementwise ---------------------------------------------------------------------

def _tanh_arg(x):
    return ew.K0 * (x + ew.K1 * x * x * x)


@torch_kernel("transformer_elementwise", "gelu_forward")
def gelu_forward(bufs, grid, constants):
    n = params(bufs[0], ew.GELU)["n"]
    x, y = _f(bufs[1])[:n], _f(bufs[2])[:n]
    y.copy_(0.5 * x * (1.0 + torch.tanh(_tanh_arg(x))))


@torch_kernel("transformer_elementwise", "gelu_backward")
def gelu_backward(bufs, grid, constants):
    n = params(bufs[0], ew.GELU)["n"]
    x, dy = _f(bufs[1])[:n], _f(bufs[2])[:n]
    t = torch.tanh(_tanh_arg(x))
    grad = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * ew.K0 * (1.0 + 3.0 * ew.K1 * x * x)
    dy.mul_(grad)


@torch_kernel("transformer_elementwise", "colsum")
def colsum(bufs, grid, constants):
    p = params(bufs[0], ew.COLSUM)
    src, out = _f(bufs[1]), _f(bufs[2])
    R, C, G, o = p["rows"], p["cols"], grid[1], p["out_off"]
    out[o:o + G * C].view(G, C).copy_(_chunk_sums(src[:R * C].view(R, C), R, p["chunk"], G))


# ---- transformer_embedding -----------------------------------------------------------------------

@torch_kernel("transformer_embedding", "get_batch")
def get_batch(bufs, grid, constants):
    p = params(bufs[0], emb.BATCH)
    step = params(bufs[1], emb.SCHED)["step"]
    tokens, idx, tgt = (b.t for b in bufs[2:])
    B, T = p["B"], p["T"]
    # B offsets from the host copy of the schedule: integer hashing, no device round trip.
    starts = [emb.batch_offset(p["key"], step, b, B, p["n_windows"]) for b in range(B)]
    pos = torch.tensor(starts, dtype=torch.int64, device="cpu").to(tokens.device)[:, None]
    at = pos + torch.arange(T, device=tokens.device)[None, :]
    idx[:B * T] = tokens[at].view(-1)
    tgt[:B * T] = tokens[at + 1].view(-1)


def _tables(p, w):
    C, T, V = p["C"], p["T"], p["V"]
    wte = w[p["wte_off"]:p["wte_off"] + V * C].view(V, C)
    wpe = w[p["wpe_off"]:p["wpe_off"] + T * C].view(T, C)
    return wte, wpe


@torch_kernel("transformer_embedding", "embed_forward")
def embed_forward(bufs, grid, constants):
    p = params(bufs[0], emb.EMBED)
    idx, w, x = bufs[1].t, _f(bufs[2]), _f(bufs[3])
    M, C, T = p["M"], p["C"], p["T"]
    wte, wpe = _tables(p, w)
    pos = torch.arange(M, device=w.device) % T
    x[:M * C].view(M, C).copy_(wte[u32(idx[:M])] + wpe[pos])


@torch_kernel("transformer_embedding", "embed_backward_wte")
def embed_backward_wte(bufs, grid, constants):
    """out[out_off + z V C ...]: per chunk z of positions, dx summed by token (V, C)."""
    p = params(bufs[0], emb.EMBED_PART)
    idx, dx, out = bufs[1].t, _f(bufs[2]), _f(bufs[3])
    M, C, V, chunk, Z = p["M"], p["C"], p["V"], p["chunk"], grid[2]
    pos = torch.arange(Z * chunk, device=dx.device)
    live = pos < M
    tok = torch.where(live, u32(idx[torch.clamp(pos, max=M - 1)]), 0)
    d = dx[:M * C].view(M, C)
    if Z * chunk > M:
        d = torch.cat([d, d.new_zeros(Z * chunk - M, C)])
    # One-hot (Z, V, chunk) @ dx (Z, chunk, C): a deterministic sum a token (index_add_ is not).
    onehot = torch.zeros(Z, V, chunk, dtype=F32, device=dx.device)
    onehot.view(Z * V, chunk)[(pos // chunk) * V + tok, pos % chunk] = live.to(F32)
    o = p["out_off"]
    out[o:o + Z * V * C] = torch.bmm(onehot, d[:Z * chunk].view(Z, chunk, C)).reshape(-1)


@torch_kernel("transformer_embedding", "embed_backward_wpe")
def embed_backward_wpe(bufs, grid, constants):
    p = params(bufs[0], emb.EMBED)
    dx, g = _f(bufs[1]), _f(bufs[2])
    M, C, T = p["M"], p["C"], p["T"]
    _, wpe = _tables(p, g)
    seqs = -(-M // T)
    d = dx[:M * C].view(M, C)
    if seqs * T > M:
        d = torch.cat([d, d.new_zeros(seqs * T - M, C)])
    wpe.copy_(d.view(seqs, T, C).sum(0))


# ---- transformer_loss ----------------------------------------------------------------------------

@torch_kernel("transformer_loss", "cross_entropy")
def cross_entropy(bufs, grid, constants):
    p = params(bufs[0], loss.PARAMS)
    logits, tgt, losses = _f(bufs[1]), bufs[2].t, _f(bufs[3])
    R, V = p["rows"], p["V"]
    z = logits[:R * V].view(R, V)
    t = u32(tgt[:R])
    lse = torch.logsumexp(z, 1)
    rows = torch.arange(R, device=z.device)
    losses[:R] = lse - z[rows, t]
    g = torch.exp(z - lse[:, None])
    g[rows, t] -= 1.0
    z.copy_(g * p["inv_rows"])


@torch_kernel("transformer_loss", "loss_mean")
def loss_mean(bufs, grid, constants):
    p = params(bufs[0], loss.PARAMS)
    slot = params(bufs[1], emb.SCHED)["slot"]
    losses, hist = _f(bufs[2]), _f(bufs[3])
    hist[slot] = losses[:p["rows"]].sum() * p["inv_rows"]


# ---- transformer_adamw ---------------------------------------------------------------------------

@torch_kernel("transformer_adamw", "reduce_sum")
def reduce_sum(bufs, grid, constants):
    p = params(bufs[0], adam.REDUCE)
    x, out = _f(bufs[1]), _f(bufs[2])
    n, per = p["n"], p["per_group"]
    groups = -(-n // per)
    v = x[:n] * x[:n] if p["flags"] & adam.SQUARE else x[:n]
    if groups * per > n:
        v = torch.cat([v, v.new_zeros(groups * per - n)])
    out[p["out_off"]:p["out_off"] + groups] = v.view(groups, per).sum(1)


@torch_kernel("transformer_adamw", "adamw")
def adamw(bufs, grid, constants):
    p = params(bufs[0], adam.ADAM)
    s = params(bufs[1], emb.SCHED)
    state, param, grad, m1, m2 = (_f(b) for b in bufs[2:])
    n, nd = p["n"], p["n_decay"]
    g = grad[:n]
    if p["clip"] > 0:  # on the device: no read of the gradient norm back to the host
        g = g * torch.clamp(p["clip"] / (torch.sqrt(state[0]) + 1e-6), max=1.0)
    w = param[:n].clone()
    w[:nd] *= s["decay"]
    m = p["beta1"] * m1[:n] + (1 - p["beta1"]) * g
    v = p["beta2"] * m2[:n] + (1 - p["beta2"]) * g * g
    m1[:n], m2[:n] = m, v
    param[:n] = w - s["step_size"] * m / (torch.sqrt(v) / s["bc2_sqrt"] + p["eps"])


# ---- transformer_init ----------------------------------------------------------------------------

def _mul32(x, c: int):
    """(x * c) mod 2^32 for u32 x (int64) and a u32 constant, without overflowing int64."""
    return ((x * (c & 0xFFFF)) + (((x * (c >> 16)) & 0xFFFF) << 16)) & emb.MASK


def _mix32(x):
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


@torch_kernel("transformer_init", "init_normal")
def init_normal(bufs, grid, constants):
    """out[offset + i] = f32(z_i) * scale, z_i the fixed-point normal of hash32(key, i): integer
    steps only, so the same bits as the reference, the WGSL and PyTorch's twin."""
    p = params(bufs[0], init.INIT)
    table, out = u32(bufs[1].t), _f(bufs[2])
    n = p["n"]
    i = torch.arange(n, dtype=torch.int64, device=out.device)
    u = _mix32(_mix32((p["key"] ^ i) & emb.MASK))
    r = torch.clamp(u & 0x7FFFFFFF, min=1)
    octave = sum(((r >> b) != 0).to(torch.int64) for b in range(1, 31))  # floor(log2 r)
    b = torch.clamp(octave - 8, min=0)
    rem = r & ((1 << b) - 1)
    f_hi = torch.where(b >= init.FRAC, rem >> torch.clamp(b - init.FRAC, min=0),
                       rem << torch.clamp(init.FRAC - b, min=0))
    j = torch.where(octave >= 8, (r >> b) & 255, (r << torch.clamp(8 - octave, min=0)) & 255)
    f = torch.where(octave >= 8, f_hi, 0)
    k = octave * init.NODES + j
    z = table[k] - (((table[k] - table[k + 1]) * f) >> init.FRAC)
    z = torch.where((u >> 31) == 1, -z, z)
    out[p["offset"]:p["offset"] + n] = z.to(F32) * p["scale"]
