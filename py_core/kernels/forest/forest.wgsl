// Random forest, grown level by level for a batch of trees at once (py_core/forest/builder.py).
// References: py_core/kernels/forest/__init__.py. Every kernel takes the same uniform Params at binding 0
// (sort_pass: its own Sort; thresholds: Bins).
// Once a fit: check_finite (X, and targets for y), sample + sort_pass (each feature's sorted
// subsample, for the bin thresholds), bin_features, targets (y to fixed point).
// A level (or, where one level's histograms do not fit a buffer, each range of its slots):
// hist_clear (zero the built slots) -> hist_build (atomics, built slots) -> split_vary (derived
// slots = parent - sibling; per feature of an open slot: varies? rank?) -> split_rows (the same
// for SMALL slots, from their listed rows, and only the bins of the features they scan) ->
// split_scan (best split per selected feature) -> split_pick (per node); then alloc (number the
// children, give the open ones next-level slots, list room for SMALL ones) -> route_rows (and the
// lists). Histograms stay raw, bin by bin.
// On GPUs the _wg versions of split_vary, split_scan and split_pick do their work. After a
// batch's last level: finalize (its trees into prediction arrays), importance, oob; predict.
//
// Shapes (u32 unless said): X (rows, F) f32, or f64 as two words (lo, hi) when p.xd = 1: read
// through x_at, which rounds an f64 to f32 exactly as the CPU does · edges f32 (NB, 3): per bin
// its upper threshold, smallest and largest value · fmeta (F, 2): first global bin, bins · binned
// (n, FW): four 8-bit bins a word, or two 16-bit ones (p.b16: bin_word, bin_in) · target (n): i32 fixed-point y or class · state (T, n):
// slot << SLOT_SHIFT | bootstrap count · hist (T, S_h, NB, C): the slots [s_lo, s_lo + S_h) of the level
// (S_h = S: all of them) · slots (T, S, 4): node, flags, parent slot, end of its rows' list
// (SMALL) · list (T, n): rows of SMALL slots, row << SLOT_SHIFT | count · childmap (T, S, 2)
// · left (T, S, C) · cand (T, S_h, F, 4): the pass's slots · nodes (T, NC, 4 + C): the batch's
// trees (T of them, the first tree0), per node feature, bin, next bin, left child, stats[C] (the
// node's channels; a leaf's feature is LEAF) · meta (T_all, 2): nodes, open slots next level.
// Prediction arrays, a chunk of trees (the forest is one chunk or several): ptree (N, 3):
// feature, threshold bits, left child (LEAF in a leaf) · pval f32 (N, K) · offs (T_all): each
// tree's first node in its chunk. · flags (1): 1 X, 2 y not finite.
// Channels C: regression [sum lo, sum hi, weight, rows] (the sum is 64-bit two's complement in two
// u32, exact under atomics); classification [weight of class 0..K-1, rows].
// Grids are 2-D when large: workgroup id = wid.x + wid.y * nwg.x.

@group(0) @binding(0) var<uniform> p: Params;

fn linear(wid: vec3u, nwg: vec3u) -> u32 { return wid.x + wid.y * nwg.x; }

// PCG hash (O'Neill); hash3 keys a stream by (seed, what, index). Same in forest.py.
fn pcg(x: u32) -> u32 {
  let s = x * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

fn hash3(a: u32, b: u32, c: u32) -> u32 { return pcg(pcg(pcg(a) + b) + c); }

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

// ---- exact_ops: div_rn and mid_down on given operands (their test) ---------------------------
// 1 ops (n, 3): a bits, b bits, w · 2 out (n, 2): div_rn(a, w) bits, mid_down(a, b) bits.
@group(0) @binding(1) var<storage, read> eo_ops: array<u32>;
@group(0) @binding(2) var<storage, read_write> eo_out: array<u32>;

@compute @workgroup_size(256)
fn exact_ops(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n) { return; }
  let a = bitcast<f32>(eo_ops[3u * i]);
  eo_out[2u * i] = bitcast<u32>(div_rn(a, eo_ops[3u * i + 2u]));
  eo_out[2u * i + 1u] = bitcast<u32>(mid_down(a, bitcast<f32>(eo_ops[3u * i + 1u])));
}

// ---- X: rows of f32, or of f64 read as the f32 nearest each --------------------------------
@group(0) @binding(1) var<storage, read> X: array<u32>;

fn x_bits(r: u32, f: u32) -> u32 {
  let i = r * p.F + f;
  if (p.xd == 0u) { return X[i]; }
  return f64_to_f32_bits(X[2u * i], X[2u * i + 1u]);
}

fn x_at(r: u32, f: u32) -> f32 { return bitcast<f32>(x_bits(r, f)); }

// ---- the binned matrix: a row's bins in FW words, four of 8 bits a word, or two of 16 (p.b16,
// where a feature has more than 256 bins) --------------------------------------------------------
fn bin_word(f: u32) -> u32 { return f >> (2u - p.b16); }  // feature f's word in its row

fn bin_in(word: u32, f: u32) -> u32 {  // feature f's bin from its word
  let bits = 8u << p.b16;
  return (word >> (bits * (f & ((4u >> p.b16) - 1u)))) & ((1u << bits) - 1u);
}

// ---- check_finite: flags |= 1 when some X value is NaN or infinite (as f32) ------------------
// 1 X · 2 flags (1) atomic. Thread per value.
@group(0) @binding(2) var<storage, read_write> cf_flags: array<atomic<u32>>;

@compute @workgroup_size(256)
fn check_finite(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n * p.F) { return; }
  if ((x_bits(i / p.F, i % p.F) & 0x7F800000u) == 0x7F800000u) { atomicOr(&cf_flags[0], NOT_FINITE_X); }
}

// ---- sample: every step-th row of each feature, padded with +inf to SM values ----------------
// 1 X · 2 samp (F, SM) f32 bits out (-0 made +0, so that equal values have equal bits).
// Thread per (feature, i). sort_pass then sorts each feature's SM values.
@group(0) @binding(2) var<storage, read_write> sa_out: array<u32>;

@compute @workgroup_size(256)
fn sample(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.F * p.SM) { return; }
  let f = i / p.SM;
  let j = i % p.SM;
  var v = 0x7F800000u;
  if (j * p.step < p.n) {
    v = x_bits(j * p.step, f);
    if ((v & 0x7FFFFFFFu) == 0u) { v = 0u; }
  }
  sa_out[i] = v;
}

// ---- sort_pass: one compare-exchange pass (j, k) of a bitonic sort of `count` runs of `len` ---
// 1 data (count, len) f32 bits, sorted ascending as floats (finite, or +inf) through an integer
// key. Thread per pair. Run for k = 2, 4, .., len and, for each, j = k/2, .., 1.
@group(0) @binding(0) var<uniform> so: Sort;
@group(0) @binding(1) var<storage, read_write> so_data: array<u32>;

fn order_key(b: u32) -> u32 { return select(b ^ 0x80000000u, ~b, (b >> 31u) == 1u); }

@compute @workgroup_size(256)
fn sort_pass(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  let half = so.len / 2u;
  if (i >= so.count * half) { return; }
  let t = i % half;
  let a = (i / half) * so.len + 2u * so.j * (t / so.j) + t % so.j;
  let b = a + so.j;
  let x = so_data[a];
  let y = so_data[b];
  let up = ((2u * so.j * (t / so.j) + t % so.j) & so.k) == 0u;
  if ((order_key(x) > order_key(y)) == up && x != y) {
    so_data[a] = y;
    so_data[b] = x;
  }
}

// ---- thresholds: each feature's bins from its sorted sample (binning.py's feature_bins) -----
// 0 Bins · 1 samp (F, SM) f32 bits, each feature's first m sorted (finite, -0 made +0) · 2 out
// (F, record_words): per feature its number of bins, then per bin its upper threshold (+inf for
// the last), smallest and largest value, as f32 bits. Workgroup per feature (nbins <= 256: a
// thread a bin). Values are compared as bits (order_key), so subnormals count as on the CPU.
// The same bits as feature_bins: at most max(nbins, exact) distinct values, a bin each with
// thresholds at their midpoints (mid_down: each written by the thread that finds the next value,
// however many); else the cuts at the (m - 1) k / nbins quantiles (k = 1 .. nbins
// - 1; a value where its two neighbours agree, else their midpoint), non-decreasing in k so that
// dropping repeats is Python's sorted(set(...)), the top bin kept for the largest value.
@group(0) @binding(0) var<uniform> bn: Bins;
@group(0) @binding(1) var<storage, read> th_samp: array<u32>;
@group(0) @binding(2) var<storage, read_write> th_out: array<u32>;

var<workgroup> th_cnt: array<u32, 256>;  // boundaries (value changes) in each thread's chunk, then their prefix
var<workgroup> th_cut: array<u32, 256>;  // the quantile cuts, f32 bits
var<workgroup> th_end: array<u32, 256>;  // each bin's end in the sorted values
var<workgroup> th_n: u32;

fn th_key(f: u32, i: u32) -> u32 { return order_key(th_samp[f * bn.SM + i]); }

fn th_upper(f: u32, key: u32, below: bool) -> u32 {  // first i with v[i] > key (>= key if below)
  var lo = 0u;
  var hi = bn.m;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    let k = th_key(f, mid);
    if (k < key || (!below && k == key)) { lo = mid + 1u; } else { hi = mid; }
  }
  return lo;
}

fn th_mid(a: u32, b: u32) -> u32 {  // feature_bins' cut between two sorted values
  if (a == b) { return a; }
  return bitcast<u32>(mid_down(bitcast<f32>(a), bitcast<f32>(b)));
}

@compute @workgroup_size(256)
fn thresholds(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let f = linear(wid, nwg);  // uniform: a workgroup's feature
  if (f >= bn.F) { return; }  // a 2-D grid's last row runs past the features
  let m = bn.m;
  let nb = bn.nbins;
  let base = f * bn.SM;
  let chunk = (m + 255u) / 256u;
  let c0 = max(1u, lid * chunk);
  let c1 = min(m, (lid + 1u) * chunk);
  var changes = 0u;
  for (var i = c0; i < c1; i++) {
    changes += select(0u, 1u, th_samp[base + i] != th_samp[base + i - 1u]);
  }
  th_cnt[lid] = changes;
  workgroupBarrier();
  if (lid == 0u) {
    var total = 0u;
    for (var t = 0u; t < 256u; t++) {
      let c = th_cnt[t];
      th_cnt[t] = total;
      total += c;
    }
    th_n = total + 1u;  // distinct values
  }
  let distinct = workgroupUniformLoad(&th_n);
  let out0 = f * (1u + 3u * min(max(nb, bn.exact), m));  // record_words
  if (distinct <= max(nb, bn.exact)) {  // a bin per value: value a (from 0) starts where the
    if (lid == 0u) {                     // sample changes for the a-th time
      let v = th_samp[base];
      th_out[out0] = distinct;
      th_out[out0 + 2u] = v;
      th_out[out0 + 3u] = v;
      th_out[out0 + 1u + 3u * (distinct - 1u)] = 0x7F800000u;  // the last bin's: +inf
    }
    var at = 1u + th_cnt[lid];
    for (var i = c0; i < c1; i++) {
      let u = th_samp[base + i - 1u];
      let v = th_samp[base + i];
      if (v != u) {
        th_out[out0 + 1u + 3u * (at - 1u)] = th_mid(u, v);  // the value before's threshold
        th_out[out0 + 2u + 3u * at] = v;
        th_out[out0 + 3u + 3u * at] = v;
        at++;
      }
    }
    return;
  }
  if (lid + 1u < nb) {  // cut k = lid + 1
    let h = (m - 1u) * (lid + 1u);
    let q = h / nb;
    th_cut[lid] = th_mid(th_samp[base + q], th_samp[base + q + select(0u, 1u, h % nb != 0u)]);
  }
  workgroupBarrier();
  if (lid == 0u) {
    var kept = 0u;
    for (var k = 0u; k + 1u < nb; k++) {
      let c = th_cut[k];
      if (kept == 0u || c != th_cut[kept - 1u]) {
        th_cut[kept] = c;
        kept++;
      }
    }
    let top = th_samp[base + m - 1u];
    if (order_key(th_cut[kept - 1u]) >= order_key(top)) {  // the top bin must hold the largest value
      kept--;
      let below = th_samp[base + th_upper(f, order_key(top), true) - 1u];
      if (kept == 0u || order_key(th_cut[kept - 1u]) < order_key(below)) {
        th_cut[kept] = th_mid(below, top);
        kept++;
      }
    }
    th_n = kept;
  }
  let L = workgroupUniformLoad(&th_n);  // thresholds: L + 1 bins
  if (lid < L) {
    th_end[lid] = th_upper(f, order_key(th_cut[lid]), false);
  } else if (lid == L) {
    th_end[lid] = m;
  }
  workgroupBarrier();
  if (lid <= L) {
    let before = max(lid, 1u) - 1u;
    var start = 0u;
    if (lid > 0u) { start = th_end[before]; }
    let end = th_end[lid];
    var lo = th_cut[before];  // a bin empty in the sample: its bounds stand in for its values
    var hi = th_cut[min(lid, L - 1u)];
    if (end > start) {
      lo = th_samp[base + start];
      hi = th_samp[base + end - 1u];
    }
    th_out[out0 + 1u + 3u * lid] = select(0x7F800000u, th_cut[lid], lid < L);
    th_out[out0 + 2u + 3u * lid] = lo;
    th_out[out0 + 3u + 3u * lid] = hi;
  }
  if (lid == 0u) { th_out[out0] = L + 1u; }
}

