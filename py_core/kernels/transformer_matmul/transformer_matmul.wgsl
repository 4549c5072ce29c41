// Strided, batched f32 matrix multiply for the transformer:
//   C[z] = alpha * op(A[z]) * op(B[z]) (+ bias) (+ R[z]) (+ C[z] when ACCUMULATE), z < grid.z
// with optional GELU epilogues. What this family adds to a plain tiled matmul is what the model
// needs to avoid copies and extra passes:
//   - element offsets: all parameters live in one buffer, so a weight is (buffer, offset);
//   - leading dimensions: a head's slice of q, k or v is a strided view of the qkv rows;
//   - a two-level batch, z = outer * inner + i (outer: sequence, inner: head), each level with
//     its own element stride for A, B and C;
//   - a fused bias, residual, GELU and GELU backward, and causal shortcuts for attention.
// Row-major. op(A) is M x K: A[r * lda + k], or A[k * lda + r] when TRANS_A.
//            op(B) is K x N: B[k * ldb + c], or B[c * ldb + k] when TRANS_B.
//            C[r * ldc + c]; R and G are indexed as C.
// flags (their bits: FAMILY in __init__.py): TRANS_A, TRANS_B, ACCUMULATE (add into C), BIAS (add
//   bias[bias_off + c]), SKIP_UPPER: output tiles whose columns all exceed their rows are left unwritten,
//   K_UPTO_ROW: op(A) is lower triangular (k <= r): the k loop stops after the tile's rows,
//   K_FROM_ROW: op(A) is upper triangular (k >= r): the k loop starts at the tile's rows,
//   RESIDUAL: add R (a residual stream) before storing,
//   GELU: also store G = gelu(the stored value) (the MLP's activation beside its input),
//   GELU_GRAD: multiply by gelu'(R) before storing (R: the MLP's pre-activation),
//   ROWSUM: also G[z * M + r] = sum over k of op(A)[r, k], unscaled (a bias gradient: for
//     dW = dy^T x, op(A) = dy^T), written by the workgroups of the first column of tiles.
// The causal flags skip whole tiles only; entries inside a computed tile come from the data, so
// the result is exact as long as the skipped parts are zero (P and dS are, by the softmax).
// Bindings: 0 params (uniform), 1 A (read), 2 B (read), 3 C (read_write), 4 bias (read), 5 R
// (read), 6 G (read_write); bind any buffers of the right access where a flag is off.
//
// Three tilings of the same contract, 256 invocations each: `matmul`, 64 x 64 tiles of C (4 x 4
// an invocation), grid (ceil(N / 64), ceil(M / 64), batches); `matmul_wide`, 128 x 64 tiles (8 x
// 4: two 4 x 4 blocks 64 rows apart), grid (ceil(N / 64), ceil(M / 128), batches); `matmul_big`,
// 128 x 128 tiles (8 x 8: four 4 x 4 quadrants), grid (ceil(N / 128), ceil(M / 128), batches).
// Tiles of op(A) and op(B) sit in workgroup memory k-major as vec4s, so an invocation reads 4 rows
// (or columns) of a block in one load; the next tiles' global loads are issued before the current
// tiles' multiply-adds, so their latency hides behind them. ROWSUM adds each staged element of
// op(A) to a register of its own (no work in the multiply-add loop) and sums them in the end.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;
@group(0) @binding(6) var<storage, read_write> G: array<f32>;

const K0 = 0.7978845608028654;  // sqrt(2 / pi): GELU's tanh approximation, as transformer_elementwise
const K1 = 0.044715;

fn tanh_(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  return sign(u) * (1.0 - e) / (1.0 + e);
}

fn load_a(base: u32, r: u32, k: u32) -> f32 {
  if (r >= p.M || k >= p.K) { return 0.0; }
  if ((p.flags & TRANS_A) != 0u) { return A[base + k * p.lda + r]; }
  return A[base + r * p.lda + k];
}

fn load_b(base: u32, k: u32, c: u32) -> f32 {
  if (k >= p.K || c >= p.N) { return 0.0; }
  if ((p.flags & TRANS_B) != 0u) { return B[base + c * p.ldb + k]; }
  return B[base + k * p.ldb + c];
}

