"""The transformer's initial weights, vocabulary and batches are the same bits under Pyodide (the
browser's Python, run here by Node) as under this CPython: what lets the tab and the server train
from the same start on the same data."""
from __future__ import annotations

from pyodide_harness import NEEDS_PYODIDE, run_both

pytestmark = NEEDS_PYODIDE

PROGRAM = r'''
import hashlib, json
from py_core.transformer import (STREAM_TRAIN, STREAM_VAL, ParamLayout, TransformerConfig, Vocab,
                                 batch_offsets, builtin_text, init_weights)
text = builtin_text("shakespeare")
cfg = TransformerConfig.preset("micro", n_layer=3, n_embd=48, n_head=3)
vocab = Vocab.from_text(text + "ü☃")
w = init_weights(ParamLayout(cfg, len(vocab)), 4242)
out = {"weights": hashlib.sha256(w.tobytes()).hexdigest(), "vocab": vocab.chars,
       "batches": [batch_offsets(s, st, k, 7, 30000) for s in (0, 1337, 2**32 - 1)
                   for st in (STREAM_TRAIN, STREAM_VAL) for k in (0, 1, 99999)],
       "lr": [cfg.lr_at(k) for k in range(0, cfg.steps, 7)]}
print(json.dumps(out, sort_keys=True))
'''

def test_same_weights_and_batches_in_pyodide(tmp_path, capsys):
    in_browser, here = run_both(PROGRAM, tmp_path, capsys,
                                ["gpu", "kernels", "transformer", "texts", "rng.py", "params.py", "errors.py"],
                                timeout=180)
    assert in_browser == here