// ---- bin_features: X -> binned, bin = number of the feature's thresholds below x -----------
// 1 X · 2 edges (NB, 3) f32 · 3 fmeta (F, 2) · 4 binned (n, FW) out. Thread per word.
@group(0) @binding(2) var<storage, read> bf_edges: array<f32>;
@group(0) @binding(3) var<storage, read> bf_fmeta: array<u32>;
@group(0) @binding(4) var<storage, read_write> bf_binned: array<u32>;

@compute @workgroup_size(256)
fn bin_features(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n * p.FW) { return; }
  let r = i / p.FW;
  let wd = i % p.FW;
  var word = 0u;
  let per = 4u >> p.b16;  // bins a word
  for (var q = 0u; q < per; q++) {
    let f = wd * per + q;
    if (f >= p.F) { break; }
    let x = x_at(r, f);
    let off = bf_fmeta[2u * f];
    var lo = 0u;
    var hi = bf_fmeta[2u * f + 1u] - 1u;  // thresholds of this feature
    while (lo < hi) {
      let m = (lo + hi) / 2u;
      if (bf_edges[3u * (off + m)] < x) { lo = m + 1u; } else { hi = m; }
    }
    word |= lo << ((8u << p.b16) * q);
  }
  bf_binned[i] = word;
}

// ---- targets: regression y (f64) to fixed point, round(y 2^ye) - ym, exact -------------------
// 1 y (n, 2): f64 words · 2 target (n) i32 out · 3 flags (1) atomic: |= 2 for a y not finite.
@group(0) @binding(1) var<storage, read> tg_y: array<u32>;
@group(0) @binding(2) var<storage, read_write> tg_out: array<u32>;
@group(0) @binding(3) var<storage, read_write> tg_flags: array<atomic<u32>>;

@compute @workgroup_size(256)
fn targets(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n) { return; }
  let lo = tg_y[2u * i];
  let hi = tg_y[2u * i + 1u];
  if (((hi >> 20u) & 0x7FFu) == 0x7FFu) {
    atomicOr(&tg_flags[0], NOT_FINITE_Y);
    tg_out[i] = 0u;
    return;
  }
  tg_out[i] = sub64(f64_scaled_round(lo, hi, p.ye), vec2u(p.ym_lo, p.ym_hi)).x;
}

// ---- bootstrap: n draws with replacement per tree, counted into state (cleared before) ------
// 1 state (T, n) atomic. Thread per (tree, draw).
@group(0) @binding(1) var<storage, read_write> bs_state: array<atomic<u32>>;

@compute @workgroup_size(256)
fn bootstrap(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.n) { return; }
  if (p.boot == 0u) {
    atomicStore(&bs_state[i], 1u);
    return;
  }
  let t = i / p.n;
  let row = hash3(p.seed, 2u * (p.tree0 + t), i % p.n) % p.n;
  atomicAdd(&bs_state[t * p.n + row], 1u);
}

// ---- init_trees: root slot open and built, root node a leaf for now ------------------------
// 1 slots (T, S, 4) · 2 nodes · 3 meta. Thread per (tree, slot).
@group(0) @binding(1) var<storage, read_write> it_slots: array<u32>;
@group(0) @binding(2) var<storage, read_write> it_nodes: array<u32>;
@group(0) @binding(3) var<storage, read_write> it_meta: array<u32>;

@compute @workgroup_size(256)
fn init_trees(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.S) { return; }
  let s = i % p.S;
  it_slots[4u * i] = 0u;
  it_slots[4u * i + 1u] = select(0u, OPEN | BUILT, s == 0u);
  it_slots[4u * i + 2u] = 0u;
  it_slots[4u * i + 3u] = 0u;
  if (s == 0u) {
    let tree = p.tree0 + i / p.S;
    let rec = i / p.S * p.NC * (4u + p.C);
    it_nodes[rec] = LEAF;
    for (var c = 1u; c < 4u + p.C; c++) { it_nodes[rec + c] = 0u; }
    it_meta[2u * tree] = 1u;
    it_meta[2u * tree + 1u] = 1u;
  }
}

// The slots [s_lo, s_lo + pass_slots()) of the level have histograms in this pass; slot s of
// tree t sits at hist_slot(t, s).
fn pass_slots() -> u32 { return min(p.S_h, p.S_cur - p.s_lo); }

fn hist_slot(t: u32, s: u32) -> u32 { return t * p.S_h + s - p.s_lo; }

// ---- hist_clear: zero the histograms of this pass's built slots -----------------------------
// 1 slots (T, S, 4) · 2 hist (T, S_h, NB, C). Workgroup of 256 per (tree, HC_SLOTS slots of the
// pass): most slots of a deep level are empty, and a workgroup that only finds that out still
// costs a CPU adapter microseconds.
@group(0) @binding(1) var<storage, read> hc_slots: array<u32>;
@group(0) @binding(2) var<storage, read_write> hc_hist: array<u32>;

@compute @workgroup_size(256)
fn hist_clear(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let sp = pass_slots();
  let groups = (sp + HC_SLOTS - 1u) / HC_SLOTS;
  if (id >= p.T * groups) { return; }
  let t = id / groups;
  let W = p.NB * p.C;
  for (var ls = (id % groups) * HC_SLOTS; ls < min(sp, (id % groups + 1u) * HC_SLOTS); ls++) {
    let s = p.s_lo + ls;
    if ((hc_slots[(t * p.S + s) * 4u + 1u] & BUILT) == 0u) { continue; }
    let base = hist_slot(t, s) * W;
    for (var e = lid; e < W; e += 256u) { hc_hist[base + e] = 0u; }
  }
}

// hist_clear_wg (GPUs): a workgroup per (tree, slot of the pass, run of its words): a run of
// HC_WORDS, so that a level's few slots fill the GPU rather than a workgroup looping over 8 of
// them, or longer where the pass has so many slots that WG_TREE workgroups a tree cover it (a
// deep level: most of its slots need no clearing, SMALL or derived). As wg_items' clear_runs.
fn clear_runs(W: u32, sp: u32) -> u32 {
  return max(1u, min((W + HC_WORDS - 1u) / HC_WORDS, (WG_TREE + sp - 1u) / sp));
}

@compute @workgroup_size(256)
fn hist_clear_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let W = p.NB * p.C;
  let sp = pass_slots();
  let runs = clear_runs(W, sp);
  let len = (W + runs - 1u) / runs;  // words a run
  if (id >= p.T * sp * runs) { return; }
  let t = id / runs / sp;
  let s = p.s_lo + id / runs % sp;
  if ((hc_slots[(t * p.S + s) * 4u + 1u] & BUILT) == 0u) { return; }
  let base = hist_slot(t, s) * W;
  let end = min(W, (id % runs + 1u) * len);
  for (var e = (id % runs) * len + lid; e < end; e += 256u) { hc_hist[base + e] = 0u; }
}

// ---- hist_build: each in-bag row of a built slot adds itself to (slot, feature, bin) ----------
// 1 binned (n, FW) · 2 fmeta (F, 2) · 3 target (n) · 4 state (T, n) · 5 slots (T, S, 4)
// · 6 hist (T, S_h, NB, C) atomic. Thread per (tree, row).
@group(0) @binding(1) var<storage, read> hb_binned: array<u32>;
@group(0) @binding(2) var<storage, read> hb_fmeta: array<u32>;
@group(0) @binding(3) var<storage, read> hb_target: array<u32>;
@group(0) @binding(4) var<storage, read> hb_state: array<u32>;
@group(0) @binding(5) var<storage, read> hb_slots: array<u32>;
@group(0) @binding(6) var<storage, read_write> hb_hist: array<atomic<u32>>;

// A row's regression channel as the histograms add it: w * y as a 64-bit two's-complement pair
// (lo, hi) (|y| < 2^23, w < 256: no overflow in i32); (0, 0) for classes, which add w alone.
fn weighted_target(tv: u32, w: u32) -> vec2u {
  if (p.crit != MSE) { return vec2u(0u); }
  let v = bitcast<i32>(tv) * i32(w);
  return vec2u(bitcast<u32>(v), select(0u, 0xFFFFFFFFu, v < 0));
}

@compute @workgroup_size(256)
fn hist_build(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.n) { return; }
  let st = hb_state[i];
  let w = st & COUNT_MASK;
  let slot = st >> SLOT_SHIFT;
  if (w == 0u || slot == DONE || slot < p.s_lo || slot >= p.s_lo + pass_slots()) { return; }
  let t = i / p.n;
  let r = i % p.n;
  if ((hb_slots[(t * p.S + slot) * 4u + 1u] & BUILT) == 0u) { return; }
  let base = hist_slot(t, slot) * p.NB;
  let tv = hb_target[r];
  let wy = weighted_target(tv, w);
  for (var f = 0u; f < p.F; f++) {
    let b = bin_in(hb_binned[r * p.FW + bin_word(f)], f);
    add_row((base + hb_fmeta[2u * f] + b) * p.C, tv, w, wy);
  }
}

// A row (target word tv, bootstrap count w, wy = weighted_target(tv, w)) into the bin whose
// channels start at word h.
fn add_row(h: u32, tv: u32, w: u32, wy: vec2u) {
  if (p.crit == MSE) {
    let old = atomicAdd(&hb_hist[h], wy.x);
    let up = wy.y + select(0u, 1u, old + wy.x < old);  // carry out of the low word
    if (up != 0u) { atomicAdd(&hb_hist[h + 1u], up); }
    atomicAdd(&hb_hist[h + 2u], w);
    atomicAdd(&hb_hist[h + 3u], 1u);
  } else {
    atomicAdd(&hb_hist[h + tv], w);
    atomicAdd(&hb_hist[h + p.C - 1u], 1u);
  }
}

// hist_build_wg (GPUs, the levels whose passes hold a slot or two a tree: the root, level 1): the
// same sums, a workgroup per (tree, slot of the pass, group of features, run of HB_ROWS rows).
// Its rows add into workgroup memory (the group's words, at most HB_WORDS; binding 7: the
// number of groups G, then each group's first feature and end), then each non-zero word goes to the slot's histogram with
// one global atomic: where every row of the tree lands in one slot, many fewer of them on the
// same words. Integer sums, so the same words; regression's 64-bit sums carry as in hist_build.
@group(0) @binding(7) var<storage, read> hb_groups: array<u32>;
var<workgroup> hb_wg: array<atomic<u32>, HB_WORDS>;

