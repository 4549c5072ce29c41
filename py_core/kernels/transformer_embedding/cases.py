"""Self-test cases of `transformer_embedding`: the batch draw and the embeddings, forward and
backward, on shapes that are not tile multiples."""
from __future__ import annotations

from array import array

from .. import transformer_elementwise as ew
from .. import transformer_embedding as emb
from ..cases import case, random_floats, uniform


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
    sched = uniform(backend, emb.SCHED, step=rng.randrange(1000), slot=0, lr=0.0, step_size=0.0,
                     bc2_sqrt=1.0, decay=1.0)
    bp = uniform(backend, emb.BATCH, B=b_, T=t_, n_windows=n_tok - t_, key=rng.getrandbits(32))
    ep = uniform(backend, emb.EMBED, M=m_, T=t_, C=c_, V=v_, wte_off=3, wpe_off=3 + v_ * c_)
    plan = backend.plan()
    plan.dispatch(await backend.kernel("transformer_embedding", "get_batch"),
                  [bp, sched, tokens, idx, tgt], (-(-m_ // 64), 1, 1))
    plan.dispatch(await backend.kernel("transformer_embedding", "embed_forward"), [ep, idx, w, x],
                  ew.grid_1d(m_ * c_))
    chunk = 16  # positions a part sums: 3 parts, the last one short
    parts = backend.buffer("f32", data=random_floats(rng, 5 + 3 * v_ * c_))
    pp = uniform(backend, emb.EMBED_PART, M=m_, C=c_, V=v_, chunk=chunk, out_off=5)
    plan.dispatch(await backend.kernel("transformer_embedding", "embed_backward_wte"), [pp, idx, dx, parts],
                  (-(-c_ // 64), v_, -(-m_ // chunk)))
    plan.dispatch(await backend.kernel("transformer_embedding", "embed_backward_wpe"), [ep, dx, g],
                  ew.grid_1d(t_ * c_))
    return plan, [idx, tgt, x, g, parts], 4 * m_ * c_
