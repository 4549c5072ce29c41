// The bulk kernels of py_core's synthetic data sets (py_core/data/synthetic.py), in JavaScript:
// the same integer and IEEE-754 operations in the same order as their Python forms, so the same
// bits; py_core checks each result on a sample of indices. Arguments are proxies of Python
// array objects, written in place in Python's memory (getBuffer: no copy).

const LN2 = 0.6931471805599453, SQRT_HALF = 0.7071067811865476, P_LOW = 0.02425;
const A = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
  1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00];
const B = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
  6.680131188771972e+01, -1.328068155288572e+01];
const C = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
  -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00];
const D = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00];
const INV = [];  // 1.0 / k for the odd k of _log's series
for (let k = 0; k <= 25; k++) INV.push(1.0 / k);
const scratch = new DataView(new ArrayBuffer(8));

function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function uniformAt(k1, k2, i) {
  const a = fmix32(fmix32(((2 * i) ^ k1) >>> 0) ^ k2);
  const b = fmix32(fmix32(((2 * i + 1) ^ k1) >>> 0) ^ k2);
  return ((a >>> 5) * 67108864.0 + (b >>> 6) + 0.5) / 9007199254740992.0;
}

// synthetic._log: x = m 2^e (frexp, m in [0.5, 1)), then the atanh series.
function log(x) {
  scratch.setFloat64(0, x);
  const hi = scratch.getUint32(0);
  let e = ((hi >>> 20) & 0x7ff) - 1022;  // x is a normal number here (p >= 2^-54)
  scratch.setUint32(0, (hi & 0x800fffff) | (1022 << 20));
  let m = scratch.getFloat64(0);
  if (m < SQRT_HALF) { m = m * 2.0; e = e - 1; }
  const f = (m - 1.0) / (m + 1.0);
  const f2 = f * f;
  let series = 0.0;
  for (let k = 25; k > 0; k -= 2) series = series * f2 + INV[k];
  return e * LN2 + 2.0 * f * series;
}

function inverseNormal(p) {
  if (p < P_LOW || p > 1.0 - P_LOW) {
    const q = Math.sqrt(-2.0 * log(p < P_LOW ? p : 1.0 - p));
    const x = (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) /
      ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0);
    return p < P_LOW ? x : -x;
  }
  const q = p - 0.5, r = q * q;
  return (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q /
    (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0);
}

function withBuffers(pairs, fn) {
  const buffers = [];
  try {
    return fn(...pairs.map(([proxy, type]) => { const b = proxy.getBuffer(type); buffers.push(b); return b.data; }));
  } finally {
    for (const b of buffers) b.release();
  }
}

export const kernels = {
  normals(out, k1, k2) {
    withBuffers([[out, "f64"]], (o) => { for (let i = 0; i < o.length; i++) o[i] = inverseNormal(uniformAt(k1, k2, i)); });
  },
  labels(out, k1, k2, k) {
    withBuffers([[out, "i32"]], (o) => { for (let i = 0; i < o.length; i++) o[i] = Math.floor(uniformAt(k1, k2, i) * k); });
  },
  axpy(out, y, a, x) {
    withBuffers([[out, "f64"], [y, "f64"], [x, "f64"]], (o, yy, xx) => {
      for (let i = 0; i < o.length; i++) o[i] = yy[i] + a * xx[i];
    });
  },
  blobColumn(out, e, labels, middles, std) {
    withBuffers([[out, "f64"], [e, "f64"], [labels, "i32"], [middles, "f64"]], (o, ee, ll, mm) => {
      for (let i = 0; i < o.length; i++) o[i] = mm[ll[i]] + std * ee[i];
    });
  },
};
