// Exact 64-bit integer and f64 steps on u32 pairs, for results the same on every GPU.

// == tree_f64
// Exact round-to-nearest-even of a 64-bit two's complement integer to f32 (|v| < 2^63), by integer
// steps, so every backend gets the same float (WGSL leaves f32(u32) rounding open).
fn i64_to_f32(lo: u32, hi: u32) -> f32 {
  let neg = (hi >> 31u) == 1u;
  var mlo = lo;
  var mhi = hi;
  if (neg) {
    mlo = ~lo + 1u;
    mhi = ~hi + select(0u, 1u, mlo == 0u);
  }
  if (mhi == 0u && mlo < 16777216u) {
    let m = f32(mlo);
    return select(m, -m, neg);
  }
  var top = firstLeadingBit(mlo);
  if (mhi != 0u) { top = 32u + firstLeadingBit(mhi); }
  let sh = top - 23u;  // 1 .. 39 bits drop off
  var mant: u32;
  var up: bool;
  if (sh < 32u) {
    mant = (mlo >> sh) | (mhi << (32u - sh));
    let rem = mlo & ((1u << sh) - 1u);
    let half = 1u << (sh - 1u);
    up = rem > half || (rem == half && (mant & 1u) == 1u);
  } else {
    let s2 = sh - 32u;
    mant = mhi >> s2;
    let rem_hi = mhi & ((1u << s2) - 1u);
    var half_hi = 0u;
    var half_lo = 0x80000000u;
    if (s2 > 0u) { half_hi = 1u << (s2 - 1u); half_lo = 0u; }
    let gt = rem_hi > half_hi || (rem_hi == half_hi && mlo > half_lo);
    let eq = rem_hi == half_hi && mlo == half_lo;
    up = gt || (eq && (mant & 1u) == 1u);
  }
  mant += select(0u, 1u, up);
  let m = ldexp(f32(mant), i32(sh));
  return select(m, -m, neg);
}