@compute @workgroup_size(256)
fn hist_build_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let G = hb_groups[0];
  let runs = (p.n + HB_ROWS - 1u) / HB_ROWS;
  let sp = pass_slots();
  if (id >= p.T * sp * G * runs) { return; }
  let run = id % runs;
  let g = id / runs % G;
  let t = id / runs / G / sp;
  let slot = p.s_lo + id / runs / G % sp;
  if ((hb_slots[(t * p.S + slot) * 4u + 1u] & BUILT) == 0u) { return; }
  let f0 = hb_groups[2u * g + 1u];
  let f1 = hb_groups[2u * g + 2u];
  let w0 = hb_fmeta[2u * f0];  // the group's first bin
  let nw = (hb_fmeta[2u * (f1 - 1u)] + hb_fmeta[2u * f1 - 1u] - w0) * p.C;  // its words
  for (var e = lid; e < nw; e += 256u) { atomicStore(&hb_wg[e], 0u); }
  workgroupBarrier();
  let r1 = min(p.n, (run + 1u) * HB_ROWS);
  for (var r = run * HB_ROWS + lid; r < r1; r += 256u) {
    let st = hb_state[t * p.n + r];
    let w = st & COUNT_MASK;
    if (w == 0u || (st >> SLOT_SHIFT) != slot) { continue; }
    let tv = hb_target[r];
    let wy = weighted_target(tv, w);
    let lo = wy.x;
    let hi = wy.y;
    for (var f = f0; f < f1; f++) {
      let b = bin_in(hb_binned[r * p.FW + bin_word(f)], f);
      let h = (hb_fmeta[2u * f] - w0 + b) * p.C;
      if (p.crit == MSE) {
        let old = atomicAdd(&hb_wg[h], lo);
        let up = hi + select(0u, 1u, old + lo < old);
        if (up != 0u) { atomicAdd(&hb_wg[h + 1u], up); }
        atomicAdd(&hb_wg[h + 2u], w);
        atomicAdd(&hb_wg[h + 3u], 1u);
      } else {
        atomicAdd(&hb_wg[h + tv], w);
        atomicAdd(&hb_wg[h + p.C - 1u], 1u);
      }
    }
  }
  workgroupBarrier();
  let base = (hist_slot(t, slot) * p.NB + w0) * p.C;
  if (p.crit == MSE) {  // a thread a bin: the 64-bit sum's carry out of the low word
    for (var j = lid; j < nw / 4u; j += 256u) {
      let h = 4u * j;
      let lo = atomicLoad(&hb_wg[h]);
      var hi = atomicLoad(&hb_wg[h + 1u]);
      if (lo != 0u) {
        let old = atomicAdd(&hb_hist[base + h], lo);
        hi += select(0u, 1u, old + lo < old);
      }
      if (hi != 0u) { atomicAdd(&hb_hist[base + h + 1u], hi); }
      for (var c = 2u; c < 4u; c++) {
        let v = atomicLoad(&hb_wg[h + c]);
        if (v != 0u) { atomicAdd(&hb_hist[base + h + c], v); }
      }
    }
  } else {
    for (var e = lid; e < nw; e += 256u) {
      let v = atomicLoad(&hb_wg[e]);
      if (v != 0u) { atomicAdd(&hb_hist[base + e], v); }
    }
  }
}

// ---- split_vary, split_scan, split_pick: a level's splits, from its raw histograms ------------
// 1 fmeta · 2 slots · 3 hist · 4 nodes · 5 cand (T, S_h, F, 4): score bits, bin, next bin (LEAF:
// no split), rank << RANK_SHIFT | VARIES if the feature varies in the node · 6 xlogx (n + 1)
// f32: x ln x, for entropy · 7 hist_prev (the parent level's); split_pick: left (T, S, C), the
// left child's channels. Histograms stay raw (bin j holds bin j's rows alone), so parent -
// sibling is exact word by word, and a feature's bins are summed along only where a node scans
// that feature (a few of them: max_features), not for every feature of every slot.
// split_vary: thread (_wg: workgroup) per (tree, slot of the pass, feature). An open slot not
// built by atomics gets this feature's bins as parent - sibling; then the feature's rank in the
// node's random permutation, with VARIES when two or more of its bins hold rows. At depth 0 the
// root's totals (feature 0's bins summed) go into its node record, where alloc puts every other
// node's: from here on a node's totals are read there.
// split_scan: the same grid. For a node that may split (rows, depth, purity: its record), the
// features that vary in the node among the first max_features of the permutation, constant ones
// counted; if none of those varies, the first that does (scikit-learn's splitter counts every
// feature it draws, constant or not, and draws past max_features only until one varies:
// sklearn/tree/_splitter.pyx). Candidates: a split after each
// non-empty bin b with rows after it, the right side starting at the next non-empty bin b2
// (only such splits differ). From the left side's sums over bins 0..b and the node's totals, a
// score (larger is better, f32 in this order):
//   squared error  sl*sl/wl + sr*sr/wr      (sl, sr: sums of w*y, wl, wr: weights)
//   gini           (sum_k cl_k*cl_k)/wl + (sum_k cr_k*cr_k)/wr, the sums exact integers
//   entropy        sum_k xlogx(cl_k) + sum_k xlogx(cr_k) - xlogx(wl) - xlogx(wr)
// Each division is div_rn's (correctly rounded), so every GPU gets the same scores. Ties go to
// the lowest bin.
// split_pick: thread (_wg: workgroup) per (tree, slot of the pass): the slot's split among its
// features' candidates, and the left child's channels summed over the split feature's bins.
@group(0) @binding(1) var<storage, read> sp_fmeta: array<u32>;
@group(0) @binding(2) var<storage, read> sp_slots: array<u32>;
@group(0) @binding(3) var<storage, read_write> sp_hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> sp_nodes: array<u32>;
@group(0) @binding(5) var<storage, read_write> sp_cand: array<u32>;
@group(0) @binding(6) var<storage, read> sp_xlogx: array<f32>;
@group(0) @binding(7) var<storage, read> sp_prev: array<u32>;
@group(0) @binding(7) var<storage, read_write> sp_left: array<u32>;

struct Best { score: f32, f: u32, b: u32, b2: u32 }

// Lanes: a channel a lane, but regression's 64-bit sum (words 0 and 1) is one lane, lane 0.
fn lanes() -> u32 { return select(p.C, p.C - 1u, p.crit == MSE); }
fn lane_wide(lane: u32) -> bool { return p.crit == MSE && lane == 0u; }
fn lane_word(lane: u32) -> u32 { return select(lane, lane + 1u, p.crit == MSE && lane > 0u); }

// Lane `lane` of the channels from word h of `sp_hist` (a bin), as a 64-bit value or a u32 in .x.
fn lane_at(h: u32, lane: u32) -> vec2u {
  let w = h + lane_word(lane);
  if (lane_wide(lane)) { return vec2u(sp_hist[w], sp_hist[w + 1u]); }
  return vec2u(sp_hist[w], 0u);
}

fn lane_put(h: u32, lane: u32, v: vec2u) {  // the inverse of lane_at
  let w = h + lane_word(lane);
  sp_hist[w] = v.x;
  if (lane_wide(lane)) { sp_hist[w + 1u] = v.y; }
}

fn lane_add(a: vec2u, b: vec2u, lane: u32) -> vec2u {
  if (lane_wide(lane)) { return add64(a, b); }
  return vec2u(a.x + b.x, 0u);
}

// Lane `lane` summed over bins [j0, j1) of a feature whose first bin is at word h0.
fn lane_sum(h0: u32, j0: u32, j1: u32, lane: u32) -> vec2u {
  var sum = vec2u(0u);
  for (var j = j0; j < j1; j++) { sum = lane_add(sum, lane_at(h0 + j * p.C, lane), lane); }
  return sum;
}

fn slot_rec(t: u32, s: u32) -> u32 {  // the node record of slot s of tree t (of the batch)
  return (t * p.NC + sp_slots[(t * p.S + s) * 4u]) * (4u + p.C);
}

// A random permutation of the features per key, with O(1) state: p.pr rounds of swap-or-not
// (Hoang, Morris and Rogaway) on [0, F). Round i pairs x with (k_i - x) mod F and swaps the pair
// or not by a bit of the pair; each round is its own inverse. (A 4-round Feistel network walked
// down to F drew some features up to 1.6x as often as others among a node's first max_features.)
fn swap_or_not(key: u32, i: u32, x: u32) -> u32 {
  let h = pcg(key + i);
  return swap_round(vec2u(h, h % p.F), x);
}

fn swap_round(h: vec2u, x: u32) -> u32 {  // h: the round's hash, and that mod F
  let y = (h.y + p.F - x) % p.F;
  if ((pcg(h.x ^ max(x, y)) & 1u) == 1u) { return y; }
  return x;
}

fn feature_rank(key: u32, f: u32) -> u32 {  // feature f's rank in the node's permutation
  var x = f;
  for (var i = 0u; i < p.pr; i++) { x = swap_or_not(key, i, x); }
  return x;
}

fn rank_feature(key: u32, r: u32) -> u32 {  // the inverse: the feature of rank r (rounds undone)
  var x = r;
  for (var i = p.pr; i > 0u; i--) { x = swap_or_not(key, i - 1u, x); }
  return x;
}

// May the node whose totals start at word `tot` of sp_nodes split? Rows, depth, purity.
fn eligible(tot: u32) -> bool {
  let cnt = sp_nodes[tot + p.C - 1u];
  if (cnt < p.mss || cnt < 2u * p.msl || p.depth >= p.max_depth) { return false; }
  if (p.crit != MSE) {
    var w = 0u;
    for (var k = 0u; k < p.K; k++) { w += sp_nodes[tot + k]; }
    for (var k = 0u; k < p.K; k++) {
      if (sp_nodes[tot + k] == w) { return false; }  // pure
    }
  }
  return true;
}

// The root's totals (depth 0) into its node record: feature 0's bins summed, the lanes c0,
// c0 + step, ...
fn root_totals(t: u32, s: u32, c0: u32, step: u32) {
  let rec = slot_rec(t, s) + 4u;
  let h0 = (hist_slot(t, s) * p.NB + sp_fmeta[0]) * p.C;
  for (var lane = c0; lane < lanes(); lane += step) {
    let sum = lane_sum(h0, 0u, sp_fmeta[1], lane);
    sp_nodes[rec + lane_word(lane)] = sum.x;
    if (lane_wide(lane)) { sp_nodes[rec + 1u] = sum.y; }
  }
}

// The key of the node in slot s of tree t: its permutation of the features (feature_rank).
fn node_key(t: u32, s: u32) -> u32 {
  return hash3(p.seed, 2u * (p.tree0 + t) + 1u, sp_slots[(t * p.S + s) * 4u]);
}

// Feature f of open slot s, its bins final: its candidate reset (no split yet) and its rank in
// the node's permutation (`rank`: feature_rank's), with VARIES when v = 1 (it varies in the node).
fn finish_vary(t: u32, s: u32, f: u32, v: u32, rank: u32) {
  let e = 4u * (hist_slot(t, s) * p.F + f);
  sp_cand[e] = 0u;
  sp_cand[e + 1u] = 0u;
  sp_cand[e + 2u] = LEAF;
  sp_cand[e + 3u] = (rank << RANK_SHIFT) | select(0u, VARIES, v == 1u);
}

// A feature's words e0, e0 + step, .. below e1 (from word `me` of sp_hist) made parent -
// sibling (from word `par` of sp_prev, `sib` of sp_hist); returns how many bins hold rows.
fn derive_bins(me: u32, sib: u32, par: u32, e0: u32, e1: u32, step: u32) -> u32 {
  let cc = p.C - 1u;
  var nonempty = 0u;
  for (var e = e0; e < e1; e += step) {
    let c = e % p.C;
    var v = sp_prev[par + e] - sp_hist[sib + e];
    if (p.crit == MSE && c == 1u && sp_prev[par + e - 1u] < sp_hist[sib + e - 1u]) { v -= 1u; }  // borrow
    sp_hist[me + e] = v;
    if (c == cc && v != 0u) { nonempty += 1u; }
  }
  return nonempty;
}

// How many of a feature's bins j0, j0 + step, ... (from word h0) hold rows.
fn count_nonempty(h0: u32, nb: u32, j0: u32, step: u32) -> u32 {
  var nonempty = 0u;
  for (var j = j0; j < nb; j += step) {
    if (sp_hist[h0 + j * p.C + p.C - 1u] != 0u) { nonempty += 1u; }
  }
  return nonempty;
}

// Words of feature f's bins in slot s of tree t: (first word, bins).
fn feature_words(t: u32, s: u32, f: u32) -> vec2u {
  return vec2u((hist_slot(t, s) * p.NB + sp_fmeta[2u * f]) * p.C, sp_fmeta[2u * f + 1u]);
}

