"""Reference of `transformer_embedding.wgsl`: batches, embeddings and their gradients.

Batch offsets come from py_core.rng's `batch_offset` (hash32: the same numbers on every platform).
"""
from __future__ import annotations

from ...rng import batch_offset
from .. import reference
from ..family import Family
from ..layout import Struct

BATCH = Struct("B:u32 T:u32 n_windows:u32 key:u32")
SCHED = Struct("step:u32 slot:u32 lr:f32 step_size:f32 bc2_sqrt:f32 decay:f32")
EMBED = Struct("M:u32 T:u32 C:u32 V:u32 wte_off:u32 wpe_off:u32")
EMBED_PART = Struct("M:u32 C:u32 V:u32 chunk:u32 out_off:u32")
FAMILY = Family(structs={"Batch": BATCH, "Sched": SCHED, "Embed": EMBED, "EmbedPart": EMBED_PART})


@reference("transformer_embedding", "get_batch", writes={3, 4})
def get_batch(bufs, grid, constants):
    prm, sched, tokens, idx, tgt = bufs
    p = BATCH.unpack(prm)
    step = SCHED.unpack(sched)["step"]
    b_, t_ = p["B"], p["T"]
    for b in range(b_):
        o = batch_offset(p["key"], step, b, b_, p["n_windows"])
        idx[b * t_:(b + 1) * t_] = tokens[o:o + t_]
        tgt[b * t_:(b + 1) * t_] = tokens[o + 1:o + t_ + 1]


@reference("transformer_embedding", "embed_forward", writes={3})
def embed_forward(bufs, grid, constants):
    prm, idx, w, x = bufs
    p = EMBED.unpack(prm)
    c_, t_ = p["C"], p["T"]
    for m in range(p["M"]):
        e = p["wte_off"] + idx[m] * c_
        q = p["wpe_off"] + (m % t_) * c_
        x[m * c_:(m + 1) * c_] = type(x)("f", [a + b for a, b in zip(w[e:e + c_], w[q:q + c_])])


@reference("transformer_embedding", "embed_backward_wte", writes={3})
def embed_backward_wte(bufs, grid, constants):
    prm, idx, dx, out = bufs
    p = EMBED_PART.unpack(prm)
    c_, v_, m_, chunk = p["C"], p["V"], p["M"], p["chunk"]
    for z in range(grid[2]):
        sums = [[0.0] * c_ for _ in range(v_)]
        for m in range(z * chunk, min(m_, (z + 1) * chunk)):  # position order, as the kernel sums
            row = dx[m * c_:(m + 1) * c_]
            sums[idx[m]] = [a + b for a, b in zip(sums[idx[m]], row)]
        o = p["out_off"] + z * v_ * c_
        out[o:o + v_ * c_] = type(out)("f", [x for s in sums for x in s])


@reference("transformer_embedding", "embed_backward_wpe", writes={2})
def embed_backward_wpe(bufs, grid, constants):
    prm, dx, g = bufs
    p = EMBED.unpack(prm)
    c_, t_, m_ = p["C"], p["T"], p["M"]
    for t in range(t_):
        s = [0.0] * c_
        for m in range(t, m_, t_):
            s = [a + b for a, b in zip(s, dx[m * c_:(m + 1) * c_])]
        o = p["wpe_off"] + t * c_
        g[o:o + c_] = type(g)("f", s)