// The epilogue of one output row's 4 adjacent columns c .. c + 3.
fn store4(c_base: u32, r: u32, c: u32, acc: vec4<f32>) {
  if (r >= p.M) { return; }
  let f = p.flags;
  for (var j = 0u; j < 4u; j++) {
    if (c + j >= p.N) { return; }
    var v = p.alpha * acc[j];
    if ((f & BIAS) != 0u) { v += bias[p.bias_off + c + j]; }
    let at = c_base + r * p.ldc + c + j;
    if ((f & RESIDUAL) != 0u) { v += R[at]; }
    if ((f & GELU_GRAD) != 0u) {
      let x = R[at];
      let t = tanh_(K0 * (x + K1 * x * x * x));
      v *= 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * K0 * (1.0 + 3.0 * K1 * x * x);
    }
    if ((f & ACCUMULATE) != 0u) { v += C[at]; }
    C[at] = v;
    if ((f & GELU) != 0u) { G[at] = 0.5 * v * (1.0 + tanh_(K0 * (v + K1 * v * v * v))); }
  }
}

// The k range of a tile whose rows start at row0 (tile height h), after the causal flags.
fn k_range(row0: u32, h: u32) -> vec2<u32> {
  var k_begin = 0u;
  var k_end = p.K;
  if ((p.flags & K_UPTO_ROW) != 0u) { k_end = min(p.K, row0 + h); }
  if ((p.flags & K_FROM_ROW) != 0u) { k_begin = min(row0, k_end); }
  return vec2<u32>(k_begin, k_end);
}

// The set-up every tiling shares: batch z = wg.z's element offsets of A, B and C, the layout
// flags, whether this workgroup sums rows (ROWSUM: the first column of tiles) and the k range of
// a tile of h rows from row0. Everything here is uniform over the workgroup.
struct Tile { a_base: u32, b_base: u32, c_base: u32, kr: vec2<u32>, trans_a: bool, trans_b: bool, rowsum: bool }

fn tile_setup(wg: vec3u, row0: u32, h: u32) -> Tile {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  return Tile(p.a_off + outer * p.a_so + inner * p.a_si, p.b_off + outer * p.b_so + inner * p.b_si,
              p.c_off + outer * p.c_so + inner * p.c_si, k_range(row0, h), (p.flags & TRANS_A) != 0u,
              (p.flags & TRANS_B) != 0u, (p.flags & ROWSUM) != 0u && wg.x == 0u);
}

// ---- matmul: 64 x 64 tiles -----------------------------------------------------------------
const TM = 64u;
const TK = 16u;
// k-major rows of TM / 4 vec4s, padded by one vec4 so that stores along k spread over banks
const SA = 17u;
var<workgroup> As: array<vec4<f32>, 272>;  // [TK][SA]
var<workgroup> Bs: array<vec4<f32>, 272>;  // [TK][SA]

@compute @workgroup_size(256)
fn matmul(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let row0 = wg.y * TM;
  let col0 = wg.x * TM;
  if ((p.flags & SKIP_UPPER) != 0u && col0 > row0 + TM - 1u) { return; }  // whole workgroup: uniform
  let s = tile_setup(wg, row0, TM);
  let a_base = s.a_base; let b_base = s.b_base; let c_base = s.c_base; let kr = s.kr;
  let trans_a = s.trans_a; let trans_b = s.trans_b; let rowsum = s.rowsum;
  let tx = t % 16u;
  let ty = t / 16u;
  // Staging: 4 elements of each tile an invocation. Neighbours read neighbouring addresses of
  // the stored layout (along k when k is the contiguous index), so global loads coalesce.
  var ra: array<f32, 4>;
  var rb: array<f32, 4>;
  for (var i = 0u; i < 4u; i++) {
    let e = t + i * 256u;
    var m = e % TM; var kk = e / TM;
    if (!trans_a) { kk = e % TK; m = e / TK; }
    ra[i] = load_a(a_base, row0 + m, kr.x + kk);
    var n = e % TM; var kb = e / TM;
    if (trans_b) { kb = e % TK; n = e / TK; }
    rb[i] = load_b(b_base, kr.x + kb, col0 + n);
  }
  var acc: array<vec4<f32>, 4>;
  var rsum: array<f32, 4>;
  for (var k0 = kr.x; k0 < kr.y; k0 += TK) {
    if (rowsum) { for (var i = 0u; i < 4u; i++) { rsum[i] += ra[i]; } }
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      var m = e % TM; var kk = e / TM;
      if (!trans_a) { kk = e % TK; m = e / TK; }
      As[kk * SA + m / 4u][m % 4u] = ra[i];
      var n = e % TM; var kb = e / TM;
      if (trans_b) { kb = e % TK; n = e / TK; }
      Bs[kb * SA + n / 4u][n % 4u] = rb[i];
    }
    workgroupBarrier();
    let k1 = k0 + TK;
    if (k1 < kr.y) {  // the next tiles' loads, in flight during the multiply-adds below
      for (var i = 0u; i < 4u; i++) {
        let e = t + i * 256u;
        var m = e % TM; var kk = e / TM;
        if (!trans_a) { kk = e % TK; m = e / TK; }
        ra[i] = load_a(a_base, row0 + m, k1 + kk);
        var n = e % TM; var kb = e / TM;
        if (trans_b) { kb = e % TK; n = e / TK; }
        rb[i] = load_b(b_base, k1 + kb, col0 + n);
      }
    }
    for (var kk = 0u; kk < TK; kk++) {
      let a = As[kk * SA + ty];
      let b = Bs[kk * SA + tx];
      acc[0] = fma(vec4<f32>(a.x), b, acc[0]);
      acc[1] = fma(vec4<f32>(a.y), b, acc[1]);
      acc[2] = fma(vec4<f32>(a.z), b, acc[2]);
      acc[3] = fma(vec4<f32>(a.w), b, acc[3]);
    }
    workgroupBarrier();
  }
  // constant indices only: a dynamically indexed accumulator could be demoted to local memory
  let r = row0 + ty * 4u;
  let c = col0 + tx * 4u;
  store4(c_base, r, c, acc[0]);
  store4(c_base, r + 1u, c, acc[1]);
  store4(c_base, r + 2u, c, acc[2]);
  store4(c_base, r + 3u, c, acc[3]);
  if (rowsum) {  // the staged elements' sums, (kk, m) slot by slot, then down each row m
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      var m = e % TM; var kk = e / TM;
      if (!trans_a) { kk = e % TK; m = e / TK; }
      As[kk * SA + m / 4u][m % 4u] = rsum[i];
    }
    workgroupBarrier();
    if (t < TM && row0 + t < p.M) {
      var total = 0.0;
      for (var kk = 0u; kk < TK; kk++) { total += As[kk * SA + t / 4u][t % 4u]; }
      G[wg.z * p.M + row0 + t] = total;
    }
  }
}