@compute @workgroup_size(256)
fn split_vary(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // the bindings of split_scan, all of them used
  let i = linear(wid, nwg) * 256u + lid;
  let sp = pass_slots();
  if (i >= p.T * sp * p.F) { return; }
  let f = i % p.F;
  let t = i / p.F / sp;
  let s = p.s_lo + i / p.F % sp;
  let sl = (t * p.S + s) * 4u;
  let flags = sp_slots[sl + 1u];
  if ((flags & OPEN) == 0u || (flags & SMALL) != 0u) { return; }  // SMALL: split_rows
  let fw = feature_words(t, s, f);
  var nonempty = 0u;
  if ((flags & BUILT) == 0u) {
    let d = fw.x - hist_slot(t, s) * p.NB * p.C;  // the feature's offset in a slot
    nonempty = derive_bins(fw.x, hist_slot(t, s ^ 1u) * p.NB * p.C + d,
                           (t * p.S_h + sp_slots[sl + 2u]) * p.NB * p.C + d, 0u, fw.y * p.C, 1u);
  } else {
    nonempty = count_nonempty(fw.x, fw.y, 0u, 1u);
    if (p.depth == 0u && f == 0u) { root_totals(t, s, 0u, 1u); }
  }
  finish_vary(t, s, f, select(0u, 1u, nonempty >= 2u), feature_rank(node_key(t, s), f));
}

// Is a feature of rank r that varies in the node one it scans? Its rank is below mf (the first
// max_features of the node's permutation, constant features counted), or no feature before it
// varies (none of the first mf does: scikit-learn then draws on until one varies).
fn selected(t: u32, s: u32, r: u32) -> bool {
  if (r < p.mf) { return true; }
  let cbase = hist_slot(t, s) * p.F;
  for (var g = 0u; g < p.F; g++) {
    let w = sp_cand[4u * (cbase + g) + 3u];
    if ((w & VARIES) != 0u && (w >> RANK_SHIFT) < r) { return false; }
  }
  return true;
}

// Does split_scan scan feature f of open slot s? The node may split, f varies and is selected.
fn scans(t: u32, s: u32, f: u32) -> bool {
  let w = sp_cand[4u * (hist_slot(t, s) * p.F + f) + 3u];
  return eligible(slot_rec(t, s) + 4u) && (w & VARIES) != 0u && selected(t, s, w >> RANK_SHIFT);
}

// A candidate's left side, summed over bins 0..b: what its score needs. s: the sum of w*y
// (64-bit; gini: sum_k cl_k^2), r: gini's sum_k cr_k^2, w: weight, a: entropy's sum of xlogx
// terms so far, rows: rows.
struct Left { s: vec2u, r: vec2u, w: u32, a: f32, rows: u32 }

// Lane `lane`'s running sum `run` (over bins 0..b) into a candidate's left side; ps: entropy's
// second pass (the right side's terms, class lanes only). The node's totals at word rec + 4.
fn take_lane(l0: Left, lane: u32, run: vec2u, ps: u32, rec: u32) -> Left {
  var l = l0;
  if (p.crit == MSE) {
    if (lane == 0u) { l.s = run; } else if (lane == 1u) { l.w = run.x; } else { l.rows = run.x; }
    return l;
  }
  if (lane == p.K) {
    l.rows = run.x;
    return l;
  }
  let cl = run.x;
  let cr = sp_nodes[rec + 4u + lane] - cl;
  if (p.crit == GINI) {
    l.s = add64(l.s, mul64(cl, cl));
    l.r = add64(l.r, mul64(cr, cr));
    l.w += cl;
  } else if (ps == 0u) {
    l.a = l.a + sp_xlogx[cl];
    l.w += cl;
  } else {
    l.a = l.a + sp_xlogx[cr];
  }
  return l;
}

// The score of a split whose left side is l, in a node with totals at word rec + 4.
fn left_score(l: Left, rec: u32) -> f32 {
  let tot = rec + 4u;
  if (p.crit == MSE) {
    let tlo = sp_nodes[tot];
    let sl = i64_to_f32(l.s.x, l.s.y);
    let sr = i64_to_f32(tlo - l.s.x, sp_nodes[tot + 1u] - l.s.y - select(0u, 1u, tlo < l.s.x));
    return div_rn(sl * sl, l.w) + div_rn(sr * sr, sp_nodes[tot + 2u] - l.w);
  }
  var w = 0u;
  for (var k = 0u; k < p.K; k++) { w += sp_nodes[tot + k]; }
  if (p.crit == GINI) {
    return div_rn(i64_to_f32(l.s.x, l.s.y), l.w) + div_rn(i64_to_f32(l.r.x, l.r.y), w - l.w);
  }
  let a = l.a - sp_xlogx[l.w];
  return a - sp_xlogx[w - l.w];
}

// Is bin j (its raw rows `raw`, `upto` rows in bins 0..j, of the node's `total`) a candidate?
fn candidate(raw: u32, upto: u32, total: u32) -> bool {
  return raw != 0u && upto < total && upto >= p.msl && total - upto >= p.msl;
}

// A feature's nb bins from word h0 made running sums along the bins, in place (undo: back to
// raw), lane by lane, by one thread.
fn sum_bins(h0: u32, nb: u32, undo: bool) {
  for (var i = 1u; i < nb; i++) {
    let j = select(i, nb - i, undo);  // undo: from the last bin down
    for (var lane = 0u; lane < lanes(); lane++) {
      let a = lane_at(h0 + j * p.C, lane);
      let b = lane_at(h0 + (j - 1u) * p.C, lane);
      var v = lane_add(a, b, lane);
      if (undo) { v = select(vec2u(a.x - b.x, 0u), sub64(a, b), lane_wide(lane)); }
      lane_put(h0 + j * p.C, lane, v);
    }
  }
}

@compute @workgroup_size(256)
fn split_scan(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  _ = &sp_prev;  // the bindings of split_vary, all of them used
  let i = linear(wid, nwg) * 256u + lid;
  let sp = pass_slots();
  if (i >= p.T * sp * p.F) { return; }
  let f = i % p.F;
  let t = i / p.F / sp;
  let s = p.s_lo + i / p.F % sp;
  if ((sp_slots[(t * p.S + s) * 4u + 1u] & OPEN) == 0u || !scans(t, s, f)) { return; }
  scan_feature(t, s, f);
}

// Feature f's best split in slot s of tree t (a feature it scans) into its candidate, by one
// thread: split_scan's, and split_scan_wg's for a feature of more bins than its workgroup holds.
fn scan_feature(t: u32, s: u32, f: u32) {
  // One thread, every bin. Regression: the running sums of its three lanes in registers.
  // Classes: the feature's bins made running sums in place, each candidate scored from them,
  // then the bins made raw again (exact: integers mod 2^32). No per-bin arrays: a CPU adapter
  // runs this, where a thread's large private arrays are slow.
  let fw = feature_words(t, s, f);
  let h0 = fw.x;
  let nb = fw.y;
  let rec = slot_rec(t, s);
  let mse = p.crit == MSE;
  if (!mse) { sum_bins(h0, nb, false); }
  let total = sp_nodes[rec + 4u + p.C - 1u];
  let cc = p.C - 1u;
  var best = Best(0.0, LEAF, 0u, 0u);
  var run = Left(vec2u(0u), vec2u(0u), 0u, 0.0, 0u);  // regression: the bins so far
  var before = 0u;  // rows in the bins before j
  for (var j = 0u; j < nb; j++) {
    let h = h0 + j * p.C;
    if (mse) {
      run.s = add64(run.s, vec2u(sp_hist[h], sp_hist[h + 1u]));
      run.w += sp_hist[h + 2u];
      run.rows += sp_hist[h + 3u];
    } else {
      run.rows = sp_hist[h + cc];
    }
    let upto = run.rows;
    if (upto == before) { continue; }  // empty
    before = upto;
    if (best.f != LEAF && best.b2 == LEAF) { best.b2 = j; }  // the best's right side starts here
    if (candidate(1u, upto, total)) {  // 1u: bin j holds rows (empty ones were skipped above)
      var l = run;
      if (!mse) {
        l = Left(vec2u(0u), vec2u(0u), 0u, 0.0, 0u);
        for (var lane = 0u; lane < lanes(); lane++) { l = take_lane(l, lane, lane_at(h, lane), 0u, rec); }
        if (p.crit == ENTROPY) {  // the right side's terms after every class's left ones
          for (var k = 0u; k < p.K; k++) { l = take_lane(l, k, lane_at(h, k), 1u, rec); }
        }
      }
      let sc = left_score(l, rec);
      if (best.f == LEAF || sc > best.score) { best = Best(sc, f, j, LEAF); }
    }
    if (upto == total) { break; }  // the rest is empty (deep nodes hold few rows)
  }
  if (!mse) { sum_bins(h0, nb, true); }
  if (best.f != LEAF) {  // words e..e+2 only: other threads read e+3
    let e = 4u * (hist_slot(t, s) * p.F + f);
    sp_cand[e] = bitcast<u32>(best.score);
    sp_cand[e + 1u] = best.b;
    sp_cand[e + 2u] = best.b2;
  }
}

// The slot's split among its features' candidates, written to its node record: (feature, bin,
// next bin), LEAF: none. Ties: the feature first in the node's random permutation, as
// scikit-learn keeps the first best in its random order of features. The features scanned were
// those that vary among the first max_features of that order (or the first that varies, as
// `selected`); none varies: a leaf.
fn pick(t: u32, s: u32) -> vec4u {
  let none = vec4u(LEAF, 0u, 0u, 0u);
  if ((sp_slots[(t * p.S + s) * 4u + 1u] & OPEN) == 0u) { return none; }
  let rec = slot_rec(t, s);
  if (!eligible(rec + 4u)) { return none; }
  let cbase = hist_slot(t, s) * p.F;
  var best = Best(0.0, LEAF, 0u, 0u);
  var best_rank = LEAF;
  for (var f = 0u; f < p.F; f++) {  // the scanned features' splits (b2 LEAF: none)
    let e = 4u * (cbase + f);
    if (sp_cand[e + 2u] == LEAF) { continue; }
    let r = sp_cand[e + 3u] >> RANK_SHIFT;
    let sc = bitcast<f32>(sp_cand[e]);
    if (best.f == LEAF || sc > best.score || (sc == best.score && r < best_rank)) {
      best = Best(sc, f, sp_cand[e + 1u], sp_cand[e + 2u]);
      best_rank = r;
    }
  }
  if (best.f == LEAF) { return none; }
  sp_nodes[rec] = best.f;
  sp_nodes[rec + 1u] = best.b;
  sp_nodes[rec + 2u] = best.b2;
  return vec4u(best.f, best.b, best.b2, 0u);
}

@compute @workgroup_size(256)
fn split_pick(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // bound as for split_scan
  let i = linear(wid, nwg) * 256u + lid;
  let sp = pass_slots();
  if (i >= p.T * sp) { return; }
  let t = i / sp;
  let s = p.s_lo + i % sp;
  let best = pick(t, s);
  if (best.x == LEAF) { return; }
  let fw = feature_words(t, s, best.x);
  let out = (t * p.S + s) * p.C;
  for (var lane = 0u; lane < lanes(); lane++) {  // the left child: bins 0..b summed
    let sum = lane_sum(fw.x, 0u, best.y + 1u, lane);
    sp_left[out + lane_word(lane)] = sum.x;
    if (lane_wide(lane)) { sp_left[out + 1u] = sum.y; }
  }
}

// ---- split_vary_wg, split_scan_wg, split_pick_wg: the same, a workgroup each -----------------
// What the thread-per-item kernels do, with a feature's bins spread over the workgroup's
// threads: for GPUs, where one thread's 256-bin loop is slow. Same integers, same f32 scores,
// same ties, so the same forest. (CPU adapters run the looping versions: barriers cost more
// than loops there.)
const PW: u32 = 64u;   // threads a workgroup
const BPT: u32 = 4u;   // bins a thread: PW * BPT = 256, the most bins of 8 bits (more: one thread)
const CH: u32 = 12u;   // lanes split_scan_wg sums along the bins at once (more: in chunks)

var<workgroup> wg_flags: u32;
var<workgroup> wg_node: u32;
var<workgroup> wg_elig: u32;
var<workgroup> wg_feat: u32;
var<workgroup> wg_any: atomic<u32>;
var<workgroup> wg_rs: array<f32, PW>;
var<workgroup> wg_rb: array<u32, PW>;
var<workgroup> wg_run: array<vec2u, 768>;  // CH * PW: a chunk's lanes' sums, thread by thread
var<workgroup> wg_pick: vec4u;
var<workgroup> wg_mask: array<atomic<u32>, 8>;  // split_scan_wg: the non-empty bins, a bit each
var<workgroup> wg_cnt: u32;                     // how many
var<workgroup> wg_bin: array<u32, PW>;          // the sparse scan's bins, in order

