// The numeric fast path of py_core's CSV reader, in JavaScript: run by the worker for files that
// are plain numbers (py_core.data.table._fast_numeric decides which, and checks the result).
//
// parseNumeric(bytes, start, delim, columns, stop, row0) reads the lines of `bytes` (a Uint8Array)
// from byte `start` (a line's first byte) to byte `stop` (just after a line end, or the end of the
// file: py_core hands a big file over in pieces, to look at Stop in between), each
// `columns.length` fields separated by the byte `delim`, into the Float64Arrays `columns` (each
// long enough for every line) from row `row0` on. It returns [rows, blanks] (lines with values,
// blank lines skipped), or null when the piece is not plain numbers: a field
// that Python's float() would not read as a finite number or NaN and that is not one of py_core's
// missing markers, a line with another number of fields, or a quote. py_core then reads the file
// itself, so every error message stays py_core's.
//
// Same bits as Python's float(): a field is checked against float()'s grammar ([ws] [sign]
// digits [. digits] [e [sign] digits] [ws], or nan), then converted exactly: with at most 15
// significant digits and a power of ten up to 1e22, one IEEE multiplication or division of two
// exact numbers (correctly rounded, as float() is); otherwise Number() of the text, which is
// correctly rounded too.

const MISSING = new Set(["", "NA", "N/A", "n/a", "#N/A", "#NA", "<NA>", "NaN", "nan", "-NaN", "-nan",
  "null", "NULL", "None", ".", "-"]);  // py_core.data.table.MISSING
const POW10 = [];
for (let k = 0; k <= 22; k++) POW10.push(Number(`1e${k}`));
const LF = 10, CR = 13;

function isSpace(c) { return c === 32 || c === 9 || c === 11 || c === 12 || c === 10 || c === 13; }

// The value of bytes[a..b) (ws trimmed already); undefined when float() would not give a finite
// number or NaN for it; null for a signed nan (float() keeps its sign bit: py_core reads those).
function number(bytes, a, b) {
  let p = a, negative = false;
  if (p < b && (bytes[p] === 43 || bytes[p] === 45)) { negative = bytes[p] === 45; p++; }
  if (p + 3 === b && (bytes[p] | 32) === 110 && (bytes[p + 1] | 32) === 97 && (bytes[p + 2] | 32) === 110) {
    return p === a ? NaN : null;
  }
  let mantissa = 0, digits = 0, fraction = 0, any = false, long = false;
  while (p < b && bytes[p] >= 48 && bytes[p] <= 57) {
    any = true;
    if (digits || bytes[p] !== 48) {
      if (digits < 15) mantissa = mantissa * 10 + (bytes[p] - 48); else long = true;
      digits++;
    }
    p++;
  }
  if (long) return text(bytes, a, b);
  if (p < b && bytes[p] === 46) {
    p++;
    while (p < b && bytes[p] >= 48 && bytes[p] <= 57) {
      any = true;
      if (digits || bytes[p] !== 48) {
        if (digits < 15) mantissa = mantissa * 10 + (bytes[p] - 48); else long = true;
        digits++;
      }
      fraction++;
      p++;
    }
  }
  if (!any) return undefined;
  let exponent = 0;
  if (p < b && (bytes[p] | 32) === 101) {
    p++;
    let expNegative = false;
    if (p < b && (bytes[p] === 43 || bytes[p] === 45)) { expNegative = bytes[p] === 45; p++; }
    const first = p;
    while (p < b && bytes[p] >= 48 && bytes[p] <= 57) {
      if (p - first < 6) exponent = exponent * 10 + (bytes[p] - 48); else long = true;
      p++;
    }
    if (p === first) return undefined;
    if (expNegative) exponent = -exponent;
  }
  if (p !== b) return undefined;
  if (long) return text(bytes, a, b);
  let value;
  const e10 = exponent - fraction;
  if (mantissa === 0) value = 0;
  else if (e10 >= 0 && e10 <= 22) value = mantissa * POW10[e10];
  else if (e10 < 0 && e10 >= -22) value = mantissa / POW10[-e10];
  else return text(bytes, a, b);
  if (!Number.isFinite(value)) return undefined;
  return negative ? -value : value;
}

function text(bytes, a, b) {
  const value = Number(String.fromCharCode.apply(null, bytes.subarray(a, b)));
  return Number.isFinite(value) ? value : undefined;
}

export function parseNumeric(bytes, start, delim, columns, stop = bytes.length, row0 = 0) {
  const n = stop, ncols = columns.length;
  let p = start, row = row0, blanks = 0;
  while (p < n) {
    if (bytes[p] === LF || (bytes[p] === CR && bytes[p + 1] === LF)) {  // blank line
      p += bytes[p] === CR ? 2 : 1;
      blanks++;
      continue;
    }
    for (let j = 0; j < ncols; j++) {
      let a = p;
      while (p < n && bytes[p] !== delim && bytes[p] !== LF && bytes[p] !== CR) {
        if (bytes[p] === 34) return null;  // a quote
        p++;
      }
      const end = p;
      if (j < ncols - 1 ? bytes[p] !== delim : p < n && bytes[p] === delim) return null;
      let b = end;
      while (a < b && isSpace(bytes[a])) a++;
      while (b > a && isSpace(bytes[b - 1])) b--;
      let value = number(bytes, a, b);
      if (value === null) return null;
      if (value === undefined) {
        if (b - a > 5 || !MISSING.has(String.fromCharCode.apply(null, bytes.subarray(a, b)))) return null;
        value = NaN;
      }
      if (row >= columns[j].length) return null;
      columns[j][row] = value;
      p = end + 1;  // past the delimiter or the line end
    }
    if (bytes[p - 1] === CR) {
      if (bytes[p] !== LF) return null;  // a lone CR: py_core's general path reads those
      p++;
    }
    row++;
  }
  return [row - row0, blanks];
}

// What py_core calls (py_core.data.table.use_numeric_parser): `data` and `columns` are proxies of
// Python's bytes and array('d') objects, read and written in place in Python's memory, no copy.
export function parseNumericFromPython(data, start, delim, columns, stop, row0) {
  const buffers = [], proxies = [];
  try {
    const bytes = data.getBuffer("u8");
    buffers.push(bytes);
    const views = [];
    for (const column of columns) {
      proxies.push(column);
      const buffer = column.getBuffer("f64");
      buffers.push(buffer);
      views.push(buffer.data);
    }
    // undefined: Python's None
    return parseNumeric(bytes.data, start, delim, views, stop ?? bytes.data.length, row0 ?? 0) ?? undefined;
  } finally {
    for (const buffer of buffers) buffer.release();
    for (const proxy of proxies) proxy.destroy();
  }
}
