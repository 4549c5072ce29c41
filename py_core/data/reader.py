"""Strict CSV reading: bytes (or a binary file) in, a header and rows of raw strings out.

This is the raw layer that `table.parse_csv` builds its typed columns on. It uses the standard
library's C `csv.reader` for speed and a small pure-Python scanner (`_scan`) only where a precise
location is needed: to name the line and column of an error, and to check the rare chunks whose
values contain a quote character.

Rules (see `py_core.data` for the whole policy):
- Encodings as `encoding` finds them (UTF-8 with or without a byte-order mark, UTF-16 with one,
  cp1252/latin-1); NUL bytes are refused.
- Line ends CRLF, LF or CR, mixed freely; line numbers are 1-based physical lines of the file.
- Fields may be quoted with `"`; inside quotes a delimiter, a line end and a doubled `""` are data.
- Strict: a quote must open a field and close it. A quote inside an unquoted field (`ab"c`) is an
  error unless `strict=False`, which reads it as a literal character, as spreadsheets do; text after
  a closing quote (`"ab"c`) and a quote that never closes are always errors.
- Blank lines (no characters at all before the line end) are skipped everywhere: before the header,
  between rows, at the end, and also in a one-column file (write a missing value there as `""`).
- The first non-blank record is the header; every other record must have as many fields.
- Bounded memory: a field over `FIELD_LIMIT` characters or a header over `COLUMN_LIMIT` columns is
  refused. A line with more fields than the header (or than `COLUMN_LIMIT`, for the header) is
  refused before csv splits it: a 50 MB line of `1,` would make 25M strings, about 2 GB. Rows are
  handed on in chunks of about `_CHUNK_CELLS` cells.
"""
from __future__ import annotations

import codecs
import copy
import csv
import io
import re
from itertools import chain, islice

from .encoding import BytesView, sniff, to_utf8
from .errors import DataError, data_error

FIELD_LIMIT = 1_000_000  # characters in one field; csv.field_size_limit is set to this
COLUMN_LIMIT = 10_000  # fields in the header
DELIMITERS = (",", ";", "\t", "|")  # detection candidates, in order of preference on a tie
_DELIMITER_NAMES = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|"}
_CHUNK_CELLS = 1 << 17  # cells per chunk: 131072 short strings is a few MB at most
_PROGRESS_STEP = 1 << 20  # report progress about every 1 MB of input
_SAMPLE_BYTES = 1 << 16  # how much of the file delimiter detection looks at
_SAMPLE_RECORDS = 50


def read_rows(data: bytes | str, *, name: str = "data.csv", delimiter: str | None = None,
              strict: bool = True) -> tuple[list[str], list[list[str]]]:
    """Read a whole CSV file as raw strings: (header, rows), blank lines left out.
    Every row has as many fields as the header. Raises DataError."""
    source = CsvSource(data, name=name, delimiter=delimiter, strict=strict)
    return source.header, [row for chunk in source.chunks() for row in chunk]


def detect_delimiter(sample: str) -> str:
    """The delimiter among DELIMITERS that splits the first records of `sample` (quote-aware) into
    the most fields, the same number on every record; ',' when none splits the header."""
    scores = []
    for rank, delim in enumerate(DELIMITERS):
        records = []
        try:
            for row in csv.reader(io.StringIO(sample, newline=""), delimiter=delim, strict=True):
                if row:
                    records.append(len(row))
                if len(records) > _SAMPLE_RECORDS:
                    break
        except csv.Error:  # a quote this delimiter cannot explain, or the sample's cut end
            pass
        if not records or records[0] < 2:
            continue
        consistent = all(n == records[0] for n in records[1:])
        scores.append((consistent, records[0], -rank, delim))
    return max(scores)[3] if scores else ","


def resolve_delimiter(delimiter: str) -> str:
    """Check a delimiter the user chose: one character, or a name such as 'tab' or '\\t'."""
    delim = _DELIMITER_NAMES.get(delimiter.lower(), delimiter) if delimiter else delimiter
    if (not isinstance(delim, str) or len(delim) != 1 or delim == '"'
            or (ord(delim) < 32 or 127 <= ord(delim) < 160) and delim != "\t"):
        raise DataError(f"delimiter {delimiter!r} is not usable: give one character other than "
                        "a quote, a line end or a control character (tab aside), e.g. one of "
                        f"{', '.join(map(repr, DELIMITERS))}")
    return delim