// A node's rounds (swap_or_not's hash of each, and that mod F) for a workgroup of its features'
// ranks: computed once, not in every feature's chain. Called by the whole workgroup; ends on a
// barrier.
const MAX_ROUNDS: u32 = 96u;  // perm_rounds: 3 rounds a bit of F (32 bits at most)
var<workgroup> wg_round: array<vec2u, MAX_ROUNDS>;

fn node_rounds(key: u32, lid: u32) {
  for (var i = lid; i < p.pr; i += PW) {
    let h = pcg(key + i);
    wg_round[i] = vec2u(h, h % p.F);
  }
  workgroupBarrier();
}

fn feature_rank_wg(f: u32) -> u32 {  // feature_rank from the rounds node_rounds wrote
  var x = f;
  for (var i = 0u; i < p.pr; i++) { x = swap_round(wg_round[i], x); }
  return x;
}

// Features a workgroup of split_vary_wg takes in turn: one, or more where the pass has more than
// WG_TREE (slot, feature) items a tree (a deep level's pass: most of its slots SMALL or closed, so
// most workgroups would only find that out). As wg_items' vary_features.
fn vary_features(sp: u32) -> u32 { return max(1u, min(p.F, sp * p.F / WG_TREE)); }

@compute @workgroup_size(64)
fn split_vary_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // the bindings of split_scan, all of them used
  let id = linear(wid, nwg);
  let sp = pass_slots();
  let fg = vary_features(sp);
  let groups = (p.F + fg - 1u) / fg;
  if (id >= p.T * sp * groups) { return; }
  let t = id / groups / sp;
  let s = p.s_lo + id / groups % sp;
  if (lid == 0u) {
    wg_flags = sp_slots[(t * p.S + s) * 4u + 1u];
    wg_node = sp_slots[(t * p.S + s) * 4u];
  }
  let flags = workgroupUniformLoad(&wg_flags);
  if ((flags & OPEN) == 0u || (flags & SMALL) != 0u) { return; }  // SMALL: split_rows
  let f0 = id % groups * fg;
  let f1 = min(p.F, f0 + fg);
  // The features' ranks, a thread each (a chain of p.pr rounds: not thread 0's, feature by
  // feature), through workgroup memory to thread 0.
  node_rounds(node_key(t, s), lid);
  for (var c0 = f0; c0 < f1; c0 += PW) {
    if (c0 + lid < f1) { wg_rb[lid] = feature_rank_wg(c0 + lid); }
    workgroupBarrier();
    if (lid == 0u) {
      for (var f = c0; f < min(f1, c0 + PW); f++) {
        sp_cand[4u * (hist_slot(t, s) * p.F + f) + 3u] = wg_rb[f - c0];
      }
    }
    workgroupBarrier();
  }
  for (var f = f0; f < f1; f++) {
    if (lid == 0u) { atomicStore(&wg_any, 0u); }
    workgroupBarrier();
    let fw = feature_words(t, s, f);
    var nonempty = 0u;
    if ((flags & BUILT) == 0u) {  // parent - sibling, word by word (coalesced)
      let d = fw.x - hist_slot(t, s) * p.NB * p.C;
      nonempty = derive_bins(fw.x, hist_slot(t, s ^ 1u) * p.NB * p.C + d,
                             (t * p.S_h + sp_slots[(t * p.S + s) * 4u + 2u]) * p.NB * p.C + d,
                             lid, fw.y * p.C, PW);
    } else {
      nonempty = count_nonempty(fw.x, fw.y, lid, PW);
      if (p.depth == 0u && f == 0u) { root_totals(t, s, lid, PW); }
    }
    if (nonempty != 0u) { atomicAdd(&wg_any, nonempty); }
    workgroupBarrier();
    if (lid == 0u) {
      let v = select(0u, 1u, atomicLoad(&wg_any) >= 2u);
      finish_vary(t, s, f, v, sp_cand[4u * (hist_slot(t, s) * p.F + f) + 3u]);
    }
  }
}

// Is a better than b (candidates as (score, bin); LEAF: none)? Ties: the lower bin.
fn better_bin(as_: f32, ab: u32, bs: f32, bb: u32) -> bool {
  if (ab == LEAF) { return false; }
  if (bb == LEAF) { return true; }
  if (as_ != bs) { return as_ > bs; }
  return ab < bb;
}

// The best of each thread's candidate (score bs, bin or index bb; LEAF: none) into wg_rs[0] and
// wg_rb[0], better_bin's order. Called by the whole workgroup.
fn best_in_workgroup(bs: f32, bb: u32, lid: u32) {
  wg_rs[lid] = bs;
  wg_rb[lid] = bb;
  workgroupBarrier();
  for (var o = PW / 2u; o > 0u; o >>= 1u) {
    if (lid < o && better_bin(wg_rs[lid + o], wg_rb[lid + o], wg_rs[lid], wg_rb[lid])) {
      wg_rs[lid] = wg_rs[lid + o];
      wg_rb[lid] = wg_rb[lid + o];
    }
    workgroupBarrier();
  }
}

// split_scan_wg's workgroups a slot: one per feature the node may scan (max_features of them).
fn scan_width() -> u32 { return min(p.mf, p.F); }

// The features of ranks r0 .. r0 + PW - 1 (below `end`) into wg_rb in rank order, LEAF for one
// that does not vary in the node; `cand`: word 3 of the slot's feature 0 candidate (its rank and
// VARIES, finish_vary's). Where a thread's share of the features is at most the permutation's
// rounds, each feature is put in its rank's place (a read a thread for 64 features); otherwise
// each rank's feature is found by undoing the rounds (rank_feature: 2 hashes a round). The same
// wg_rb either way. Called by the whole workgroup; ends on a barrier.
fn rank_run(key: u32, cand: u32, r0: u32, end: u32, lid: u32) {
  let hi = min(end, r0 + PW);
  if ((p.F + PW - 1u) / PW <= p.pr) {
    wg_rb[lid] = LEAF;
    workgroupBarrier();
    for (var f = lid; f < p.F; f += PW) {
      let w = sp_cand[cand + 4u * f];
      let r = w >> RANK_SHIFT;
      if ((w & VARIES) != 0u && r >= r0 && r < hi) { wg_rb[r - r0] = f; }
    }
  } else {
    var f = LEAF;
    if (r0 + lid < hi) {
      f = rank_feature(key, r0 + lid);
      if ((sp_cand[cand + 4u * f] & VARIES) == 0u) { f = LEAF; }
    }
    wg_rb[lid] = f;
  }
  workgroupBarrier();
}

// The i-th feature (from 0) split_scan_wg scans in slot s (node wg_node): the i-th that varies
// in it among the first mf of the node's permutation, or for i = 0 where none of those does, the
// first that varies, as `selected` (every varying feature when mf >= F: feature i, if it
// varies); LEAF: none. A run of PW ranks at once (rank_run), rather than every feature's
// workgroup counting the ranks before its own. Called by the whole workgroup.
fn scanned_feature(t: u32, s: u32, i: u32, lid: u32) -> u32 {
  let vary = 4u * hist_slot(t, s) * p.F + 3u;  // word 3 of feature 0's candidate
  if (lid == 0u) { wg_feat = LEAF; }
  if (p.mf >= p.F) {  // (through workgroup memory: the result must be uniform)
    if (lid == 0u && (sp_cand[vary + 4u * i] & VARIES) != 0u) { wg_feat = i; }
    return workgroupUniformLoad(&wg_feat);
  }
  let key = hash3(p.seed, 2u * (p.tree0 + t) + 1u, wg_node);
  var seen = 0u;  // thread 0: varying features of the ranks walked so far
  let end = select(p.mf, p.F, i == 0u);  // ranks past mf: only for the first, if none before varies
  for (var r0 = 0u; r0 < end; r0 += PW) {
    rank_run(key, vary, r0, end, lid);
    if (lid == 0u) {
      for (var j = 0u; j < PW; j++) {
        if (wg_rb[j] == LEAF) { continue; }
        if (seen == i) {
          wg_feat = wg_rb[j];
          break;
        }
        seen += 1u;
      }
    }
    let got = workgroupUniformLoad(&wg_feat);
    if (got != LEAF) { return got; }
  }
  return LEAF;
}

// split_scan_wg where a feature has at most PW non-empty bins in the node: thread i takes the
// i-th of them (wg_mask's bits in order), lane by lane (CH at once) one thread a lane sums them
// along in workgroup memory (a few barriers, not a scan over the workgroup), and thread i takes
// its bin's left side from there, lanes in the same order as the dense path: the same integers
// and f32 scores, and the best is the lowest-indexed, i.e. lowest, bin among equal scores.
fn scan_sparse(t: u32, s: u32, f: u32, h0: u32, nnz: u32, rec: u32, lid: u32) {
  var bin = LEAF;
  if (lid < nnz) {
    var k = lid;
    for (var w = 0u; w < 8u; w++) {
      var m = atomicLoad(&wg_mask[w]);
      let c = countOneBits(m);
      if (k < c) {
        for (var q = 0u; q < k; q++) { m &= m - 1u; }
        bin = 32u * w + firstTrailingBit(m);
        break;
      }
      k -= c;
    }
    wg_bin[lid] = bin;
  }
  var left: Left;
  let passes = select(1u, 2u, p.crit == ENTROPY);
  for (var ps = 0u; ps < passes; ps++) {
    let nlanes = select(lanes(), p.K, ps == 1u);
    for (var l0 = 0u; l0 < nlanes; l0 += CH) {
      let nl = min(CH, nlanes - l0);
      if (lid < nnz) {
        for (var li = 0u; li < nl; li++) { wg_run[li * PW + lid] = lane_at(h0 + bin * p.C, l0 + li); }
      }
      workgroupBarrier();
      if (lid < nl) {
        var run = vec2u(0u);
        for (var i = 0u; i < nnz; i++) {
          run = lane_add(run, wg_run[lid * PW + i], l0 + lid);
          wg_run[lid * PW + i] = run;
        }
      }
      workgroupBarrier();
      if (lid < nnz) {
        for (var li = 0u; li < nl; li++) { left = take_lane(left, l0 + li, wg_run[li * PW + lid], ps, rec); }
      }
      workgroupBarrier();  // wg_run is written again by the next chunk
    }
  }
  var bs = 0.0;
  var bb = LEAF;  // this thread's index, if its bin is a candidate
  if (lid < nnz && candidate(1u, left.rows, sp_nodes[rec + 4u + p.C - 1u])) {
    bs = left_score(left, rec);
    bb = lid;
  }
  best_in_workgroup(bs, bb, lid);
  let i = wg_rb[0];
  if (lid == 0u && i != LEAF) {  // a candidate has rows after it: bin i + 1 is the right side's first
    let e4 = 4u * (hist_slot(t, s) * p.F + f);
    sp_cand[e4] = bitcast<u32>(wg_rs[0]);
    sp_cand[e4 + 1u] = wg_bin[i];
    sp_cand[e4 + 2u] = wg_bin[i + 1u];
  }
}

