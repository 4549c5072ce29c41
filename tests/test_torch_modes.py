"""The PyTorch twin's precisions (server/torch_gpt.py): f32, TF32, autocast fp16 with a
GradScaler, autocast bf16, chosen by torch_mode or by the page's precision."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from py_core.transformer import builtin_text  # noqa: E402
from server.torch_gpt import TORCH_MODES, torch_mode, train_torch  # noqa: E402

PARAMS = {"preset": "micro", "steps": 6, "n_layer": 1, "eval_interval": 6, "sample_chars": 0}


def test_mode_follows_the_page_precision_unless_named():
    assert torch_mode({}) == "f32" and torch_mode({"precision": "mixed"}) == "fp16"
    assert torch_mode({"precision": "mixed", "torch_mode": "bf16"}) == "bf16"
    with pytest.raises(ValueError, match="torch_mode must be one of f32, tf32, fp16, bf16"):
        torch_mode({"torch_mode": "fp8"})


def test_every_mode_trains_and_the_half_modes_differ_from_f32():
    text = builtin_text("shakespeare")[:6000]
    curves = {}
    for mode in TORCH_MODES:
        r = train_torch(text, {**PARAMS, "torch_mode": mode})
        assert r["metrics"]["torch_mode"] == mode
        curves[mode] = [v for _, v in r["metrics"]["loss_curve"]]
    assert curves["tf32"] == curves["f32"]  # TF32 changes nothing on the CPU
    for mode in ("fp16", "bf16"):
        assert curves[mode] != curves["f32"]
        assert all(abs(a - b) < 0.05 * a for a, b in zip(curves[mode], curves["f32"])), (mode, curves)
    assert not torch.backends.cuda.matmul.allow_tf32  # the process-wide switch is restored
