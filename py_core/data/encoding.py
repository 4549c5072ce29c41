"""Which encoding a CSV file is in, found by reading it a megabyte at a time.

Tried in this order: UTF-16 with a byte-order mark ('UTF-16 (BOM)'), UTF-8 with a BOM
('UTF-8 (BOM)', the BOM kept: the reader skips it) or without ('UTF-8', ASCII included), then the
single-byte encodings Excel writes on Windows: 'cp1252' when a byte 0x80-0x9f is there (curly
quotes, the euro sign), else 'latin-1' (the same characters for every other byte). Refused
(DataError naming the byte offset and line): a NUL byte, a broken UTF-16 file, and a file that is
not UTF-8 and has a byte that is no character in cp1252 (0x81, 0x8d, 0x8f, 0x90, 0x9d: a C1
control code in latin-1).

    label, codec = sniff(stream, name)    # a seekable binary stream, read from its start
    data, label = to_utf8(data, name)     # bytes in memory, converted to UTF-8

`codec` is what Python decodes the file with: 'utf-8-sig', 'utf-16' or 'cp1252' (a latin-1 file
has no byte that cp1252 reads otherwise). Line structure is kept in every encoding, so lines and
columns are the file's own.
"""
from __future__ import annotations

import codecs
import io
import re

from .errors import data_error

STEP = 1 << 20  # bytes read at a time: no 100 MB str is made to check a file
_CP1252_UNDEFINED = re.compile(rb"[\x81\x8d\x8f\x90\x9d]")  # no character in cp1252
_CP1252_ONLY = re.compile(rb"[\x80-\x9f]")  # printable in cp1252, control codes in latin-1


def sniff(raw, name: str = "data.csv") -> tuple[str, str]:
    """(label, codec) of the seekable binary stream `raw`, read from its current position (its
    start) to its end; DataError when it fits none. Leaves `raw` anywhere: seek before reading."""
    head = raw.read(STEP)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        _check_utf16(raw, head, name)
        return "UTF-16 (BOM)", "utf-16"
    label = "UTF-8 (BOM)" if head.startswith(codecs.BOM_UTF8) else "UTF-8"
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, bad, block = 0, None, head
    while True:
        nul = block.find(b"\x00")
        if nul >= 0:
            at = offset + nul
            raise data_error(name, f"NUL byte at byte offset {at}: this is not a text file",
                             line=line_at(raw, at))
        pending = len(decoder.getstate()[0])  # an unfinished character from the last block
        if bad is None and (pending or not block or not block.isascii()):
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as e:
                bad = offset - pending + e.start
        if not block:
            break
        offset += len(block)
        block = raw.read(STEP)
    if bad is None:
        return label, "utf-8-sig"
    undefined, cp1252 = _single_byte_marks(raw)
    if undefined is not None:
        raise data_error(name, f"fits no encoding this reader knows (UTF-8, UTF-16 with a "
                         f"byte-order mark, cp1252/latin-1): not UTF-8 at byte {bad} (counted "
                         f"from 0; byte 0x{_byte_at(raw, bad):02x}, line {line_at(raw, bad)}), "
                         f"and byte 0x{_byte_at(raw, undefined):02x} at byte offset {undefined} "
                         f"is no character in cp1252 (a control code in latin-1); save the file "
                         f"as UTF-8", line=line_at(raw, undefined))
    return ("cp1252" if cp1252 else "latin-1"), "cp1252"


def to_utf8(data: bytes | bytearray, name: str = "data.csv") -> tuple[bytes | bytearray, str]:
    """(the file as UTF-8 bytes, the name of the encoding it was read in); see `sniff`. UTF-8
    comes back as given (a bytearray is read in place, not copied), a BOM kept."""
    stream = io.BytesIO(data) if isinstance(data, bytes) else io.BufferedReader(BytesView(data))
    label, codec = sniff(stream, name)
    if codec == "utf-8-sig":
        return data, label
    return data.decode(codec).encode("utf-8"), label


def line_at(raw, offset: int) -> int:
    """1-based line of byte `offset` of the seekable binary stream `raw`, counting CRLF, LF and
    CR line ends; reads it again from the start."""
    raw.seek(0)
    line, after_cr, pos = 1, False, 0
    while pos < offset:
        block = raw.read(min(STEP, offset - pos))
        if not block:
            break
        line += line_ends(block, after_cr)
        after_cr, pos = block.endswith(b"\r"), pos + len(block)
    return line


def line_ends(chunk: bytes | str, after_cr: bool = False) -> int:
    """CRLF, LF and CR line ends in `chunk`; `after_cr`: what came before it ended with a CR, so
    that a leading LF only completes that CRLF."""
    lf, cr = ("\n", "\r") if isinstance(chunk, str) else (b"\n", b"\r")
    return chunk.count(lf) + chunk.count(cr) - chunk.count(cr + lf) \
        - (after_cr and chunk.startswith(lf))


def _check_utf16(raw, head: bytes, name: str) -> None:
    """DataError at the first byte that is not UTF-16, else at the first NUL character."""
    decoder = codecs.getincrementaldecoder("utf-16")()
    offset, chars, lines, after_cr, nul, block = 0, 0, 1, False, None, head
    while True:
        pending = len(decoder.getstate()[0])
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError as e:
            raise data_error(name, f"not UTF-16 at byte offset {offset - pending + e.start} "
                             f"(counted from 0; the file starts with a UTF-16 byte-order mark): "
                             f"{e.reason}") from None
        if nul is None and "\x00" in text:
            at = text.index("\x00")
            nul = (2 * (chars + at), lines + line_ends(text[:at], after_cr))
        lines += line_ends(text, after_cr)
        after_cr = text.endswith("\r") if text else after_cr
        chars += len(text)
        if not block:
            break
        offset += len(block)
        block = raw.read(STEP)
    if nul is not None:
        raise data_error(name, f"NUL character at byte offset {nul[0]}: this is not a text file",
                         line=nul[1])


def _single_byte_marks(raw) -> tuple[int | None, bool]:
    """(offset of the first byte no character in cp1252, or None; whether a byte 0x80-0x9f is
    there)."""
    raw.seek(0)
    offset, undefined, cp1252 = 0, None, False
    while block := raw.read(STEP):
        if undefined is None and (m := _CP1252_UNDEFINED.search(block)):
            undefined = offset + m.start()
        cp1252 = cp1252 or _CP1252_ONLY.search(block) is not None
        offset += len(block)
    return undefined, cp1252


def _byte_at(raw, offset: int) -> int:
    raw.seek(offset)
    return raw.read(1)[0]


class BytesView(io.RawIOBase):
    """A seekable raw stream over a bytes-like object that reads it in place (io.BytesIO copies
    whatever is not bytes: the tab streams a fetched file into a bytearray to hold it once)."""

    def __init__(self, data):
        self._view, self._pos = memoryview(data).cast("B"), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = max(0, min(len(buffer), len(self._view) - self._pos))
        buffer[:n] = self._view[self._pos:self._pos + n]
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = (0, self._pos, len(self._view))[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos
