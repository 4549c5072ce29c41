"""Writes the WGSL the probe loads, as backends compile it, into FOLDER/gen/ (run it here, then
carry FOLDER to the GPU machine): transformer_matmul (the f32 kernel), matmul_f16's staged tilings
v0..v7 and its direct-load variants d0..d5.
    PYTHONPATH=. python tools/gpu/f16probe/prepare.py FOLDER"""
import sys
from pathlib import Path

from py_core.kernels.family import assemble, shader_source
from py_core.kernels.matmul_f16.wgsl import wgsl, wgsl_direct

STAGED = {"v0": (128, 128, 32, 2, 4), "v1": (128, 128, 32, 2, 2), "v2": (128, 128, 64, 2, 4),
          "v3": (64, 128, 32, 2, 2), "v4": (128, 256, 32, 2, 4), "v5": (256, 128, 32, 4, 2),
          "v6": (64, 64, 32, 2, 2), "v7": (64, 64, 64, 2, 2)}
DIRECT = {"d0": (2, 2, 2, 4, 1), "d1": (1, 1, 2, 4, 1), "d2": (2, 2, 4, 4, 1), "d3": (2, 2, 2, 4, 2),
          "d4": (4, 2, 2, 4, 1), "d5": (2, 2, 4, 2, 2),
          # (subgroups wm x wn, each fm x fn matrices of 16 x 16, k unrolled ku times)
          "e0": (2, 2, 4, 4, 2), "e1": (2, 4, 4, 4, 1), "e2": (4, 2, 4, 4, 1), "e3": (1, 2, 4, 4, 1), "e4": (2, 2, 4, 8, 1), "e5": (2, 2, 8, 4, 1), "e6": (1, 1, 4, 4, 1), "e7": (2, 1, 4, 4, 1)}

out = Path(sys.argv[1]) / "gen"
out.mkdir(parents=True, exist_ok=True)
(out / "transformer_matmul.wgsl").write_text(shader_source("transformer_matmul"))
for name, t in STAGED.items():
    (out / f"matmul_f16_{name}.wgsl").write_text(assemble("matmul_f16", wgsl(*t)))
for name, t in DIRECT.items():
    (out / f"matmul_f16_{name}.wgsl").write_text(wgsl_direct(*t))
