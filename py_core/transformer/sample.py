"""Sampling on the GPU: a forward pass over the last block_size characters for each new one.

The sampling pass is recorded once at batch 1 with the LM head computing a single row; for each
character Python writes the context (block_size ids) and the head's row offset, runs the plan,
reads back V logits and draws the next character with temperature and top-k, from the hash RNG
(so the same seed and logits give the same text in the tab and on the server).
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

from ..kernels import transformer_matmul as mm
from ..rng import STREAM_SAMPLE, stream_key, uniform
from .config import TransformerConfig
from .model import GPT, Activations
from .text import Vocab


@dataclass
class TrainedModel:
    """A model on a backend, ready to sample from: what a finished training job leaves behind."""
    config: TransformerConfig
    vocab: Vocab
    gpt: GPT
    scope: object = field(default=None, repr=False)  # owns the weights and the sampler's buffers
    _sampler: object = field(default=None, repr=False)

    @property
    def gpu_bytes(self) -> int:
        """Bytes this model keeps on its backend (weights, and the sampler's once it has sampled)."""
        return self.scope.nbytes if self.scope is not None else 4 * self.gpt.n_params

    def close(self) -> None:
        """Free the model's GPU memory; it cannot sample afterwards."""
        if self.scope is not None:
            self.scope.close()
        self._sampler = None


def choose(logits, temperature: float, top_k: int | None, u: float) -> int:
    """The token whose cumulative probability first exceeds u, after temperature and top-k
    (nanoGPT's sample.py: logits / temperature, keep those >= the k-th largest, softmax).
    temperature 0 picks the largest logit."""
    if temperature <= 0:
        return max(range(len(logits)), key=logits.__getitem__)
    scaled = [x / temperature for x in logits]
    floor = sorted(scaled, reverse=True)[top_k - 1] if top_k and top_k < len(scaled) else -math.inf
    top = max(scaled)
    weights = [math.exp(x - top) if x >= floor else 0.0 for x in scaled]
    target, acc = u * sum(weights), 0.0
    for i, w in enumerate(weights):
        acc += w
        if w and acc >= target:
            return i
    return max(i for i, w in enumerate(weights) if w)


class _Sampler:
    def __init__(self, model: TrainedModel):
        self.model = model

    async def setup(self) -> "_Sampler":
        gpt, cfg = self.model.gpt, self.model.config
        self.acts = Activations(gpt.backend, cfg, gpt.vocab_size, 1, cfg.block_size, backward=False, head_rows=1)
        self.plan = gpt.backend.plan()
        self.head = await gpt.record_forward(self.plan, self.acts)
        return self

    async def logits(self, context: list[int]) -> list[float]:
        gpt, cfg = self.model.gpt, self.model.config
        ids = context[-cfg.block_size:]
        gpt.backend.write(self.acts.idx, array("I", ids + [0] * (cfg.block_size - len(ids))))
        gpt.backend.write(self.head, mm.PARAMS.pack(**mm.params(
            1, gpt.vocab_size, cfg.n_embd, mm.TRANS_B, a_off=(len(ids) - 1) * cfg.n_embd,
            b_off=gpt.layout.offset("transformer.wte.weight"))))
        await gpt.backend.run(self.plan)
        return (await gpt.backend.read(self.acts.logits, gpt.vocab_size)).tolist()


async def sample(model: TrainedModel, prompt: str = "", n: int = 200, temperature: float = 0.8,
                 top_k: int | None = 200, seed: int = 0, on_char=None) -> str:
    """n characters after `prompt`; `on_char(ch)` (plain or async) is called with each as it comes."""
    vocab = model.vocab
    if not prompt:
        prompt = "\n" if "\n" in vocab.chars else vocab.chars[0]
    context = vocab.encode(prompt).tolist()
    if model.scope is not None and model.scope.closed:
        raise ValueError("this model's GPU memory was freed (a newer run replaced it): train again")
    if model._sampler is None:
        if model.scope is not None:
            with model.scope.use():  # the sampler's buffers and plan live as long as the model
                model._sampler = await _Sampler(model).setup()
        else:
            model._sampler = await _Sampler(model).setup()
    key = stream_key(seed, STREAM_SAMPLE)
    out = []
    for i in range(n):
        nxt = choose(await model._sampler.logits(context), temperature, top_k, uniform(key, i))
        context.append(nxt)
        ch = vocab.chars[nxt]
        out.append(ch)
        if on_char is not None:
            res = on_char(ch)
            if hasattr(res, "__await__"):
                await res
    return "".join(out)
