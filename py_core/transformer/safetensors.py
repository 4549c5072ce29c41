"""Weights as safetensors, written and read by hand (struct + a JSON header, no dependency).

Layout (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length N, N bytes
of JSON {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__":
{str: str}}, padded with spaces to 8 bytes, then the raw little-endian data. Names are nanoGPT's
state_dict keys; `lm_head.weight` is tied to `transformer.wte.weight` and not stored twice (as
safetensors' own save_model does); the metadata holds the config and the vocabulary as JSON.
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


def export_weights(config: TransformerConfig, vocab: Vocab, weights: array) -> bytes:
    layout = ParamLayout(config, len(vocab))
    tensors = {p.name: (p.shape, weights[p.offset:p.offset + p.size]) for p in layout}
    meta = {"format": "pt", "config": config.to_json(), "vocab": json.dumps(vocab.chars),
            "tied": json.dumps({"lm_head.weight": "transformer.wte.weight"})}
    return dumps(tensors, meta)


def import_weights(data: bytes) -> tuple[TransformerConfig, Vocab, array]:
    """(config, vocab, flat weights) from `export_weights`' bytes."""
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
