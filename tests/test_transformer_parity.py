"""Step for step with PyTorch: the same initial weights and batches give the same losses.

py_core trains on the native backend (lavapipe on CI); server/torch_gpt.py trains the PyTorch
twin on the CPU. Required: step 0's loss within 1e-4 relative, every step within 2%.
"""
from __future__ import annotations

import asyncio
import json
import struct

import numpy as np
import pytest
import torch

from py_core.transformer import (
    ParamLayout,
    Trainer,
    TransformerConfig,
    builtin_text,
    export_weights,
    import_weights,
    init_weights,
)
from py_core.transformer.model import GPT
from py_core.transformer.sample import _Sampler
from server.torch_gpt import GPT as TorchGPT
from server.torch_gpt import load_flat, make_model, train_torch_model

pytestmark = pytest.mark.native
PARAMS = {"preset": "micro", "steps": 200, "sample_chars": 20}


@pytest.fixture(scope="module")
def text():
    return builtin_text("shakespeare")


@pytest.fixture(scope="module")
def runs(native_backend, text):
    """(py_core trainer after 200 steps, its losses, PyTorch's result, model and vocab)."""
    cfg = TransformerConfig.from_params({k: v for k, v in PARAMS.items() if k != "sample_chars"})

    async def go():
        trainer = await Trainer(native_backend, cfg, text).setup()
        for _ in range(cfg.steps):
            await trainer.step()
        return trainer, await trainer.losses()

    trainer, ours = asyncio.run(go())
    result, model, vocab = train_torch_model(text, PARAMS)
    return trainer, ours, result, model, vocab


def test_initial_weights_are_the_same_bits(text):
    cfg = TransformerConfig.preset("micro")
    layout = ParamLayout(cfg, 67)
    ours = init_weights(layout, cfg.seed)
    model = make_model(cfg, 67)
    for p in layout:
        theirs = model.state_dict()[p.name].numpy().reshape(-1)
        assert theirs.tobytes() == ours[p.offset:p.offset + p.size].tobytes(), p.name


def test_losses_match_pytorch(runs):
    _, ours, result, _, _ = runs
    theirs = [v for _, v in result["metrics"]["loss_curve"]]
    assert len(ours) == len(theirs) == PARAMS["steps"]
    step0 = abs(ours[0] - theirs[0]) / theirs[0]
    gaps = [abs(a - b) / b for a, b in zip(ours, theirs)]
    print(f"\nstep-0 relative error {step0:.3g}; max relative gap over {len(gaps)} steps "
          f"{max(gaps):.3g} (step {gaps.index(max(gaps))}); loss {ours[0]:.4f} -> {ours[-1]:.4f}")
    assert step0 < 1e-4
    assert max(gaps) < 0.02
    assert ours[-1] < ours[0] - 0.5  # it learns


def test_validation_loss_matches_pytorch(runs):
    trainer, _, result, _, _ = runs
    theirs = result["metrics"]["val_curve"]
    assert [s for s, _ in theirs] == [50, 100, 150, 200]
    trainer.evals = 3  # PyTorch's estimate at step 200 was its 4th: the same validation batches
    ours = asyncio.run(trainer.evaluate())
    assert abs(ours - theirs[-1][1]) / theirs[-1][1] < 1e-3


def test_trained_weights_match_pytorch(runs):
    trainer, _, _, model, _ = runs
    ours = np.frombuffer(asyncio.run(trainer.model.weights()).tobytes(), dtype=np.float32)
    layout = trainer.model.layout
    for p in layout:
        theirs = model.state_dict()[p.name].detach().numpy().reshape(-1)
        mine = ours[p.offset:p.offset + p.size]
        assert np.allclose(mine, theirs, rtol=1e-2, atol=2e-4), p.name


def test_sampling_logits_match_pytorch(runs, text):
    trainer, _, _, _, vocab = runs
    ids = vocab.encode(text[1000:1011]).tolist()  # shorter than block_size: head row 10

    async def logits():
        sampler = await _Sampler(trainer.trained()).setup()
        return [await sampler.logits(ids), await sampler.logits(ids * 3)]  # and a cropped context

    short, long = asyncio.run(logits())
    model = load_flat(TorchGPT(trainer.config, len(vocab)), asyncio.run(trainer.model.weights()),
                      trainer.model.layout)
    with torch.no_grad():
        t_short = model(torch.tensor([ids]))[0][0, -1].numpy()
        t_long = model(torch.tensor([(ids * 3)[-16:]]))[0][0, -1].numpy()
    assert np.allclose(short, t_short, rtol=1e-4, atol=1e-4)
    assert np.allclose(long, t_long, rtol=1e-4, atol=1e-4)