// ---- matmul_wide: 128 x 64 tiles -----------------------------------------------------------
// Invocation (tx, ty) owns rows ty*4 .. +3 and 64 + ty*4 .. +3, columns tx*4 .. +3: per k, two
// vec4 loads of A's column and one of B's row feed 32 multiply-adds.
const WM = 128u;
const SW = 33u;  // WM / 4 + 1
var<workgroup> Aw: array<vec4<f32>, 528>;  // [TK][SW]
var<workgroup> Bw: array<vec4<f32>, 272>;  // [TK][SA]

@compute @workgroup_size(256)
fn matmul_wide(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let row0 = wg.y * WM;
  let col0 = wg.x * TM;
  if ((p.flags & SKIP_UPPER) != 0u && col0 > row0 + WM - 1u) { return; }
  let s = tile_setup(wg, row0, WM);
  let a_base = s.a_base; let b_base = s.b_base; let c_base = s.c_base; let kr = s.kr;
  let trans_a = s.trans_a; let trans_b = s.trans_b; let rowsum = s.rowsum;
  let tx = t % 16u;
  let ty = t / 16u;
  var ra: array<f32, 8>;
  var rb: array<f32, 4>;
  for (var i = 0u; i < 8u; i++) {
    let e = t + i * 256u;
    var m = e % WM; var kk = e / WM;
    if (!trans_a) { kk = e % TK; m = e / TK; }
    ra[i] = load_a(a_base, row0 + m, kr.x + kk);
  }
  for (var i = 0u; i < 4u; i++) {
    let e = t + i * 256u;
    var n = e % TM; var kb = e / TM;
    if (trans_b) { kb = e % TK; n = e / TK; }
    rb[i] = load_b(b_base, kr.x + kb, col0 + n);
  }
  var acc: array<vec4<f32>, 8>;
  var rsum: array<f32, 8>;
  for (var k0 = kr.x; k0 < kr.y; k0 += TK) {
    if (rowsum) { for (var i = 0u; i < 8u; i++) { rsum[i] += ra[i]; } }
    for (var i = 0u; i < 8u; i++) {
      let e = t + i * 256u;
      var m = e % WM; var kk = e / WM;
      if (!trans_a) { kk = e % TK; m = e / TK; }
      Aw[kk * SW + m / 4u][m % 4u] = ra[i];
    }
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      var n = e % TM; var kb = e / TM;
      if (trans_b) { kb = e % TK; n = e / TK; }
      Bw[kb * SA + n / 4u][n % 4u] = rb[i];
    }
    workgroupBarrier();
    let k1 = k0 + TK;
    if (k1 < kr.y) {
      for (var i = 0u; i < 8u; i++) {
        let e = t + i * 256u;
        var m = e % WM; var kk = e / WM;
        if (!trans_a) { kk = e % TK; m = e / TK; }
        ra[i] = load_a(a_base, row0 + m, k1 + kk);
      }
      for (var i = 0u; i < 4u; i++) {
        let e = t + i * 256u;
        var n = e % TM; var kb = e / TM;
        if (trans_b) { kb = e % TK; n = e / TK; }
        rb[i] = load_b(b_base, k1 + kb, col0 + n);
      }
    }
    for (var kk = 0u; kk < TK; kk++) {
      let a0 = Aw[kk * SW + ty];
      let a1 = Aw[kk * SW + 16u + ty];
      let b = Bw[kk * SA + tx];
      acc[0] = fma(vec4<f32>(a0.x), b, acc[0]);
      acc[1] = fma(vec4<f32>(a0.y), b, acc[1]);
      acc[2] = fma(vec4<f32>(a0.z), b, acc[2]);
      acc[3] = fma(vec4<f32>(a0.w), b, acc[3]);
      acc[4] = fma(vec4<f32>(a1.x), b, acc[4]);
      acc[5] = fma(vec4<f32>(a1.y), b, acc[5]);
      acc[6] = fma(vec4<f32>(a1.z), b, acc[6]);
      acc[7] = fma(vec4<f32>(a1.w), b, acc[7]);
    }
    workgroupBarrier();
  }
  let r = row0 + ty * 4u;
  let c = col0 + tx * 4u;
  store4(c_base, r, c, acc[0]);
  store4(c_base, r + 1u, c, acc[1]);
  store4(c_base, r + 2u, c, acc[2]);
  store4(c_base, r + 3u, c, acc[3]);
  store4(c_base, r + 64u, c, acc[4]);
  store4(c_base, r + 65u, c, acc[5]);
  store4(c_base, r + 66u, c, acc[6]);
  store4(c_base, r + 67u, c, acc[7]);
  if (rowsum) {  // as in matmul
    for (var i = 0u; i < 8u; i++) {
      let e = t + i * 256u;
      var m = e % WM; var kk = e / WM;
      if (!trans_a) { kk = e % TK; m = e / TK; }
      Aw[kk * SW + m / 4u][m % 4u] = rsum[i];
    }
    workgroupBarrier();
    if (t < WM && row0 + t < p.M) {
      var total = 0.0;
      for (var kk = 0u; kk < TK; kk++) { total += Aw[kk * SW + t / 4u][t % 4u]; }
      G[wg.z * p.M + row0 + t] = total;
    }
  }
}

