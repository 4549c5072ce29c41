"""Reference of `transformer_attention.wgsl`: causal softmax in place and its backward."""
from __future__ import annotations

import math

from .. import reference
from ..family import Family
from ..layout import Struct

PARAMS = Struct("T:u32 rows:u32 scale:f32 pad:u32")
FAMILY = Family(structs={"Params": PARAMS})


@reference("transformer_attention", "softmax_causal", writes={1})
def softmax_causal(bufs, grid, constants):
    prm, s = bufs
    p = PARAMS.unpack(prm)
    t = p["T"]
    for r in range(p["rows"]):
        i, base = r % t, r * t
        row = s[base:base + i + 1]
        m = max(row)
        e = [math.exp(v - m) for v in row]
        inv = 1.0 / sum(e)
        s[base:base + t] = type(s)("f", [v * inv for v in e] + [0.0] * (t - i - 1))


@reference("transformer_attention", "softmax_causal_backward", writes={2})
def softmax_causal_backward(bufs, grid, constants):
    prm, pr, dp = bufs
    p = PARAMS.unpack(prm)
    t, scale = p["T"], p["scale"]
    for r in range(p["rows"]):
        i, base = r % t, r * t
        d = sum(pr[base + j] * dp[base + j] for j in range(i + 1))
        dp[base:base + t] = type(dp)("f", [scale * pr[base + j] * (dp[base + j] - d)
                                          for j in range(i + 1)] + [0.0] * (t - i - 1))
