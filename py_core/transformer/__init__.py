"""A character-level GPT (nanoGPT's architecture) trained on the GPU through the kernel interface.

    config = TransformerConfig.preset("tiny", steps=500)
    trainer = await Trainer(backend, config, text).setup()
    for _ in range(config.steps):
        await trainer.step()             # one recorded plan a step
    losses = await trainer.losses()      # one readback
    model = trainer.trained()
    text = await sample(model, "ROMEO:", 200, temperature=0.8, top_k=40, seed=1)

The server's PyTorch twin (server/torch_gpt.py) uses this package's config, vocabulary, initial
weights and batch offsets, so the two runs start from bit-identical weights and see the same data.
"""
from ..rng import STREAM_SAMPLE, STREAM_TRAIN, STREAM_VAL, batch_offsets
from .config import PRESETS, TransformerConfig
from .model import GPT, memory_bytes
from .params import ParamLayout, init_weights
from .safetensors import export_weights, import_weights
from .sample import TrainedModel, choose, sample
from .text import BUILTIN_TEXTS, Vocab, builtin_text, split
from .train import Trainer

__all__ = ["PRESETS", "TransformerConfig", "GPT", "memory_bytes", "ParamLayout", "init_weights",
           "batch_offsets", "STREAM_TRAIN", "STREAM_VAL", "STREAM_SAMPLE", "export_weights",
           "import_weights", "TrainedModel", "choose", "sample", "BUILTIN_TEXTS", "Vocab",
           "builtin_text", "split", "Trainer"]