// Each thread takes BPT consecutive bins. Lane by lane (CH lanes at once), a thread sums its
// bins, the sums of the threads before it come from a scan over the workgroup (in workgroup
// memory), and a second pass over its bins (in cache now) gives each bin's left side. Then the
// best bin over the workgroup, and the next non-empty bin after it.
@compute @workgroup_size(64)
fn split_scan_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &sp_prev;  // the bindings of split_vary, all of them used
  let id = linear(wid, nwg);
  let ns = scan_width();
  let sp = pass_slots();
  if (id >= p.T * sp * ns) { return; }
  let t = id / ns / sp;
  let s = p.s_lo + id / ns % sp;
  if (lid == 0u) {
    wg_flags = sp_slots[(t * p.S + s) * 4u + 1u];
    wg_node = sp_slots[(t * p.S + s) * 4u];
  }
  if (lid < 8u) { atomicStore(&wg_mask[lid], 0u); }
  if ((workgroupUniformLoad(&wg_flags) & OPEN) == 0u) { return; }
  let rec = (t * p.NC + wg_node) * (4u + p.C);
  if (lid == 0u) { wg_elig = select(0u, 1u, eligible(rec + 4u)); }
  if (workgroupUniformLoad(&wg_elig) == 0u) { return; }
  let f = scanned_feature(t, s, id % ns, lid);
  if (f == LEAF) { return; }
  let fw = feature_words(t, s, f);
  let h0 = fw.x;
  let nb = fw.y;
  if (nb > PW * BPT) {  // 16-bit bins, more than the workgroup holds (small data): one thread
    if (lid == 0u) { scan_feature(t, s, f); }
    return;
  }
  let j0 = lid * BPT;
  let cc = p.C - 1u;
  var occ = 0u;  // bit q: bin j0 + q holds rows (an empty bin is zero in every lane: skipped)
  for (var q = 0u; q < BPT; q++) {
    if (j0 + q < nb && sp_hist[h0 + (j0 + q) * p.C + cc] != 0u) { occ |= 1u << q; }
  }
  if (occ != 0u) { atomicOr(&wg_mask[lid / 8u], occ << (4u * (lid % 8u))); }
  workgroupBarrier();
  if (lid == 0u) {
    var c = 0u;
    for (var w = 0u; w < 8u; w++) { c += countOneBits(atomicLoad(&wg_mask[w])); }
    wg_cnt = c;
  }
  let nnz = workgroupUniformLoad(&wg_cnt);
  if (nnz <= PW) {  // a node of few rows (most of a deep tree's): its non-empty bins a thread each
    scan_sparse(t, s, f, h0, nnz, rec, lid);
    return;
  }
  var left: array<Left, BPT>;
  let passes = select(1u, 2u, p.crit == ENTROPY);  // entropy: every class's left terms, then the right's
  for (var ps = 0u; ps < passes; ps++) {
    let nlanes = select(lanes(), p.K, ps == 1u);
    for (var l0 = 0u; l0 < nlanes; l0 += CH) {
      let nl = min(CH, nlanes - l0);
      for (var li = 0u; li < nl; li++) {
        var sum = vec2u(0u);
        for (var q = 0u; q < BPT; q++) {
          if ((occ & (1u << q)) != 0u) { sum = lane_add(sum, lane_at(h0 + (j0 + q) * p.C, l0 + li), l0 + li); }
        }
        wg_run[li * PW + lid] = sum;
      }
      workgroupBarrier();
      for (var o = 1u; o < PW; o <<= 1u) {  // inclusive sums over the threads (Hillis-Steele)
        var got: array<vec2u, CH>;
        for (var li = 0u; li < nl; li++) {
          if (lid >= o) { got[li] = wg_run[li * PW + lid - o]; }
        }
        workgroupBarrier();
        for (var li = 0u; li < nl; li++) {
          if (lid >= o) { wg_run[li * PW + lid] = lane_add(wg_run[li * PW + lid], got[li], l0 + li); }
        }
        workgroupBarrier();
      }
      for (var li = 0u; li < nl; li++) {
        let lane = l0 + li;
        var run = vec2u(0u);  // the bins of the threads before this one
        if (lid > 0u) { run = wg_run[li * PW + lid - 1u]; }
        for (var q = 0u; q < BPT; q++) {  // an empty bin is no candidate: its left side unused
          if ((occ & (1u << q)) == 0u) { continue; }
          run = lane_add(run, lane_at(h0 + (j0 + q) * p.C, lane), lane);
          left[q] = take_lane(left[q], lane, run, ps, rec);
        }
      }
      workgroupBarrier();  // wg_run is written again by the next chunk
    }
  }
  let total = sp_nodes[rec + 4u + cc];
  var bs = 0.0;
  var bb = LEAF;
  for (var q = 0u; q < BPT; q++) {
    let j = j0 + q;
    if (j >= nb) { break; }
    if (candidate(occ & (1u << q), left[q].rows, total)) {
      let sc = left_score(left[q], rec);
      if (bb == LEAF || sc > bs) {
        bs = sc;
        bb = j;
      }
    }
  }
  best_in_workgroup(bs, bb, lid);
  let best = wg_rb[0];
  let score_bits = bitcast<u32>(wg_rs[0]);
  // The right side starts at the next non-empty bin after the best.
  var next = LEAF;
  for (var q = 0u; q < BPT; q++) {
    let j = j0 + q;
    if (j >= nb) { break; }
    if (best != LEAF && j > best && (occ & (1u << q)) != 0u) {
      next = j;
      break;
    }
  }
  workgroupBarrier();
  wg_rb[lid] = next;
  workgroupBarrier();
  for (var o = PW / 2u; o > 0u; o >>= 1u) {
    if (lid < o) { wg_rb[lid] = min(wg_rb[lid], wg_rb[lid + o]); }
    workgroupBarrier();
  }
  if (lid == 0u && best != LEAF) {  // words e4..e4+2 only: other workgroups read e4+3
    let e4 = 4u * (hist_slot(t, s) * p.F + f);
    sp_cand[e4] = score_bits;
    sp_cand[e4 + 1u] = best;
    sp_cand[e4 + 2u] = wg_rb[0];
  }
}

// A workgroup per (tree, slot of the pass): one thread picks, then the left child's lanes are
// summed over bins 0..b, a lane's bins in runs over the threads (hist_build's memory order).
@compute @workgroup_size(64)
fn split_pick_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // bound as for split_scan
  let id = linear(wid, nwg);
  let sp = pass_slots();
  if (id >= p.T * sp) { return; }
  let t = id / sp;
  let s = p.s_lo + id % sp;
  if (lid == 0u) { wg_pick = pick(t, s); }
  let best = workgroupUniformLoad(&wg_pick);
  if (best.x == LEAF) { return; }
  let h0 = feature_words(t, s, best.x).x;
  let nb = best.y + 1u;  // bins 0..b
  let out = (t * p.S + s) * p.C;
  for (var l0 = 0u; l0 < lanes(); l0 += PW) {
    let nl = min(lanes() - l0, PW);  // lanes in this pass
    let seg = PW / nl;              // runs a lane
    let len = (nb + seg - 1u) / seg;
    let lane = l0 + lid % nl;
    let k = lid / nl;               // this thread's run (none when k >= seg)
    var sum = vec2u(0u);
    if (k < seg) { sum = lane_sum(h0, k * len, min(k * len + len, nb), lane); }
    wg_run[lid] = sum;
    workgroupBarrier();
    if (k == 0u) {
      for (var q = 1u; q < seg; q++) { sum = lane_add(sum, wg_run[q * nl + lid], lane); }
      sp_left[out + lane_word(lane)] = sum.x;
      if (lane_wide(lane)) { sp_left[out + 1u] = sum.y; }
    }
    workgroupBarrier();  // wg_run is written again by the next pass of lanes
  }
}

// ---- split_rows: a SMALL slot's split inputs, from its listed rows ----------------------------
// 1 fmeta · 2 slots · 3 target (n) · 4 nodes · 5 cand · 6 hist (T, S_h, NB, C) atomic · 7 binned
// (n, FW) · 8 list (T, n). A workgroup per (tree, slot of the pass). For a SMALL open slot whose
// node may split, what split_vary does for the others: each feature's candidate reset, its rank
// in the node's permutation and VARIES (two bins among its rows); then the histograms of the
// features split_scan scans there (those that vary among the first max_features of the node's
// order, or the first that varies: `selected`), those
// alone, summed from the slot's rows as hist_build sums them: the same words, so split_scan and
// split_pick find the same split. A node of a few dozen rows costs its rows, not the clear, build
// and parent - sibling of NB x C words for every feature.
@group(0) @binding(7) var<storage, read> sr_binned: array<u32>;
@group(0) @binding(8) var<storage, read> sr_list: array<u32>;
var<workgroup> sr_sel: array<u32, PW>;  // the features of a run of ranks whose bins are summed
var<workgroup> sr_m: u32;               // how many

fn row_bin(r: u32, f: u32) -> u32 { return bin_in(sr_binned[r * p.FW + bin_word(f)], f); }

@compute @workgroup_size(64)
fn split_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let sp = pass_slots();
  if (id >= p.T * sp) { return; }
  let t = id / sp;
  let s = p.s_lo + id % sp;
  let sl = (t * p.S + s) * 4u;
  if (lid == 0u) {
    wg_elig = 0u;
    if ((sp_slots[sl + 1u] & (OPEN | SMALL)) == (OPEN | SMALL)) {
      wg_elig = select(0u, 1u, eligible(slot_rec(t, s) + 4u));
    }
  }
  if (workgroupUniformLoad(&wg_elig) == 0u) { return; }
  let rows = sp_nodes[slot_rec(t, s) + 4u + p.C - 1u];
  let first = t * p.n + sp_slots[sl + 3u] - rows;  // the slot's rows: sr_list[first, first + rows)
  let key = node_key(t, s);
  node_rounds(key, lid);
  let cbase = 4u * hist_slot(t, s) * p.F;
  for (var f = lid; f < p.F; f += PW) {
    let b0 = row_bin(sr_list[first] >> SLOT_SHIFT, f);
    var v = 0u;
    for (var i = 1u; i < rows; i++) {
      if (row_bin(sr_list[first + i] >> SLOT_SHIFT, f) != b0) {
        v = VARIES;
        break;
      }
    }
    let e = cbase + 4u * f;
    sp_cand[e] = 0u;
    sp_cand[e + 1u] = 0u;
    sp_cand[e + 2u] = LEAF;
    sp_cand[e + 3u] = (feature_rank_wg(f) << RANK_SHIFT) | v;
  }
  storageBarrier();
  var seen = 0u;  // features chosen so far: those of ranks below mf that vary, or the first that does
  for (var r0 = 0u; r0 < p.F && (r0 < p.mf || seen == 0u); r0 += PW) {  // ranks r0 .. r0 + PW - 1
    if (p.mf < p.F) {
      rank_run(key, cbase + 3u, r0, p.F, lid);
    } else {  // every varying feature (scanned_feature)
      var f = LEAF;
      if (r0 + lid < p.F && (sp_cand[cbase + 4u * (r0 + lid) + 3u] & VARIES) != 0u) { f = r0 + lid; }
      wg_rb[lid] = f;
      workgroupBarrier();
    }
    if (lid == 0u) {
      var m = 0u;
      for (var j = 0u; j < PW; j++) {
        if (wg_rb[j] == LEAF) { continue; }
        if (r0 + j >= p.mf && seen + m > 0u) { break; }
        sr_sel[m] = wg_rb[j];
        m += 1u;
        if (r0 + j >= p.mf) { break; }  // the first that varies, none of the first mf varying
      }
      sr_m = m;
    }
    let m = workgroupUniformLoad(&sr_m);
    for (var j = 0u; j < m; j++) {
      let fw = feature_words(t, s, sr_sel[j]);
      for (var e = lid; e < fw.y * p.C; e += PW) { atomicStore(&hb_hist[fw.x + e], 0u); }
    }
    storageBarrier();
    for (var q = lid; q < rows * m; q += PW) {  // (row, feature) pairs
      let entry = sr_list[first + q / m];
      let r = entry >> SLOT_SHIFT;
      let f = sr_sel[q % m];
      let w = entry & COUNT_MASK;
      let tv = hb_target[r];
      add_row(feature_words(t, s, f).x + row_bin(r, f) * p.C, tv, w, weighted_target(tv, w));
    }
    seen += m;
    workgroupBarrier();  // wg_rb and sr_sel are written again
  }
}

// ---- alloc: number the children of this level's splits; give open children next-level slots --
// 1 slots (T, S, 4) · 2 nodes · 3 left (T, S, C) · 4 slots_next (T, S, 4) · 5 childmap (T, S, 2)
// · 6 meta (T_all, 2) · 7 counts (T, S, 4). A prefix sum over each tree's slots in slot order,
// so node numbers are the same on every backend. Levels of many slots in three dispatches:
// alloc_count (thread per (tree, slot): does it split, does its pair of children take slots, how
// many rows they list), alloc_scan (workgroup of 256 per tree: those made exclusive prefix sums
// in place, from the tree's next node; the tree's nodes and open pairs into meta), alloc_write
// (thread per (tree, slot): the children's records, slots and child map); others in one, `alloc`
// (a workgroup per tree doing all three over runs of slots). A split whose children are both closed takes no slot; otherwise
// the pair (2j, 2j+1): the child with fewer rows (slot 2j) is built, the other (if open) derived.
// Where this level or the next has more slots than a histogram buffer holds (S_cur or S_next >
// S_h: done in passes), there is no whole parent level to derive from: the open children are both
// built, a closed one takes no slot. An open child of at most p.small rows is SMALL instead
// (split_rows: no histogram of its own to clear, build or derive); its rows are listed from word 3
// of its slot on (a prefix sum of such rows over the tree's next slots: route_rows lists them
// there, moving word 3 to their end). Beside a SMALL child an open one is built; a closed one is
// built only for an open sibling to derive from.
@group(0) @binding(1) var<storage, read> al_slots: array<u32>;
@group(0) @binding(2) var<storage, read_write> al_nodes: array<u32>;
@group(0) @binding(3) var<storage, read> al_left: array<u32>;
@group(0) @binding(4) var<storage, read_write> al_next: array<u32>;
@group(0) @binding(5) var<storage, read_write> al_childmap: array<u32>;
@group(0) @binding(6) var<storage, read_write> al_meta: array<u32>;
@group(0) @binding(7) var<storage, read_write> al_count: array<u32>;

