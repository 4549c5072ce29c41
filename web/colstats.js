// A numeric column's summary for py_core (py_core.data.table.Column.stats), in JavaScript: the
// tab runs it on big columns. Sums are exact then correctly rounded, as Python's math.fsum is
// (Shewchuk's partials and CPython's final rounding step), and a correctly rounded sum is one
// number: the same bits as fsum. py_core checks the kernel against fsum on a prefix.

function fsum(values, limit, f) {
  const partials = [];
  let count = 0;
  for (let k = 0; k < values.length && count < limit; k++) {
    const v = values[k];
    if (v !== v) continue;  // missing
    count++;
    let x = f(v), i = 0;
    for (let j = 0; j < partials.length; j++) {
      let y = partials[j];
      if (Math.abs(x) < Math.abs(y)) { const t = x; x = y; y = t; }
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) partials[i++] = lo;
      x = hi;
    }
    partials.length = i;
    partials.push(x);
  }
  let n = partials.length, hi = 0, lo = 0;
  if (n > 0) {
    hi = partials[--n];
    while (n > 0) {
      const x = hi, y = partials[--n];
      hi = x + y;
      const yr = hi - x;
      lo = y - yr;
      if (lo !== 0) break;
    }
    if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
      const y = lo * 2, x = hi + y, yr = x - hi;
      if (y === yr) hi = x;
    }
  }
  return [count, hi];
}

// Float64Array [count, min, max, sum] of the non-NaN values among the first `limit` of them; min and max as
// Python's min() and max() take them (the first of equal values: 0.0 before -0.0).
function moments(column, limit) {
  const buffer = column.getBuffer("f64");
  try {
    const values = buffer.data;
    let lo = NaN, hi = NaN, seen = 0;
    for (let k = 0; k < values.length && seen < limit; k++) {
      const v = values[k];
      if (v !== v) continue;
      if (seen === 0) { lo = v; hi = v; } else { if (v < lo) lo = v; if (v > hi) hi = v; }
      seen++;
    }
    const [count, total] = fsum(values, limit, (v) => v);
    return Float64Array.of(count, lo, hi, total);  // a typed array keeps -0.0 a float
  } finally {
    buffer.release();
  }
}

// Float64Array [fsum of (v - mean) * (v - mean)] over the non-NaN values among the first `limit`.
function squares(column, mean, limit) {
  const buffer = column.getBuffer("f64");
  try {
    return Float64Array.of(fsum(buffer.data, limit, (v) => { const d = v - mean; return d * d; })[1]);
  } finally {
    buffer.release();
  }
}

export const columnStats = { moments, squares };