class CsvSource:
    """One pass of the C csv.reader over the physical lines of `data`: bytes, a bytearray (read
    in place), a str, or a seekable binary file read from its start (a file is the source's
    from then on: it is closed with it).

    `header` and `header_line` are read on construction; `chunks()` yields lists of rows, every
    row checked. Each chunk's raw lines are kept (`_keep`) until the next chunk, so that a
    problem can be located exactly by `_scan`. `again(file)` reads the same file once more.
    """

    def __init__(self, data, *, name: str = "data.csv", delimiter: str | None = None,
                 strict: bool = True, progress=None):
        if hasattr(data, "read"):
            self.encoding, codec = sniff(data, name)
            self.data, raw, self.size = None, data, data.seek(0, io.SEEK_END)
            head, more = _utf8_head(raw, codec)
        else:
            if isinstance(data, str):
                data, self.encoding = data.encode("utf-8"), "UTF-8"
            else:
                if not isinstance(data, (bytes, bytearray)):
                    data = bytes(data)
                data, self.encoding = to_utf8(data, name)  # a bytearray is read in place
            codec, self.data, self.size = "utf-8-sig", data, len(data)
            raw = io.BytesIO(data) if isinstance(data, bytes) else \
                io.BufferedReader(BytesView(data))  # BytesIO would copy a bytearray
            head, more = data[:_SAMPLE_BYTES], len(data) > _SAMPLE_BYTES
        self.name, self.strict, self.progress = name, strict, progress
        if delimiter is None:
            sample = head.decode("utf-8-sig", errors="ignore")
            if more:  # leave out the record cut in two
                sample = sample[:max(sample.rfind("\n"), sample.rfind("\r")) + 1] or sample
            self.delimiter = detect_delimiter(sample)
        else:
            self.delimiter = resolve_delimiter(delimiter)
        csv.field_size_limit(FIELD_LIMIT)  # process-wide; set, never restored (threads share it)
        self._max_fields = COLUMN_LIMIT  # per line; the header's length once it is read
        self._start(raw, codec, checked=True)
        self.header: list[str] = []
        self.header_line = 0
        self._read_header()

    def again(self, file) -> CsvSource:
        """The rows of the same file once more (`file`: it opened again), read with the encoding
        and delimiter found here and without the per-line checks, which this source's own pass
        has made: for a second look at a file found valid. Its chunks are this source's."""
        other = copy.copy(self)  # name, strict, encoding, delimiter, header, size, progress
        other._start(file, self._codec, checked=False)
        for row in other._reader:  # up to the header, blank lines skipped
            if row:
                break
        return other

    def _start(self, raw, codec: str, checked: bool) -> None:
        self._raw, self._codec, self._keep = raw, codec, []
        self._text = io.TextIOWrapper(raw, encoding=codec, newline="")
        self._reader = csv.reader(self._kept_lines() if checked else self._text,
            delimiter=self.delimiter, quotechar='"', doublequote=True, strict=True)

    def _read_header(self) -> None:
        rows = [[]]
        while rows and not rows[0]:  # skip blank lines
            self._keep.clear()
            first = self._reader.line_num + 1
            rows = self._next(1)
        if not rows:
            raise data_error(self.name, "no header: the file is empty or has only blank lines")
        self.header_line, self.header = next(_scan("".join(self._keep), self.delimiter, first,
                                                   self.strict, self.name))
        if len(self.header) > COLUMN_LIMIT:
            raise data_error(self.name, f"{len(self.header)} columns in the header, more than the "
                             f"limit of {COLUMN_LIMIT:,}", line=self.header_line)
        # A row a little too long is read and reported with its exact count; one past this is
        # refused unsplit. Bounds a chunk to about 2 * _CHUNK_CELLS cells whatever the file holds.
        self._max_fields = 2 * len(self.header) + 16

    def chunks(self):
        """Yield lists of rows (each a list of len(header) strings), blank lines left out."""
        ncols, size = len(self.header), max(64, _CHUNK_CELLS // len(self.header))
        reported = 0
        while True:
            first = self._reader.line_num + 1
            self._keep.clear()
            rows = self._next(size)
            if not rows:
                break
            lengths = set(map(len, rows))
            if lengths != {ncols}:
                if 0 in lengths:  # blank lines
                    rows = [row for row in rows if row]
                    lengths.discard(0)
                if lengths - {ncols}:
                    self._check(first)  # raises at the first ragged row
                    raise data_error(self.name, f"rows with {sorted(lengths)} fields, expected "
                                     f"{ncols} like the header", line=first)  # not reached
            if self.strict and any('"' in line for line in self._keep) \
                    and '"' in "\x00".join(chain.from_iterable(rows)):
                self._check(first)  # raises at a quote inside an unquoted field, if any
            if self.progress is not None and self._raw.tell() - reported >= _PROGRESS_STEP:
                reported = self._raw.tell()
                self.progress(reported / self.size)
            if rows:
                yield rows
        if self.progress is not None:
            self.progress(1.0)

    def _next(self, n: int) -> list[list[str]]:
        first = self._reader.line_num + 1
        try:
            return list(islice(self._reader, n))
        except UnicodeDecodeError:  # not after `sniff`, unless the file changed meanwhile
            raise data_error(self.name, f"not {self.encoding} any more: the file changed while "
                             "it was read") from None
        except csv.Error as e:
            self._check(first)  # raises with the exact place when the scanner finds it
            raise data_error(self.name, str(e), line=self._reader.line_num) from None

    def _check(self, first: int) -> None:
        """Scan the kept lines (starting at line `first`) and raise at the first bad record."""
        ncols = len(self.header)
        for line, fields in _scan("".join(self._keep), self.delimiter, first, self.strict,
                                  self.name, self.header):
            if ncols and len(fields) != ncols:  # ncols is 0 while the header is being read
                count = f"{len(fields)} field{'s' * (len(fields) != 1)}"
                raise data_error(self.name, f"row has {count}, expected {ncols} like the header "
                                 f"on line {self.header_line}", line=line,
                                 column=min(len(fields), ncols) + 1, header=self.header)

    def _kept_lines(self):
        """The file's physical lines, each kept (see `_keep`) and checked for too many fields
        before csv splits it. Whether a line starts inside a quoted field is the parity of the
        quotes before it (a doubled `""` counts twice); only strict mode can rely on that."""
        append, delim = self._keep.append, self.delimiter
        inside, number = False, 0
        for line in self._text:
            number += 1
            quotes = line.count('"')
            if line.count(delim) >= self._max_fields and (self.strict or not quotes):
                parts = line.split('"')
                if sum(p.count(delim) for p in parts[inside::2]) >= self._max_fields:
                    raise self._too_many_fields(number)
            inside ^= quotes & 1
            append(line)
            yield line

    def _too_many_fields(self, line: int) -> DataError:
        if not self.header:
            return data_error(self.name, f"more than the limit of {COLUMN_LIMIT:,} columns in the "
                              "header", line=line)
        return data_error(self.name, f"row has more than {self._max_fields} fields, expected "
                          f"{len(self.header)} like the header on line {self.header_line}",
                          line=line)


def _utf8_head(raw, codec: str) -> tuple[bytes, bool]:
    """The first _SAMPLE_BYTES of the file `raw` as UTF-8 (as `to_utf8` would give them), and
    whether the file has more; leaves `raw` at its start."""
    raw.seek(0)
    block = raw.read(4 * _SAMPLE_BYTES)  # at least _SAMPLE_BYTES characters in any codec
    more = raw.read(1) != b""
    if codec != "utf-8-sig":  # incremental: a character cut at the end is no error
        block = codecs.getincrementaldecoder(codec)().decode(block).encode("utf-8")
    raw.seek(0)
    return block[:_SAMPLE_BYTES], more or len(block) > _SAMPLE_BYTES


_QUOTED = re.compile(r'"((?>[^"]*+)(?:""[^"]*+)*+)"')  # possessive: no backtracking into `""`
_UNQUOTED: dict[tuple[str, bool], re.Pattern] = {}


def _eols(text: str, start: int, end: int) -> int:
    crlf = text.count("\r\n", start, end)
    return text.count("\n", start, end) + text.count("\r", start, end) - crlf


def _scan(text: str, delim: str, first_line: int, strict: bool, name: str,
          header: list[str] | None = None):
    """Yield (line, fields) for each non-blank record of `text`, whose first character is on line
    `first_line`; the same records as csv.reader(strict=True). Raises DataError at the first quote
    out of place, unterminated quoted field or over-long field, naming its line and column."""
    key = (delim, strict)
    if key not in _UNQUOTED:  # strict: an unquoted field stops at a quote, which is then an error
        stops = re.escape(delim) + "\r\n" + ('"' if strict else "")
        _UNQUOTED[key] = re.compile(f"[^{stops}]*+")
    unquoted = _UNQUOTED[key]
    pos, n, line, counted = 0, len(text), first_line, 0

    def fail(what: str, at: int, column: int):
        return data_error(name, what, line=line + _eols(text, counted, at), column=column,
                          header=header)

    while pos < n:
        if text[pos] in "\r\n":  # blank line
            pos += 2 if text.startswith("\r\n", pos) else 1
            continue
        line, counted = line + _eols(text, counted, pos), pos
        fields: list[str] = []
        while True:
            if pos < n and text[pos] == '"':
                m = _QUOTED.match(text, pos)
                if m is None:
                    if n - pos > FIELD_LIMIT:
                        raise fail(f"quoted field longer than {FIELD_LIMIT:,} characters "
                                   f"(is its closing quote missing?)", pos, len(fields) + 1)
                    raise fail("unterminated quote: the quoted field that opens here never "
                               "closes", pos, len(fields) + 1)
                value, end = m.group(1).replace('""', '"'), m.end()
                if end < n and text[end] not in (delim, "\r", "\n"):
                    raise fail(f"unescaped quote in a quoted field: expected {delim!r} or a line "
                               f"end after the closing quote, found {text[end]!r} (write a quote "
                               f"inside a quoted field as \"\")", end - 1, len(fields) + 1)
            else:
                m = unquoted.match(text, pos)
                value, end = m.group(), m.end()
                if end < n and text[end] == '"':
                    raise fail("unescaped quote in an unquoted field: quote the whole field and "
                               "double the quotes inside it", end, len(fields) + 1)
            if len(value) > FIELD_LIMIT:
                raise fail(f"field longer than {FIELD_LIMIT:,} characters", pos, len(fields) + 1)
            fields.append(value)
            pos = end
            if pos >= n:
                break
            if text[pos] == delim:
                pos += 1
                continue
            pos += 2 if text.startswith("\r\n", pos) else 1
            break
        yield line, fields