var<workgroup> al_a: array<u32, 256>;
var<workgroup> al_b: array<u32, 256>;
var<workgroup> al_c: array<u32, 256>;

fn node_rec(t: u32, node: u32) -> u32 { return (t * p.NC + node) * (4u + p.C); }  // t: of the batch

// Channel c of child `side` of the node in slot s (record rec): left from split_pick, right = node - left.
fn child_stat(t: u32, s: u32, rec: u32, side: u32, c: u32) -> u32 {
  let lrec = (t * p.S + s) * p.C;
  let l = al_left[lrec + c];
  if (side == 0u) { return l; }
  let tot = al_nodes[rec + 4u + c];
  if (p.crit == MSE && c == 1u) {
    return tot - l - select(0u, 1u, al_nodes[rec + 4u] < al_left[lrec]);
  }
  return tot - l;
}

fn child_open(t: u32, s: u32, rec: u32, side: u32) -> bool {
  if (p.depth + 1u >= p.max_depth) { return false; }
  let cnt = child_stat(t, s, rec, side, p.C - 1u);
  if (cnt < p.mss || cnt < 2u * p.msl) { return false; }
  if (p.crit != MSE) {
    var w = 0u;
    for (var k = 0u; k < p.K; k++) { w += child_stat(t, s, rec, side, k); }
    for (var k = 0u; k < p.K; k++) {
      if (child_stat(t, s, rec, side, k) == w) { return false; }
    }
  }
  return true;
}

// Is child `side` SMALL (split from its rows) when open?
fn child_small(t: u32, s: u32, rec: u32, side: u32) -> bool {
  return child_stat(t, s, rec, side, p.C - 1u) <= p.small;
}

// Rows an open child lists: its rows if SMALL, else none.
fn listed_rows(t: u32, s: u32, rec: u32, side: u32, open: bool) -> u32 {
  return select(0u, child_stat(t, s, rec, side, p.C - 1u), open && child_small(t, s, rec, side));
}

fn slot_splits(t: u32, s: u32) -> bool {
  let sl = (t * p.S + s) * 4u;
  if ((al_slots[sl + 1u] & OPEN) == 0u) { return false; }
  return al_nodes[node_rec(t, al_slots[sl])] != LEAF;
}

fn alloc_bindings() {  // every kernel of alloc binds all seven
  _ = &al_slots;
  _ = &al_nodes;
  _ = &al_left;
  _ = &al_next;
  _ = &al_childmap;
  _ = &al_meta;
  _ = &al_count;
}

// Slot s's counts: 1 if it splits, 1 if its children take a pair of slots, the rows they list.
fn slot_counts(t: u32, s: u32) -> vec3u {
  if (!slot_splits(t, s)) { return vec3u(0u); }
  let rec = node_rec(t, al_slots[(t * p.S + s) * 4u]);
  let open_l = child_open(t, s, rec, 0u);
  let open_r = child_open(t, s, rec, 1u);
  return vec3u(1u, select(0u, 1u, open_l || open_r),
               listed_rows(t, s, rec, 0u, open_l) + listed_rows(t, s, rec, 1u, open_r));
}

// The split in slot s (it splits): its children numbered from nid (their records from its
// node's channels); if either is open, the pair of next-level slots (2j, 2j + 1) with their
// flags, parent and where their rows are listed (from `at` on), as in the comment above.
fn write_children(t: u32, s: u32, nid: u32, j: u32, at0: u32) {
  var at = at0;
  let rec = node_rec(t, al_slots[(t * p.S + s) * 4u]);
  al_nodes[rec + 3u] = nid;
  for (var side = 0u; side < 2u; side++) {
    let crec = node_rec(t, nid + side);
    al_nodes[crec] = LEAF;
    al_nodes[crec + 1u] = 0u;
    al_nodes[crec + 2u] = 0u;
    al_nodes[crec + 3u] = 0u;
    for (var c = 0u; c < p.C; c++) { al_nodes[crec + 4u + c] = child_stat(t, s, rec, side, c); }
  }
  let cm = (t * p.S + s) * 2u;
  let open_l = child_open(t, s, rec, 0u);
  let open_r = child_open(t, s, rec, 1u);
  al_childmap[cm] = DONE;
  al_childmap[cm + 1u] = DONE;
  if (!open_l && !open_r) { return; }
  let fewer = select(1u, 0u, child_stat(t, s, rec, 0u, p.C - 1u) <= child_stat(t, s, rec, 1u, p.C - 1u));
  let whole = !child_small(t, s, rec, 0u) && !child_small(t, s, rec, 1u);  // neither SMALL
  let built = select(1u - fewer, fewer, whole || child_small(t, s, rec, 1u - fewer));
  let passes = p.S_cur > p.S_h || p.S_next > p.S_h;
  for (var k = 0u; k < 2u; k++) {  // the even slot first: the child with fewer rows
    let side = fewer ^ k;
    let ns = 2u * j + k;
    let open = select(open_l, open_r, side == 1u);
    var flags = 0u;
    var list = 0u;
    if (open && child_small(t, s, rec, side)) {
      flags = OPEN | SMALL;
      list = at;
      at += child_stat(t, s, rec, side, p.C - 1u);
    } else if (open) {
      flags = OPEN | select(0u, BUILT, side == built || passes);
    } else if (k == 0u && whole && !passes) {
      flags = BUILT;  // for the open sibling to derive from
    }
    let e = (t * p.S + ns) * 4u;
    al_next[e] = nid + side;
    al_next[e + 1u] = flags;
    al_next[e + 2u] = s;
    al_next[e + 3u] = list;
    if (flags != 0u) { al_childmap[cm + side] = ns; }
  }
}

// The run of the level's slots thread lid of a tree's workgroup walks: [x, y).
fn slot_run(lid: u32) -> vec2u {
  let chunk = (p.S_cur + 255u) / 256u;
  let s0 = min(lid * chunk, p.S_cur);
  return vec2u(s0, min(s0 + chunk, p.S_cur));
}

// The (tree, slot) of a thread of a thread-per-slot alloc kernel; x = LEAF: none.
fn slot_item(wid: vec3u, nwg: vec3u, lid: u32) -> vec2u {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.S_cur) { return vec2u(LEAF, 0u); }
  return vec2u(i / p.S_cur, i % p.S_cur);
}

fn counts_at(t: u32, s: u32) -> vec3u {  // alloc's three counts (or sums) of slot s
  let e = (t * p.S + s) * 4u;
  return vec3u(al_count[e], al_count[e + 1u], al_count[e + 2u]);
}

fn counts_put(t: u32, s: u32, v: vec3u) {
  let e = (t * p.S + s) * 4u;
  al_count[e] = v.x;
  al_count[e + 1u] = v.y;
  al_count[e + 2u] = v.z;
}

// A workgroup's prefix sums over its 256 threads' counts (`mine`): each thread's exclusive sums
// (nodes from the tree's next one on, pairs, listed rows); the tree's totals in al_a/al_b[255].
// The tree's first node: `first_node`.
fn tree_prefix(lid: u32, mine: vec3u, first_node: u32) -> vec3u {
  al_a[lid] = mine.x;
  al_b[lid] = mine.y;
  al_c[lid] = mine.z;
  workgroupBarrier();
  for (var off = 1u; off < 256u; off *= 2u) {  // inclusive prefix sums
    var va = 0u;
    var vb = 0u;
    var vc = 0u;
    if (lid >= off) {
      va = al_a[lid - off];
      vb = al_b[lid - off];
      vc = al_c[lid - off];
    }
    workgroupBarrier();
    al_a[lid] += va;
    al_b[lid] += vb;
    al_c[lid] += vc;
    workgroupBarrier();
  }
  return vec3u(first_node + 2u * (al_a[lid] - mine.x), al_b[lid] - mine.y, al_c[lid] - mine.z);
}

// The tree's next-level slots past its pairs closed; its nodes and open pairs into meta (after
// every thread has read its first node).
fn close_tree(t: u32, lid: u32, first_node: u32) {
  let tree = p.tree0 + t;
  let total_pairs = al_b[255];
  for (var s = 2u * total_pairs + lid; s < p.S_next; s += 256u) { al_next[(t * p.S + s) * 4u + 1u] = 0u; }
  workgroupBarrier();
  if (lid == 0u) {
    al_meta[2u * tree] = first_node + 2u * al_a[255];
    al_meta[2u * tree + 1u] = total_pairs;
  }
}

// alloc, one dispatch: a workgroup of 256 per tree, each thread a run of the level's slots
// (levels of few slots, where three dispatches cost more than the walk).
@compute @workgroup_size(256)
fn alloc(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) lid: u32) {
  alloc_bindings();
  let t = linear(wid, nwg);
  if (t >= p.T) { return; }
  let first_node = al_meta[2u * (p.tree0 + t)];
  let run = slot_run(lid);
  var mine = vec3u(0u);
  for (var s = run.x; s < run.y; s++) { mine += slot_counts(t, s); }
  var at = tree_prefix(lid, mine, first_node);
  for (var s = run.x; s < run.y; s++) {
    let c = slot_counts(t, s);
    if (c.x == 0u) { continue; }
    write_children(t, s, at.x, at.y, at.z);
    at += vec3u(2u * c.x, c.y, c.z);
  }
  close_tree(t, lid, first_node);
}

// alloc in three dispatches (levels of many slots): alloc_count, a thread per slot, its counts.
@compute @workgroup_size(256)
fn alloc_count(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  alloc_bindings();
  let ts = slot_item(wid, nwg, lid);
  if (ts.x == LEAF) { return; }
  counts_put(ts.x, ts.y, slot_counts(ts.x, ts.y));
}

// Per tree: the counts made exclusive prefix sums over the slots, in place; meta; slots closed.
@compute @workgroup_size(256)
fn alloc_scan(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  alloc_bindings();
  let t = linear(wid, nwg);
  if (t >= p.T) { return; }
  let first_node = al_meta[2u * (p.tree0 + t)];
  let run = slot_run(lid);
  var mine = vec3u(0u);
  for (var s = run.x; s < run.y; s++) { mine += counts_at(t, s); }
  var at = tree_prefix(lid, mine, first_node);
  for (var s = run.x; s < run.y; s++) {
    let c = counts_at(t, s);
    counts_put(t, s, at);
    at += vec3u(2u * c.x, c.y, c.z);
  }
  close_tree(t, lid, first_node);
}

// Slot s's split: its children and their slots, from its prefix sums.
@compute @workgroup_size(256)
fn alloc_write(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  alloc_bindings();
  let ts = slot_item(wid, nwg, lid);
  if (ts.x == LEAF || !slot_splits(ts.x, ts.y)) { return; }
  let at = counts_at(ts.x, ts.y);
  write_children(ts.x, ts.y, at.x, at.y, at.z);
}

// ---- route_rows: each row of a split node moves to its child's slot, or rests (DONE) ----------
// 1 binned (n, FW) · 2 state (T, n) · 3 slots (T, S, 4) · 4 nodes · 5 childmap (T, S, 2)
// · 6 the next level's slots (T, S, 4) atomic · 7 list (T, n). A row that moves to a SMALL slot
// is listed there as row << SLOT_SHIFT | count, at the slot's word 3, which it moves on by one
// (the order within a slot's list is the atomics'; what split_rows sums from it is not).
@group(0) @binding(1) var<storage, read> pa_binned: array<u32>;
@group(0) @binding(2) var<storage, read_write> pa_state: array<u32>;
@group(0) @binding(3) var<storage, read> pa_slots: array<u32>;
@group(0) @binding(4) var<storage, read> pa_nodes: array<u32>;
@group(0) @binding(5) var<storage, read> pa_childmap: array<u32>;
@group(0) @binding(6) var<storage, read_write> pa_next: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> pa_list: array<u32>;