// ---- matmul_big: 128 x 128 tiles -----------------------------------------------------------
// Invocation (tx, ty) owns rows ty*4 .. +3 and 64 + ty*4 .. +3, columns tx*4 .. +3 and 64 + tx*4
// .. +3: per k, two vec4 loads of A's column and two of B's row feed 64 multiply-adds.
const BM = 128u;
const BK = 16u;
const SB = 33u;  // BM / 4 + 1: padded as SA (16.5 KiB in all)
var<workgroup> Ab: array<vec4<f32>, 528>;  // [BK][SB]
var<workgroup> Bb: array<vec4<f32>, 528>;  // [BK][SB]

@compute @workgroup_size(256)
fn matmul_big(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let row0 = wg.y * BM;
  let col0 = wg.x * BM;
  if ((p.flags & SKIP_UPPER) != 0u && col0 > row0 + BM - 1u) { return; }
  let s = tile_setup(wg, row0, BM);
  let a_base = s.a_base; let b_base = s.b_base; let c_base = s.c_base; let kr = s.kr;
  let trans_a = s.trans_a; let trans_b = s.trans_b; let rowsum = s.rowsum;
  let tx = t % 16u;
  let ty = t / 16u;
  var ra: array<f32, 8>;
  var rb: array<f32, 8>;
  for (var i = 0u; i < 8u; i++) {
    let e = t + i * 256u;
    var m = e % BM; var kk = e / BM;
    if (!trans_a) { kk = e % BK; m = e / BK; }
    ra[i] = load_a(a_base, row0 + m, kr.x + kk);
    var n = e % BM; var kb = e / BM;
    if (trans_b) { kb = e % BK; n = e / BK; }
    rb[i] = load_b(b_base, kr.x + kb, col0 + n);
  }
  var acc: array<vec4<f32>, 16>;  // [quadrant row half][4 rows][column half]: see the store
  var rsum: array<f32, 8>;
  for (var k0 = kr.x; k0 < kr.y; k0 += BK) {
    if (rowsum) { for (var i = 0u; i < 8u; i++) { rsum[i] += ra[i]; } }
    for (var i = 0u; i < 8u; i++) {
      let e = t + i * 256u;
      var m = e % BM; var kk = e / BM;
      if (!trans_a) { kk = e % BK; m = e / BK; }
      Ab[kk * SB + m / 4u][m % 4u] = ra[i];
      var n = e % BM; var kb = e / BM;
      if (trans_b) { kb = e % BK; n = e / BK; }
      Bb[kb * SB + n / 4u][n % 4u] = rb[i];
    }
    workgroupBarrier();
    let k1 = k0 + BK;
    if (k1 < kr.y) {
      for (var i = 0u; i < 8u; i++) {
        let e = t + i * 256u;
        var m = e % BM; var kk = e / BM;
        if (!trans_a) { kk = e % BK; m = e / BK; }
        ra[i] = load_a(a_base, row0 + m, k1 + kk);
        var n = e % BM; var kb = e / BM;
        if (trans_b) { kb = e % BK; n = e / BK; }
        rb[i] = load_b(b_base, k1 + kb, col0 + n);
      }
    }
    for (var kk = 0u; kk < BK; kk++) {
      let a0 = Ab[kk * SB + ty];
      let a1 = Ab[kk * SB + 16u + ty];
      let b0 = Bb[kk * SB + tx];
      let b1 = Bb[kk * SB + 16u + tx];
      acc[0] = fma(vec4<f32>(a0.x), b0, acc[0]);
      acc[1] = fma(vec4<f32>(a0.x), b1, acc[1]);
      acc[2] = fma(vec4<f32>(a0.y), b0, acc[2]);
      acc[3] = fma(vec4<f32>(a0.y), b1, acc[3]);
      acc[4] = fma(vec4<f32>(a0.z), b0, acc[4]);
      acc[5] = fma(vec4<f32>(a0.z), b1, acc[5]);
      acc[6] = fma(vec4<f32>(a0.w), b0, acc[6]);
      acc[7] = fma(vec4<f32>(a0.w), b1, acc[7]);
      acc[8] = fma(vec4<f32>(a1.x), b0, acc[8]);
      acc[9] = fma(vec4<f32>(a1.x), b1, acc[9]);
      acc[10] = fma(vec4<f32>(a1.y), b0, acc[10]);
      acc[11] = fma(vec4<f32>(a1.y), b1, acc[11]);
      acc[12] = fma(vec4<f32>(a1.z), b0, acc[12]);
      acc[13] = fma(vec4<f32>(a1.z), b1, acc[13]);
      acc[14] = fma(vec4<f32>(a1.w), b0, acc[14]);
      acc[15] = fma(vec4<f32>(a1.w), b1, acc[15]);
    }
    workgroupBarrier();
  }
  // acc[8 h + 2 i + g]: row row0 + 64 h + 4 ty + i, columns col0 + 64 g + 4 tx .. + 3
  // (constant indices only: a dynamically indexed accumulator could be demoted to local memory)
  let r = row0 + ty * 4u;
  let c = col0 + tx * 4u;
  store4(c_base, r, c, acc[0]);
  store4(c_base, r, c + 64u, acc[1]);
  store4(c_base, r + 1u, c, acc[2]);
  store4(c_base, r + 1u, c + 64u, acc[3]);
  store4(c_base, r + 2u, c, acc[4]);
  store4(c_base, r + 2u, c + 64u, acc[5]);
  store4(c_base, r + 3u, c, acc[6]);
  store4(c_base, r + 3u, c + 64u, acc[7]);
  store4(c_base, r + 64u, c, acc[8]);
  store4(c_base, r + 64u, c + 64u, acc[9]);
  store4(c_base, r + 65u, c, acc[10]);
  store4(c_base, r + 65u, c + 64u, acc[11]);
  store4(c_base, r + 66u, c, acc[12]);
  store4(c_base, r + 66u, c + 64u, acc[13]);
  store4(c_base, r + 67u, c, acc[14]);
  store4(c_base, r + 67u, c + 64u, acc[15]);
  if (rowsum) {  // as in matmul
    for (var i = 0u; i < 8u; i++) {
      let e = t + i * 256u;
      var m = e % BM; var kk = e / BM;
      if (!trans_a) { kk = e % BK; m = e / BK; }
      Ab[kk * SB + m / 4u][m % 4u] = rsum[i];
    }
    workgroupBarrier();
    if (t < BM && row0 + t < p.M) {
      var total = 0.0;
      for (var kk = 0u; kk < BK; kk++) { total += Ab[kk * SB + t / 4u][t % 4u]; }
      G[wg.z * p.M + row0 + t] = total;
    }
  }
}
