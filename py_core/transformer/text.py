"""Texts and their character vocabulary, the same in the tab and on the server.

The vocabulary is the sorted set of the text's characters, by Unicode code point (nanoGPT's
shakespeare_char `prepare.py`); token i is the i-th character. The tail `val_fraction` of the
token ids is the validation split.
"""
from __future__ import annotations

from array import array
from pathlib import Path

BUILTIN_TEXTS = {"shakespeare": "shakespeare.txt"}  # text id -> file in py_core/texts/


def builtin_text(name: str) -> str:
    """A built-in text by id (see BUILTIN_TEXTS)."""
    if name not in BUILTIN_TEXTS:
        raise KeyError(f"no built-in text {name!r}: choose one of {', '.join(BUILTIN_TEXTS)}")
    path = Path(__file__).resolve().parent.parent / "texts" / BUILTIN_TEXTS[name]
    return path.read_text(encoding="utf-8")


class Vocab:
    """Characters <-> token ids. `Vocab.from_text(text)`; `chars` round-trips through JSON."""

    def __init__(self, chars: str):
        if len(set(chars)) != len(chars) or list(chars) != sorted(chars):
            raise ValueError("a vocabulary is a string of distinct characters in code-point order")
        self.chars = chars
        self._index = {ch: i for i, ch in enumerate(chars)}

    @classmethod
    def from_text(cls, text: str) -> "Vocab":
        if not text:
            raise ValueError("the text is empty")
        return cls("".join(sorted(set(text))))

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> array:
        try:
            return array("I", [self._index[ch] for ch in text])
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


def split(ids: array, val_fraction: float) -> tuple[array, array]:
    """(train, val): the first 1 - val_fraction of the tokens, and the rest (nanoGPT: 90 / 10)."""
    n = int(len(ids) * (1.0 - val_fraction))
    return ids[:n], ids[n:]
