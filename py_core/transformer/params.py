"""Where each parameter lives in the flat parameter buffer, and its initial values.

All parameters sit in one f32 buffer (gradients and AdamW moments in three more of the same
layout), so the gradient norm and the optimizer are one dispatch each, as in llm.c. Names are
nanoGPT's `state_dict` keys; the LM head is tied to `transformer.wte.weight`. The tensors that
AdamW decays (the 2-D weights, as nanoGPT's configure_optimizers) come first: the first
`n_decay` elements decay, the rest (biases and LayerNorm) do not. A LayerNorm's weight and bias
are adjacent, so their gradients come out of one column sum.

Linear weights are stored as torch.nn.Linear's (out_features, in_features), y = x W^T + b.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

from ..rng import normals
from .config import TransformerConfig


@dataclass(frozen=True)
class Param:
    name: str
    shape: tuple
    offset: int       # elements into the flat buffer
    decay: bool       # AdamW weight decay applies
    init: str         # "normal", "zeros" or "ones"
    std: float = 0.0  # of "normal"

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class ParamLayout:
    """The flat layout of a GPT's parameters for a config and vocabulary size."""

    def __init__(self, config: TransformerConfig, vocab_size: int):
        c, f, nl = config.n_embd, 4 * config.n_embd, config.n_layer
        std, proj_std = 0.02, 0.02 / math.sqrt(2 * nl)  # nanoGPT: c_proj scaled for the residual
        decayed = [("transformer.wte.weight", (vocab_size, c), std),
                   ("transformer.wpe.weight", (config.block_size, c), std)]
        plain = []
        for i in range(nl):
            h = f"transformer.h.{i}."
            decayed += [(h + "attn.c_attn.weight", (3 * c, c), std),
                        (h + "attn.c_proj.weight", (c, c), proj_std),
                        (h + "mlp.c_fc.weight", (f, c), std),
                        (h + "mlp.c_proj.weight", (c, f), proj_std)]
            plain += [(h + "ln_1.weight", (c,), "ones"), (h + "ln_1.bias", (c,), "zeros"),
                      (h + "attn.c_attn.bias", (3 * c,), "zeros"),
                      (h + "attn.c_proj.bias", (c,), "zeros"),
                      (h + "ln_2.weight", (c,), "ones"), (h + "ln_2.bias", (c,), "zeros"),
                      (h + "mlp.c_fc.bias", (f,), "zeros"), (h + "mlp.c_proj.bias", (c,), "zeros")]
        plain += [("transformer.ln_f.weight", (c,), "ones"), ("transformer.ln_f.bias", (c,), "zeros")]
        self.params: list[Param] = []
        offset = 0
        for entries, decay in ((decayed, True), (plain, False)):
            for name, shape, how in entries:
                p = Param(name, shape, offset, decay, "normal" if decay else how,
                          how if decay else 0.0)
                self.params.append(p)
                offset += p.size
            if decay:
                self.n_decay = offset
        self.n = offset
        self.by_name = {p.name: p for p in self.params}

    def offset(self, name: str) -> int:
        return self.by_name[name].offset

    def __iter__(self):
        return iter(self.params)


def init_weights(layout: ParamLayout, seed: int) -> array:
    """nanoGPT's initialisation from `seed`: normal(0, 0.02) weights and embeddings (c_proj's
    scaled by 1/sqrt(2 n_layer)), zero biases, unit LayerNorm gains; bit-identical everywhere."""
    flat = array("f", bytes(4 * layout.n))
    for p in layout:
        if p.init == "normal":
            flat[p.offset:p.offset + p.size] = normals(seed, p.name, p.size, p.std)
        elif p.init == "ones":
            flat[p.offset:p.offset + p.size] = array("f", [1.0]) * p.size
    return flat