def _read_safetensors(data: bytes) -> tuple[dict, dict]:
    """A reader independent of py_core: the header by hand, the data through numpy."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__")
    body = data[8 + n:]
    return {k: np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4").reshape(v["shape"])
            for k, v in header.items()}, meta


def test_safetensors_export_loads_in_pytorch_and_imports_back(runs, native_backend):
    trainer, _, _, _, vocab = runs
    weights = asyncio.run(trainer.model.weights())
    data = export_weights(trainer.config, trainer.vocab, weights)
    tensors, meta = _read_safetensors(data)
    assert json.loads(meta["vocab"]) == vocab.chars
    cfg = TransformerConfig.from_json(meta["config"])
    model = TorchGPT(cfg, len(vocab))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()})  # strict
    assert torch.equal(model.lm_head.weight, model.transformer.wte.weight)  # tied
    # and back: a fresh GPU model from the file holds the same bits
    cfg2, vocab2, flat = import_weights(data)
    assert cfg2 == trainer.config and vocab2.chars == vocab.chars
    gpt = GPT(native_backend, cfg2, len(vocab2)).load(flat)
    assert asyncio.run(gpt.weights()).tobytes() == weights.tobytes()


@pytest.mark.slow
def test_tiny_preset_first_steps_match_pytorch(native_backend, text):
    params = {"preset": "tiny", "steps": 3, "eval_steps": 1, "sample_chars": 1}
    cfg = TransformerConfig.preset("tiny", steps=3, eval_steps=1)

    async def go():
        trainer = await Trainer(native_backend, cfg, text).setup()
        for _ in range(cfg.steps):
            await trainer.step()
        return await trainer.losses()

    ours = asyncio.run(go())
    theirs = [v for _, v in train_torch_model(text, params)[0]["metrics"]["loss_curve"]]
    gaps = [abs(a - b) / b for a, b in zip(ours, theirs)]
    print(f"\ntiny: step-0 relative error {gaps[0]:.3g}, max gap {max(gaps):.3g}")
    assert gaps[0] < 1e-4 and max(gaps) < 1e-3


@pytest.mark.parametrize("tiles", ["64", "wide", "big"])
def test_split_weight_gradients_match_pytorch(native_backend, text, monkeypatch, tiles):
    """batch 64 x 16 = 1024 rows: the weight gradients are summed in slices (model.split_k),
    the bias gradients come from the slices' row sums; once with every product on each tiling."""
    from py_core.kernels import transformer_matmul as mm
    from py_core.transformer.model import split_k
    entry = {"64": "matmul", "wide": "matmul_wide", "big": "matmul_big"}[tiles]
    monkeypatch.setattr(mm, "pick", lambda m, n, batches=1, mode="64": (
        entry, mm.entry_grid(entry, m, n, batches)))
    cfg = TransformerConfig.preset("micro", batch_size=64, steps=4, eval_steps=1)
    assert split_k(3 * cfg.n_embd, cfg.n_embd, 1024) > 1

    async def go():
        trainer = await Trainer(native_backend, cfg, text).setup()
        for _ in range(cfg.steps):
            await trainer.step()
        return await trainer.losses(), await trainer.model.weights()

    ours, weights = asyncio.run(go())
    result, model, _ = train_torch_model(text, {"preset": "micro", "batch_size": 64, "steps": 4,
                                                "eval_steps": 1, "sample_chars": 1})
    theirs = [v for _, v in result["metrics"]["loss_curve"]]
    assert max(abs(a - b) / b for a, b in zip(ours, theirs)) < 1e-4
    ours_w = np.frombuffer(weights.tobytes(), dtype=np.float32)
    theirs_w = np.concatenate([model.state_dict()[p.name].detach().numpy().reshape(-1)
                               for p in ParamLayout(cfg, 67)])
    assert np.allclose(ours_w, theirs_w, rtol=1e-3, atol=1e-5)