// 64-bit integers as vec2u (lo, hi), wrapping. Shifts take 0 <= s < 64.
fn add64(a: vec2u, b: vec2u) -> vec2u {
  let lo = a.x + b.x;
  return vec2u(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn sub64(a: vec2u, b: vec2u) -> vec2u {
  return vec2u(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

fn shl64(v: vec2u, s: u32) -> vec2u {
  if (s == 0u) { return v; }
  if (s < 32u) { return vec2u(v.x << s, (v.y << s) | (v.x >> (32u - s))); }
  return vec2u(0u, v.x << (s - 32u));
}

fn shr64(v: vec2u, s: u32) -> vec2u {
  if (s == 0u) { return v; }
  if (s < 32u) { return vec2u((v.x >> s) | (v.y << (32u - s)), v.y >> s); }
  return vec2u(v.y >> (s - 32u), 0u);
}

// v / 2^s rounded half to even, 1 <= s < 64.
fn rne_shr64(v: vec2u, s: u32) -> vec2u {
  let q = shr64(v, s);
  let rem = sub64(v, shl64(q, s));
  let half = shl64(vec2u(1u, 0u), s - 1u);
  let gt = rem.y > half.y || (rem.y == half.y && rem.x > half.x);
  let eq = rem.y == half.y && rem.x == half.x;
  return select(q, add64(q, vec2u(1u, 0u)), gt || (eq && (q.x & 1u) == 1u));
}

// 32 x 32 -> 64-bit product, by 16-bit halves.
fn mul64(a: u32, b: u32) -> vec2u {
  let al = a & 0xFFFFu;
  let ah = a >> 16u;
  let bl = b & 0xFFFFu;
  let bh = b >> 16u;
  let lh = al * bh;
  let hl = ah * bl;
  var r = add64(vec2u(al * bl, ah * bh), vec2u(lh << 16u, lh >> 16u));
  return add64(r, vec2u(hl << 16u, hl >> 16u));
}

fn lt64(a: vec2u, b: vec2u) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }

// x / w rounded to nearest (ties to even), x an f32 (0 or normal), 1 <= w < 2^24, the same bits on
// every GPU: WGSL lets f32 division err by 2.5 ulp and GPUs do differ (NVIDIA's is not correctly
// rounded). Every split score and leaf value divides here. The hardware quotient is a first
// guess, moved one ulp at a time until exact integer products put x / w within half an ulp of it
// (the midpoints, scaled by 4 w: (4 mq +- 2) w against 4 x, mq its 24-bit mantissa). The CPU's
// f32 division gives the same bits (the reference computes it as f64 then f32: exact for such
// operands).
fn div_rn(x: f32, w: u32) -> f32 {
  let xb = bitcast<u32>(x);
  let E = (xb >> 23u) & 0xFFu;
  let q0 = abs(x) / f32(w);
  var qb = bitcast<u32>(q0);
  if (E == 0u || E == 0xFFu || w == 0u || qb < 0x800000u || qb >= 0x7F800000u) { return x / f32(w); }
  let mx = (xb & 0x7FFFFFu) | 0x800000u;  // |x| = mx 2^(E - 150)
  for (var it = 0u; it < 4u; it++) {
    let eq = qb >> 23u;
    let mq = (qb & 0x7FFFFFu) | 0x800000u;  // q = mq 2^(eq - 150)
    let sh = i32(E) - i32(eq) + 2;          // 4 x in units of 2^(eq - 150) w... = mx << sh
    if (sh < 0 || sh > 38) { break; }       // not met for a guess within a few ulp
    let x4 = shl64(vec2u(mx, 0u), u32(sh));
    let up = mul64(4u * mq + 2u, w);        // the midpoint above q, times 4 w
    let below = select(2u, 1u, mq == 0x800000u);  // a power of two: the ulp below is half
    let down = mul64(4u * mq - below, w);   // the midpoint below q
    let odd = (mq & 1u) == 1u;
    if (lt64(up, x4) || (all(up == x4) && odd)) {
      qb += 1u;
    } else if (lt64(x4, down) || (all(down == x4) && odd)) {
      qb -= 1u;
    } else {
      break;
    }
  }
  return bitcast<f32>((xb & 0x80000000u) | qb);
}

// The largest f32 <= (a + b) / 2 (a < b, finite), by integer steps: a split's threshold. An f32
// value lies at or below it exactly when it lies at or below the real midpoint, which is how
// scikit-learn compares (f32 X against its f64 midpoint threshold).
fn mid_down(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let Ea = (ua >> 23u) & 0xFFu;
  let Eb = (ub >> 23u) & 0xFFu;
  let ma = (ua & 0x7FFFFFu) | select(0u, 0x800000u, Ea != 0u);  // |a| = ma 2^(ea - 150)
  let mb = (ub & 0x7FFFFFu) | select(0u, 0x800000u, Eb != 0u);
  let ea = max(Ea, 1u);
  let eb = max(Eb, 1u);
  let na = (ua >> 31u) == 1u;
  let nb = (ub >> 31u) == 1u;
  let emin = min(ea, eb);
  if (max(ea, eb) - emin > 38u) {  // the smaller one only decides the rounding
    var big = ua;
    var tiny_m = mb;
    var tiny_neg = nb;
    if (eb > ea) {
      big = ub;
      tiny_m = ma;
      tiny_neg = na;
    }
    let half = big - 0x800000u;  // big / 2: big's exponent is above 39
    if (tiny_m == 0u || !tiny_neg) { return bitcast<f32>(half); }
    return bitcast<f32>(select(half - 1u, half + 1u, (half >> 31u) == 1u));  // one step down
  }
  let A = shl64(vec2u(ma, 0u), ea - emin);
  let B = shl64(vec2u(mb, 0u), eb - emin);
  var mag: vec2u;
  var neg = na;
  if (na == nb) {
    mag = add64(A, B);
  } else if (A.y > B.y || (A.y == B.y && A.x >= B.x)) {
    mag = sub64(A, B);
  } else {
    mag = sub64(B, A);
    neg = nb;
  }
  if (mag.x == 0u && mag.y == 0u) { return 0.0; }
  var top = firstLeadingBit(mag.x);
  if (mag.y != 0u) { top = 32u + firstLeadingBit(mag.y); }
  // (a + b) / 2 = +-mag 2^u, u = emin - 151; keep 24 bits, or down to 2^-149 (subnormal)
  let u = i32(emin) - 151;
  let lead = i32(top) + u;
  var sh = i32(top) - 23;
  if (lead < -126) { sh = -149 - u; }
  var mant: u32;
  var dropped = false;
  if (sh > 0) {
    let q = shr64(mag, u32(sh));
    let back = shl64(q, u32(sh));
    dropped = back.x != mag.x || back.y != mag.y;
    mant = q.x;
  } else {
    mant = shl64(mag, u32(-sh)).x;
  }
  if (neg && dropped) { mant += 1u; }  // toward -inf
  var bits = mant;
  if (lead >= -126) { bits = (u32(lead + 126) << 23u) + mant; }
  return bitcast<f32>(select(0u, 0x80000000u, neg) | bits);
}

// The f32 nearest an f64 (ties to even; beyond f32's range: inf), by integer steps: the same
// bits as the CPU's double-to-float conversion (array('f') in Python).
fn f64_to_f32_bits(lo: u32, hi: u32) -> u32 {
  let sign = hi & 0x80000000u;
  let E = (hi >> 20u) & 0x7FFu;
  let mh = hi & 0xFFFFFu;
  if (E == 0x7FFu) { return sign | 0x7F800000u | select(0u, 0x400000u, (mh | lo) != 0u); }
  if (E == 0u) { return sign; }  // zero, or an f64 subnormal: far below f32's smallest
  let e = i32(E) - 1023;
  if (e > 127) { return sign | 0x7F800000u; }
  if (e >= -126) {
    let m = (mh << 3u) | (lo >> 29u);  // the top 23 of 52 mantissa bits
    let rem = lo & 0x1FFFFFFFu;
    var bits = (u32(e + 127) << 23u) | m;
    if (rem > 0x10000000u || (rem == 0x10000000u && (m & 1u) == 1u)) { bits += 1u; }  // may carry to inf
    return sign | bits;
  }
  let sh = u32(-97 - e);  // an f32 subnormal: (2^52 + mantissa) * 2^(e - 52) in units of 2^-149
  if (sh > 53u) { return sign; }
  return sign | rne_shr64(vec2u(lo, mh | 0x100000u), sh).x;
}

// round(y * 2^e) mod 2^64 of an f64 y (finite), by integer steps.
fn f64_scaled_round(lo: u32, hi: u32, e: i32) -> vec2u {
  let E = (hi >> 20u) & 0x7FFu;
  let m = vec2u(lo, (hi & 0xFFFFFu) | select(0u, 0x100000u, E != 0u));  // y = m * 2^(E' - 1075)
  let k = i32(max(E, 1u)) - 1075 + e;
  var v = vec2u(0u, 0u);
  if (k >= 0) {
    if (k < 64) { v = shl64(m, u32(k)); }
  } else if (k > -54) {  // below that, |y 2^e| < 1/2
    v = rne_shr64(m, u32(-k));
  }
  if ((hi >> 31u) == 1u) { v = sub64(vec2u(0u, 0u), v); }
  return v;
}