@compute @workgroup_size(256)
fn route_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.n) { return; }
  let st = pa_state[i];
  let w = st & COUNT_MASK;
  let slot = st >> SLOT_SHIFT;
  if (w == 0u || slot == DONE) { return; }
  let t = i / p.n;
  let r = i % p.n;
  let sl = (t * p.S + slot) * 4u;
  var next = DONE;
  if ((pa_slots[sl + 1u] & OPEN) != 0u) {
    let rec = (t * p.NC + pa_slots[sl]) * (4u + p.C);
    let f = pa_nodes[rec];
    if (f != LEAF) {
      let b = bin_in(pa_binned[r * p.FW + bin_word(f)], f);
      next = pa_childmap[(t * p.S + slot) * 2u + select(0u, 1u, b > pa_nodes[rec + 1u])];
    }
  }
  pa_state[i] = (next << SLOT_SHIFT) | w;
  if (p.small != 0u && next != DONE && (atomicLoad(&pa_next[(t * p.S + next) * 4u + 1u]) & SMALL) != 0u) {
    pa_list[t * p.n + atomicAdd(&pa_next[(t * p.S + next) * 4u + 3u], 1u)] = (r << SLOT_SHIFT) | w;
  }
}

// ---- finalize: the batch's trees in the form prediction reads ---------------------------------
// 1 nodes · 2 meta · 3 edges (NB, 3) f32 · 4 fmeta · 5 ptree (N, 3) · 6 pval (N, K) · 7 offs
// (T_all): the chunk the batch's trees go to, tree `tree` from its node offs[tree] on.
// A leaf: feature and left child LEAF, threshold 0. Threshold: the largest f32 at or below the
// midpoint of the left bin's largest value and the right bin's smallest (mid_down: every f32 goes
// the side it goes in scikit-learn's tree, whose f64 midpoint it compares f32 X with), kept within
// the thresholds that give the same partition. Values: mean of y, or class fractions
// (weighted by bootstrap counts). Thread per (tree of the batch, node).
@group(0) @binding(1) var<storage, read> fi_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> fi_meta: array<u32>;
@group(0) @binding(3) var<storage, read> fi_edges: array<f32>;
@group(0) @binding(4) var<storage, read> fi_fmeta: array<u32>;
@group(0) @binding(5) var<storage, read_write> fi_tree: array<u32>;
@group(0) @binding(6) var<storage, read_write> fi_val: array<f32>;
@group(0) @binding(7) var<storage, read> fi_offs: array<u32>;

@compute @workgroup_size(256)
fn finalize(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.NC) { return; }
  let tree = p.tree0 + i / p.NC;
  let node = i % p.NC;
  if (node >= fi_meta[2u * tree]) { return; }
  let rec = i * (4u + p.C);
  let out = fi_offs[tree] + node;
  let f = fi_nodes[rec];
  fi_tree[3u * out] = f;
  fi_tree[3u * out + 1u] = 0u;
  fi_tree[3u * out + 2u] = LEAF;
  if (f != LEAF) {
    let g = fi_fmeta[2u * f] + fi_nodes[rec + 1u];
    let g2 = fi_fmeta[2u * f] + fi_nodes[rec + 2u];
    let mid = mid_down(fi_edges[3u * g + 2u], fi_edges[3u * g2 + 1u]);
    let thr = clamp(mid, fi_edges[3u * g], fi_edges[3u * (g2 - 1u)]);
    fi_tree[3u * out + 1u] = bitcast<u32>(thr);
    fi_tree[3u * out + 2u] = fi_nodes[rec + 3u];
  }
  if (p.crit == MSE) {
    let v = div_rn(i64_to_f32(fi_nodes[rec + 4u], fi_nodes[rec + 5u]), fi_nodes[rec + 6u]);
    fi_val[out] = v * p.inv_scale + p.mid;  // inv_scale a power of two: no rounding before the add
  } else {
    var w = 0u;
    for (var k = 0u; k < p.K; k++) { w += fi_nodes[rec + 4u + k]; }
    for (var k = 0u; k < p.K; k++) { fi_val[out * p.K + k] = div_rn(f32(fi_nodes[rec + 4u + k]), w); }
  }
}

// ---- importance: the impurity decrease of each feature's splits, per tree -----------------------
// 1 nodes · 2 meta · 3 imp (T_all, G, F) f32 out: the sum over nodes [g * IMP_CHUNK, (g + 1) *
// IMP_CHUNK) of the tree split on f. Workgroup per (tree of the batch, g, 256 features). A
// split's decrease of weighted impurity, in a form free of cancellation (w = wl + wr):
//   squared error, gini   wl wr / w * sum over channels (left/wl - right/wr)^2
//                          (the sums of w y, or the class weights)
//   entropy               sum_k cl_k ln(cl_k w / (c_k wl)) + cr_k ln(cr_k w / (c_k wr))
// in units that cancel when a tree's decreases are normalised (fixed-point y for regression).

@group(0) @binding(1) var<storage, read> im_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> im_meta: array<u32>;
@group(0) @binding(3) var<storage, read_write> im_out: array<f32>;

fn im_sum(rec: u32) -> f32 { return i64_to_f32(im_nodes[rec + 4u], im_nodes[rec + 5u]); }

fn decrease(l: u32, r: u32) -> f32 {
  if (p.crit == MSE) {
    let wl = f32(im_nodes[l + 6u]);
    let wr = f32(im_nodes[r + 6u]);
    let d = im_sum(l) / wl - im_sum(r) / wr;
    return wl * wr / (wl + wr) * (d * d);
  }
  var wl = 0u;
  var wr = 0u;
  for (var k = 0u; k < p.K; k++) {
    wl += im_nodes[l + 4u + k];
    wr += im_nodes[r + 4u + k];
  }
  let fl = f32(wl);
  let fr = f32(wr);
  let fw = f32(wl + wr);
  var acc = 0.0;
  for (var k = 0u; k < p.K; k++) {
    let cl = f32(im_nodes[l + 4u + k]);
    let cr = f32(im_nodes[r + 4u + k]);
    if (p.crit == GINI) {
      let d = cl / fl - cr / fr;
      acc = acc + d * d;
    } else {
      let c = cl + cr;
      if (cl > 0.0) { acc = acc + cl * log(cl * fw / (c * fl)); }
      if (cr > 0.0) { acc = acc + cr * log(cr * fw / (c * fr)); }
    }
  }
  if (p.crit == GINI) { return fl * fr / fw * acc; }
  return acc;
}

var<workgroup> im_f: array<u32, 256>;
var<workgroup> im_d: array<f32, 256>;

// The chunk's nodes 256 at a time: each thread the decrease of one node (its feature in im_f,
// LEAF for a leaf), then each thread adds those of its feature in node order, as one thread
// walking the chunk would (the same f32 sums), without a thread's 2048 dependent reads.
@compute @workgroup_size(256)
fn importance(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let G = (p.NC + IMP_CHUNK - 1u) / IMP_CHUNK;
  let fchunks = (p.F + 255u) / 256u;
  let id = linear(wid, nwg);
  let t = id / (G * fchunks);
  if (t >= p.T) { return; }
  let g = id / fchunks % G;
  let f = (id % fchunks) * 256u + lid;
  let tree = p.tree0 + t;
  let NW = 4u + p.C;
  let end = min(im_meta[2u * tree], (g + 1u) * IMP_CHUNK);
  var acc = 0.0;
  for (var n0 = g * IMP_CHUNK; n0 < end; n0 += 256u) {
    let node = n0 + lid;
    im_f[lid] = LEAF;
    if (node < end) {
      let rec = (t * p.NC + node) * NW;
      let split = im_nodes[rec];
      if (split != LEAF) {
        let l = (t * p.NC + im_nodes[rec + 3u]) * NW;
        im_f[lid] = split;
        im_d[lid] = decrease(l, l + NW);
      }
    }
    workgroupBarrier();
    for (var j = 0u; j < min(256u, end - n0); j++) {
      if (im_f[j] == f) { acc = acc + im_d[j]; }
    }
    workgroupBarrier();
  }
  if (f < p.F) { im_out[(tree * G + g) * p.F + f] = acc; }
}

// ---- predict / oob: walk every tree for each row ----------------------------------------------
// Both walk the trees [tree0, tree0 + T) of one chunk of prediction arrays.
// predict: 1 X · 2 ptree · 3 pval · 4 offs · 5 out (n, K, 2): the mean over T_all trees, f32
//          summed in tree order across the chunks, one dispatch each, in order: but for the last,
//          a chunk leaves the running sums' bits in the first word of each pair, the next (tree0
//          > 0) goes on from them; the last writes the mean as the f64 of the same value (lo, hi).
// oob:     1 X · 2 ptree · 3 pval · 4 offs · 5 state (T, n) · 6 oob (n, K + 1) f32 += the
//          batch's trees that did not draw the row, and their count.
@group(0) @binding(2) var<storage, read> pr_tree: array<u32>;
@group(0) @binding(3) var<storage, read> pr_val: array<f32>;
@group(0) @binding(4) var<storage, read> pr_offs: array<u32>;
@group(0) @binding(5) var<storage, read_write> pr_out: array<u32>;
@group(0) @binding(5) var<storage, read> oob_state: array<u32>;
@group(0) @binding(6) var<storage, read_write> oob_out: array<f32>;

fn leaf_of(tree: u32, r: u32) -> u32 {
  let base = pr_offs[tree];
  var node = 0u;
  loop {
    let e = 3u * (base + node);
    let f = pr_tree[e];
    if (f == LEAF) { break; }
    let left = pr_tree[e + 2u];
    node = select(left + 1u, left, x_at(r, f) <= bitcast<f32>(pr_tree[e + 1u]));
  }
  return base + node;
}

// The f64 of an f32, exactly (subnormals normalised).
fn f32_to_f64(x: f32) -> vec2u {
  let b = bitcast<u32>(x);
  let sign = b & 0x80000000u;
  let E = (b >> 23u) & 0xFFu;
  var m = b & 0x7FFFFFu;
  if (E == 0xFFu) { return vec2u(m << 29u, sign | 0x7FF00000u | (m >> 3u)); }
  var e = i32(E) + 896;  // 1023 - 127
  if (E == 0u) {
    if (m == 0u) { return vec2u(0u, sign); }
    let sh = 23u - firstLeadingBit(m);
    m = (m << sh) & 0x7FFFFFu;
    e = 897 - i32(sh);
  }
  return vec2u(m << 29u, sign | (u32(e) << 20u) | (m >> 3u));
}

@compute @workgroup_size(256)
fn predict(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lid: u32) {
  let r = linear(wid, nwg) * 256u + lid;
  if (r >= p.n) { return; }
  var acc: array<f32, MAXK>;
  if (p.tree0 > 0u) {  // the sums of the chunks before this one
    for (var k = 0u; k < p.K; k++) { acc[k] = bitcast<f32>(pr_out[2u * (r * p.K + k)]); }
  }
  for (var t = 0u; t < p.T; t++) {
    let leaf = leaf_of(p.tree0 + t, r);
    for (var k = 0u; k < p.K; k++) { acc[k] += pr_val[leaf * p.K + k]; }
  }
  if (p.tree0 + p.T < p.T_all) {
    for (var k = 0u; k < p.K; k++) { pr_out[2u * (r * p.K + k)] = bitcast<u32>(acc[k]); }
    return;
  }
  for (var k = 0u; k < p.K; k++) {
    let v = f32_to_f64(div_rn(acc[k], p.T_all));
    pr_out[2u * (r * p.K + k)] = v.x;
    pr_out[2u * (r * p.K + k) + 1u] = v.y;
  }
}

@compute @workgroup_size(256)
fn oob(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
       @builtin(local_invocation_index) lid: u32) {
  let r = linear(wid, nwg) * 256u + lid;
  if (r >= p.n) { return; }
  let o = r * (p.K + 1u);
  for (var t = 0u; t < p.T; t++) {
    if ((oob_state[t * p.n + r] & COUNT_MASK) != 0u) { continue; }
    let leaf = leaf_of(p.tree0 + t, r);
    for (var k = 0u; k < p.K; k++) { oob_out[o + k] += pr_val[leaf * p.K + k]; }
    oob_out[o + p.K] += 1.0;
  }
}
