"""The transformer's safetensors export loads into nanoGPT's GPT with load_state_dict(strict)
and gives the tab's logits; the PyTorch snippet the server serves for it runs as it is.

nanoGPT's model.py is not shipped: tests/nanogpt_standin.py has its module tree, names and
forward. The file is read with the `safetensors` package, as the snippet reads it. The tab's
model is py_core's GPT on the reference backend (the executable specification of the page's
kernels), with fresh random weights every run, biases and LayerNorm gains included.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import json
import shutil
import sys
import uuid
from array import array
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from py_core.gpu.reference import ReferenceBackend
from py_core.transformer import TransformerConfig, export_weights
from py_core.transformer.model import GPT as TabGPT
from py_core.transformer.params import ParamLayout
from py_core.transformer.sample import TrainedModel, _Sampler
from py_core.transformer.text import Vocab

STANDIN = Path(__file__).with_name("nanogpt_standin.py")


@pytest.fixture
def settings(settings):
    settings.comparisons = "off"  # the snippet's run needs no comparison jobs
    return settings


@pytest.fixture
def nanogpt(tmp_path, monkeypatch):
    """nanoGPT's `model` module, importable as the snippet imports it."""
    shutil.copy(STANDIN, tmp_path / "model.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "model", raising=False)
    monkeypatch.chdir(tmp_path)
    return importlib.import_module("model")


def random_model(rng) -> tuple[TransformerConfig, Vocab, array]:
    cfg = TransformerConfig.preset("micro", n_layer=rng.choice([1, 2]), n_head=2,
                                   n_embd=rng.choice([16, 32]), block_size=rng.choice([8, 12]))
    vocab = Vocab("".join(sorted(rng.sample("\nabcdefghijklmnopqrstuvwxyz ,.!?;:", 24))))
    layout = ParamLayout(cfg, len(vocab))
    flat = array("f", [rng.gauss(0.0, 0.2) for _ in range(layout.n)])
    for p in layout:  # LayerNorm gains near 1, as trained ones are
        if p.name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            flat[p.offset:p.offset + p.size] = array("f", [1 + rng.gauss(0, 0.2) for _ in range(p.size)])
    return cfg, vocab, flat


def tab_logits(cfg, vocab, flat, contexts) -> np.ndarray:
    async def go():
        backend = ReferenceBackend()
        async with backend.scope("test"):
            model = TrainedModel(cfg, vocab, TabGPT(backend, cfg, len(vocab)).load(flat))
            sampler = await _Sampler(model).setup()
            return [await sampler.logits(ids) for ids in contexts]
    return np.array(asyncio.run(go()))


def test_nanogpts_load_state_dict_takes_it_and_gives_the_tabs_logits(nanogpt, rng, tmp_path):
    cfg, vocab, flat = random_model(rng)
    path = tmp_path / "transformer.safetensors"
    path.write_bytes(export_weights(cfg, vocab, flat))
    weights = load_file(path)
    meta = json.loads(_metadata(path)["gpt_config"])
    assert meta == {"block_size": cfg.block_size, "vocab_size": len(vocab), "n_layer": cfg.n_layer,
                    "n_head": cfg.n_head, "n_embd": cfg.n_embd, "dropout": 0.0, "bias": True}
    model = nanogpt.GPT(nanogpt.GPTConfig(**meta))
    assert set(weights) == set(model.state_dict())  # every name, nothing more
    model.load_state_dict(weights, strict=True)
    model.eval()
    contexts = [[rng.randrange(len(vocab)) for _ in range(n)] for n in (1, cfg.block_size // 2, cfg.block_size)]
    ours = tab_logits(cfg, vocab, flat, contexts)

    def theirs():
        with torch.no_grad():
            return np.array([model(torch.tensor([ids]))[0][0, -1].numpy() for ids in contexts])

    exact = theirs()  # nanoGPT as it is: exact GELU, against the tab's tanh form
    for block in model.transformer.h:  # what the snippet does
        block.mlp.gelu = torch.nn.GELU(approximate="tanh")
    tanh = theirs()
    np.testing.assert_allclose(tanh, ours, rtol=1e-4, atol=1e-5)
    gap = np.abs(exact - ours).max()
    print(f"\nnanoGPT's exact GELU: logits within {gap:.2g} of the tab's")
    assert gap < 0.05  # the two GELUs differ by < 1e-3 an activation


def _metadata(path) -> dict:
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        return f.metadata()


def test_the_served_pytorch_snippet_runs(nanogpt, rng, tmp_path, client):
    cfg, vocab, flat = random_model(rng)
    run = {"id": str(uuid.uuid4()), "kind": "transformer", "backend": "webgpu",
           "config": {"kind": "transformer", "text": "shakespeare", "params": {"preset": "micro"}}}
    assert client.post("/api/runs", json=run).status_code == 201
    r = client.get(f"/api/runs/{run['id']}/snippet")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    (tmp_path / f"transformer-{run['id'][:8]}.safetensors").write_bytes(
        export_weights(cfg, vocab, flat))
    printed, threads = io.StringIO(), torch.get_num_threads()
    torch.set_num_threads(1)  # 200 steps of a tiny model: 50x slower with 2 threads on a busy CI
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(r.text, "snippet.py", "exec"), {})
    finally:
        torch.set_num_threads(threads)
    text = printed.getvalue()[:-1]  # print's newline
    assert len(text) == 201 and set(text) <= set(vocab.chars)  # the first token and 200 more
