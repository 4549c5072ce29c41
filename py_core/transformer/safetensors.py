"""Weights as safetensors, written and read by hand (struct + a JSON header, no dependency).

Layout (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length N, N bytes
of JSON {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__":
{str: str}}, padded with spaces to 8 bytes, then the raw little-endian data.

What `export_weights` writes is nanoGPT's `GPT.state_dict()` (model.py, bias=True): every key,
`lm_head.weight` included (a copy of `transformer.wte.weight`, to which nanoGPT ties it), so
`GPT(GPTConfig(**json.loads(meta["gpt_config"]))).load_state_dict(load_file(path))` loads it
strictly. Metadata (JSON strings): "gpt_config" (nanoGPT's GPTConfig: block_size, vocab_size,
n_layer, n_head, n_embd, dropout, bias), "vocab" (token i is the character vocab[i]), "config"
(the playground's TransformerConfig, training knobs included). nanoGPT's MLP computes exact GELU;
this model was trained with its tanh form (server/snippets.py says how to match it).
"""
from __future__ import annotations

import json
import struct
import sys
from array import array

from .config import TransformerConfig
from .params import ParamLayout
from .text import Vocab


def dumps(tensors: dict, metadata: dict | None = None) -> bytes:
    """tensors: {name: (shape, array("f"))} -> safetensors bytes."""
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        raw = _le_bytes(values)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def loads(data: bytes) -> tuple[dict, dict]:
    """safetensors bytes -> ({name: (shape, array("f"))}, metadata)."""
    if len(data) < 8:
        raise ValueError("not a safetensors file: shorter than its 8-byte header length")
    (n,) = struct.unpack_from("<Q", data)
    if 8 + n > len(data):
        raise ValueError("not a safetensors file: the header runs past the end")
    header = json.loads(bytes(data[8:8 + n]))
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        if info.get("dtype") != "F32":
            raise ValueError(f"tensor {name!r} is {info.get('dtype')}; only F32 is read")
        begin, end = info["data_offsets"]
        values = array("f")
        values.frombytes(body[begin:end])
        if sys.byteorder == "big":  # pragma: no cover
            values.byteswap()
        shape = tuple(info["shape"])
        if len(values) != _prod(shape):
            raise ValueError(f"tensor {name!r}: {len(values)} values for shape {shape}")
        out[name] = (shape, values)
    return out, metadata


TIED = {"lm_head.weight": "transformer.wte.weight"}  # nanoGPT: lm_head.weight is wte.weight


def gpt_config(config: TransformerConfig, vocab_size: int) -> dict:
    """nanoGPT's GPTConfig for this model."""
    return {"block_size": config.block_size, "vocab_size": vocab_size, "n_layer": config.n_layer,
            "n_head": config.n_head, "n_embd": config.n_embd, "dropout": 0.0, "bias": True}


def export_weights(config: TransformerConfig, vocab: Vocab, weights: array) -> bytes:
    layout = ParamLayout(config, len(vocab))
    tensors = {p.name: (p.shape, weights[p.offset:p.offset + p.size]) for p in layout}
    for name, source in TIED.items():
        tensors[name] = tensors[source]
    meta = {"format": "pt", "gpt_config": json.dumps(gpt_config(config, len(vocab))),
            "config": config.to_json(), "vocab": json.dumps(vocab.chars), "tied": json.dumps(TIED)}
    return dumps(tensors, meta)


def import_weights(data: bytes) -> tuple[TransformerConfig, Vocab, array]:
    """(config, vocab, flat weights) from `export_weights`' bytes (lm_head.weight, tied to
    transformer.wte.weight, is not read)."""
    tensors, meta = loads(data)
    try:
        config = TransformerConfig.from_json(meta["config"])
        vocab = Vocab(json.loads(meta["vocab"]))
    except KeyError as exc:
        raise ValueError(f"safetensors metadata lacks {exc.args[0]!r}: not a playground model") from None
    layout = ParamLayout(config, len(vocab))
    flat = array("f", bytes(4 * layout.n))
    for p in layout:
        if p.name not in tensors or tensors[p.name][0] != p.shape:
            raise ValueError(f"tensor {p.name!r} missing or not of shape {p.shape}")
        flat[p.offset:p.offset + p.size] = tensors[p.name][1]
    return config, vocab, flat


def _le_bytes(values) -> bytes:
    values = values if isinstance(values, array) and values.typecode == "f" else array("f", values)
    if sys.byteorder == "big":  # pragma: no cover
        values = array("f", values)
        values.byteswap()
    return values.tobytes()


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
