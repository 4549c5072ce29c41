"""Writes the WGSL the probe loads, as backends compile it, into FOLDER/gen/ (run it here, then
carry FOLDER to the GPU machine): transformer_matmul (the f32 kernel), matmul_f16's staged tilings
v0..v7 (probe.html), and the family as compiled with its direct entries' tiles (direct.html).
    PYTHONPATH=. python tools/gpu/f16probe/prepare.py FOLDER"""
import json
import sys
from pathlib import Path
from urllib.parse import quote

from py_core.kernels import matmul_f16 as mf
from py_core.kernels.family import assemble, shader_source
from py_core.kernels.matmul_f16.wgsl import wgsl

STAGED = {"v0": (128, 128, 32, 2, 4), "v1": (128, 128, 32, 2, 2), "v2": (128, 128, 64, 2, 4),
          "v3": (64, 128, 32, 2, 2), "v4": (128, 256, 32, 2, 4), "v5": (256, 128, 32, 4, 2),
          "v6": (64, 64, 32, 2, 2), "v7": (64, 64, 64, 2, 2)}
out = Path(sys.argv[1]) / "gen"
out.mkdir(parents=True, exist_ok=True)
(out / "transformer_matmul.wgsl").write_text(shader_source("transformer_matmul"))
for name, t in STAGED.items():
    (out / f"matmul_f16_{name}.wgsl").write_text(assemble("matmul_f16", wgsl(*t)))
# the family as a backend compiles it (staged matmul, cast_f16, direct entries), for direct.html,
# and the direct entries' tiles (its ?direct= query: run.sh reads gen/direct.query)
(out / "matmul_f16_family.wgsl").write_text(shader_source("matmul_f16"))
(out / "direct.query").write_text("direct=" + quote(json.dumps({n: mf.direct_tile(n) for n in mf.DIRECT})))
