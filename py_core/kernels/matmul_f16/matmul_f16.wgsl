// WRITTEN by py_core/kernels/matmul_f16/wgsl.py (BM 128, BN 128, BK 32, 2 x 4 subgroups): edit that file, then run
// `python -m py_core.kernels.matmul_f16.wgsl`. Params and the flags come from the family header.
//
// Mixed-precision matrix multiply on subgroup matrices (tensor cores): f16 operands, f32
// accumulation, f32 results. The same contract as transformer_matmul (the same Params, bindings
// and flags, see shaders/transformer_matmul.wgsl), so a model swaps one for the other:
//   C[z] = alpha * op(A[z]) * op(B[z]) (+ bias) (+ R[z]) (+ C[z] when ACCUMULATE), z < grid.z
// with the GELU, GELU-gradient and row-sum epilogues and the causal tile shortcuts, on 128 x 128
// tiles (the causal flags act on tiles of 128 rows). The transposes are also pipeline constants
// (TRANSPOSE_A, TRANSPOSE_B), which must agree with flags TRANS_A and TRANS_B.
// Needs the adapter features `shader-f16`, `subgroups` and `chromium-experimental-subgroup-matrix`
// with an f16 x f16 -> f32 16x16x16 configuration, and subgroups of 32 invocations.
//
// Operands: A and B are bound as raw 32-bit words. With IN_F16 false (the mixed path: f32 master
// values) each word is an f32, rounded to f16 (to nearest) when staged; with IN_F16 true each word
// holds two f16 values (element 2i in the low half), and offsets, strides and element counts of A
// and B count f16 elements. C, bias, R and G are f32 in both.
//
// Tiling: 2 x 4 subgroups compute a 128 x 128 tile of C; a subgroup owns a 64 x 32 block
// of it as 4 x 2 16x16 result matrices. For each 32-deep slice of K the workgroup stages
// op(A) and op(B) in workgroup memory as f16, in the orientation they lie in memory (a transposed
// operand is read back column-major by subgroupMatrixLoad), so staging copies contiguous runs and
// global loads coalesce; the next slice's loads are issued before this slice's multiply-adds.
// Epilogue: a workgroup whose tile lies inside C, with no epilogue flag and alpha 1, stores its
// matrices straight to C; otherwise each subgroup passes them through a 16 x 16 f32 scratch in
// workgroup memory and every invocation applies the epilogue to 8 elements of each.
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<u32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;
@group(0) @binding(6) var<storage, read_write> G: array<f32>;

override IN_F16: bool = false;
override TRANSPOSE_A: bool = false;
override TRANSPOSE_B: bool = false;

const BM = 128u;
const BN = 128u;
const BK = 32u;
const NT = 256u;
const PAD = 8u;  // f16 elements after each staged row: 16 bytes, rows stay 16-byte aligned
// staged tiles: A as [m][k], or [k][m] when transposed; B as [k][n], or [n][k] when transposed
override A_COLS: u32 = select(BK, BM, TRANSPOSE_A);
override B_COLS: u32 = select(BN, BK, TRANSPOSE_B);
override SA: u32 = A_COLS + PAD;
override SB: u32 = B_COLS + PAD;
var<workgroup> As: array<f16, 5120>;
var<workgroup> Bs: array<f16, 5120>;
var<workgroup> Cs: array<f32, 2048>;  // a 16 x 16 scratch a subgroup

const K0 = 0.7978845608028654;  // sqrt(2 / pi): GELU's tanh approximation
const K1 = 0.044715;

fn tanh_(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  return sign(u) * (1.0 - e) / (1.0 + e);
}

fn elem_a(i: u32) -> f16 {
  if (IN_F16) { return f16(unpack2x16float(A[i >> 1u])[i & 1u]); }
  return f16(bitcast<f32>(A[i]));
}

fn elem_b(i: u32) -> f16 {
  if (IN_F16) { return f16(unpack2x16float(B[i >> 1u])[i & 1u]); }
  return f16(bitcast<f32>(B[i]));
}

// Elements i and i + 1 of a row, both in range, i even when IN_F16 (the caller checks).
fn pair_a(i: u32) -> vec2<f16> {
  if (IN_F16) { return vec2<f16>(unpack2x16float(A[i >> 1u])); }
  return vec2<f16>(vec2<f32>(bitcast<f32>(A[i]), bitcast<f32>(A[i + 1u])));
}

fn pair_b(i: u32) -> vec2<f16> {
  if (IN_F16) { return vec2<f16>(unpack2x16float(B[i >> 1u])); }
  return vec2<f16>(vec2<f32>(bitcast<f32>(B[i]), bitcast<f32>(B[i + 1u])));
}

// Pair q of the A tile of the slice at k0: (row, column) in memory order, bounds checked.
fn load_a(q: u32, row0: u32, k0: u32, k_end: u32, base: u32, fast: bool) -> vec2<f16> {
  let e = 2u * q;
  let r = e / A_COLS;
  let c = e % A_COLS;
  var m = row0 + r;
  var k = k0 + c;
  if (TRANSPOSE_A) { m = row0 + c; k = k0 + r; }
  var idx = base + m * p.lda + k;
  if (TRANSPOSE_A) { idx = base + k * p.lda + m; }
  if (fast) { return pair_a(idx); }
  var ok0 = m < p.M && k < k_end;
  var ok1 = m < p.M && k + 1u < k_end;
  if (TRANSPOSE_A) { ok1 = k < k_end && m + 1u < p.M; }
  var v = vec2<f16>(0.0h, 0.0h);
  if (ok0) { v.x = elem_a(idx); }
  if (ok1) { v.y = elem_a(idx + 1u); }
  return v;
}

fn load_b(q: u32, col0: u32, k0: u32, k_end: u32, base: u32, fast: bool) -> vec2<f16> {
  let e = 2u * q;
  let r = e / B_COLS;
  let c = e % B_COLS;
  var k = k0 + r;
  var n = col0 + c;
  if (TRANSPOSE_B) { k = k0 + c; n = col0 + r; }
  var idx = base + k * p.ldb + n;
  if (TRANSPOSE_B) { idx = base + n * p.ldb + k; }
  if (fast) { return pair_b(idx); }
  var ok0 = k < k_end && n < p.N;
  var ok1 = k < k_end && n + 1u < p.N;
  if (TRANSPOSE_B) { ok1 = n < p.N && k + 1u < k_end; }
  var v = vec2<f16>(0.0h, 0.0h);
  if (ok0) { v.x = elem_b(idx); }
  if (ok1) { v.y = elem_b(idx + 1u); }
  return v;
}

fn stage_a(q: u32, v: vec2<f16>) {
  let e = 2u * q;
  let at = (e / A_COLS) * SA + e % A_COLS;
  As[at] = v.x;
  As[at + 1u] = v.y;
}

fn stage_b(q: u32, v: vec2<f16>) {
  let e = 2u * q;
  let at = (e / B_COLS) * SB + e % B_COLS;
  Bs[at] = v.x;
  Bs[at + 1u] = v.y;
}

fn left(m: u32, kk: u32) -> subgroup_matrix_left<f16, 16, 16> {
  if (TRANSPOSE_A) { return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, kk * SA + m, true, SA); }
  return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, m * SA + kk, false, SA);
}

fn right(n: u32, kk: u32) -> subgroup_matrix_right<f16, 16, 16> {
  if (TRANSPOSE_B) { return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, n * SB + kk, true, SB); }
  return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, kk * SB + n, false, SB);
}

// The epilogue of one element of C.
fn store1(c_base: u32, r: u32, c: u32, acc: f32) {
  if (r >= p.M || c >= p.N) { return; }
  let f = p.flags;
  var v = p.alpha * acc;
  if ((f & BIAS) != 0u) { v += bias[p.bias_off + c]; }
  let at = c_base + r * p.ldc + c;
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

// The scratch-path epilogue of one 16 x 16 result matrix at (r0, c0) of C, for subgroup sg.
fn scratch(sg: u32, lane: u32, c_base: u32, r0: u32, c0: u32) {
  for (var e = 0u; e < 8u; e++) {
    let el = e * 32u + lane;
    store1(c_base, r0 + el / 16u, c0 + el % 16u, Cs[sg * 256u + el]);
  }
}

@compute @workgroup_size(NT)
fn matmul(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let row0 = wg.y * BM;
  let col0 = wg.x * BN;
  if ((p.flags & SKIP_UPPER) != 0u && col0 > row0 + BM - 1u) { return; }  // whole workgroup: uniform
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let rowsum = (p.flags & ROWSUM) != 0u && wg.x == 0u;
  var k_end = p.K;
  if ((p.flags & K_UPTO_ROW) != 0u) { k_end = min(p.K, row0 + BM); }
  var k0 = 0u;
  if ((p.flags & K_FROM_ROW) != 0u) { k0 = min(row0, k_end); }
  // unchecked pair loads where the tile's rows and columns are inside and pairs are aligned
  let even = !IN_F16 || (p.lda % 2u == 0u && p.ldb % 2u == 0u && a_base % 2u == 0u && b_base % 2u == 0u);
  let inside_a = even && row0 + BM <= p.M;
  let inside_b = even && col0 + BN <= p.N;
  let sg = t / 32u;
  let lane = t % 32u;
  let m0 = (sg / 4u) * 64u;  // the subgroup's block within the tile
  let n0 = (sg % 4u) * 32u;

  var ra0: vec2<f16>;
  var ra1: vec2<f16>;
  var ra2: vec2<f16>;
  var ra3: vec2<f16>;
  var ra4: vec2<f16>;
  var ra5: vec2<f16>;
  var ra6: vec2<f16>;
  var ra7: vec2<f16>;
  var rb0: vec2<f16>;
  var rb1: vec2<f16>;
  var rb2: vec2<f16>;
  var rb3: vec2<f16>;
  var rb4: vec2<f16>;
  var rb5: vec2<f16>;
  var rb6: vec2<f16>;
  var rb7: vec2<f16>;
  {
    let fa = inside_a && k0 + BK <= k_end;
    let fb = inside_b && k0 + BK <= k_end;
    ra0 = load_a(0u + t, row0, k0, k_end, a_base, fa);
    ra1 = load_a(256u + t, row0, k0, k_end, a_base, fa);
    ra2 = load_a(512u + t, row0, k0, k_end, a_base, fa);
    ra3 = load_a(768u + t, row0, k0, k_end, a_base, fa);
    ra4 = load_a(1024u + t, row0, k0, k_end, a_base, fa);
    ra5 = load_a(1280u + t, row0, k0, k_end, a_base, fa);
    ra6 = load_a(1536u + t, row0, k0, k_end, a_base, fa);
    ra7 = load_a(1792u + t, row0, k0, k_end, a_base, fa);
    rb0 = load_b(0u + t, col0, k0, k_end, b_base, fb);
    rb1 = load_b(256u + t, col0, k0, k_end, b_base, fb);
    rb2 = load_b(512u + t, col0, k0, k_end, b_base, fb);
    rb3 = load_b(768u + t, col0, k0, k_end, b_base, fb);
    rb4 = load_b(1024u + t, col0, k0, k_end, b_base, fb);
    rb5 = load_b(1280u + t, col0, k0, k_end, b_base, fb);
    rb6 = load_b(1536u + t, col0, k0, k_end, b_base, fb);
    rb7 = load_b(1792u + t, col0, k0, k_end, b_base, fb);
  }
  var rs = 0.0;  // ROWSUM: invocation t < BM sums row t of op(A)
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc2_0: subgroup_matrix_result<f32, 16, 16>;
  var acc2_1: subgroup_matrix_result<f32, 16, 16>;
  var acc3_0: subgroup_matrix_result<f32, 16, 16>;
  var acc3_1: subgroup_matrix_result<f32, 16, 16>;
  for (; k0 < k_end; k0 += BK) {
    stage_a(0u + t, ra0);
    stage_a(256u + t, ra1);
    stage_a(512u + t, ra2);
    stage_a(768u + t, ra3);
    stage_a(1024u + t, ra4);
    stage_a(1280u + t, ra5);
    stage_a(1536u + t, ra6);
    stage_a(1792u + t, ra7);
    stage_b(0u + t, rb0);
    stage_b(256u + t, rb1);
    stage_b(512u + t, rb2);
    stage_b(768u + t, rb3);
    stage_b(1024u + t, rb4);
    stage_b(1280u + t, rb5);
    stage_b(1536u + t, rb6);
    stage_b(1792u + t, rb7);
    workgroupBarrier();
    let k1 = k0 + BK;
    if (k1 < k_end) {  // the next slice's loads, in flight during the multiply-adds below
      let fa = inside_a && k1 + BK <= k_end;
      let fb = inside_b && k1 + BK <= k_end;
      ra0 = load_a(0u + t, row0, k1, k_end, a_base, fa);
      ra1 = load_a(256u + t, row0, k1, k_end, a_base, fa);
      ra2 = load_a(512u + t, row0, k1, k_end, a_base, fa);
      ra3 = load_a(768u + t, row0, k1, k_end, a_base, fa);
      ra4 = load_a(1024u + t, row0, k1, k_end, a_base, fa);
      ra5 = load_a(1280u + t, row0, k1, k_end, a_base, fa);
      ra6 = load_a(1536u + t, row0, k1, k_end, a_base, fa);
      ra7 = load_a(1792u + t, row0, k1, k_end, a_base, fa);
      rb0 = load_b(0u + t, col0, k1, k_end, b_base, fb);
      rb1 = load_b(256u + t, col0, k1, k_end, b_base, fb);
      rb2 = load_b(512u + t, col0, k1, k_end, b_base, fb);
      rb3 = load_b(768u + t, col0, k1, k_end, b_base, fb);
      rb4 = load_b(1024u + t, col0, k1, k_end, b_base, fb);
      rb5 = load_b(1280u + t, col0, k1, k_end, b_base, fb);
      rb6 = load_b(1536u + t, col0, k1, k_end, b_base, fb);
      rb7 = load_b(1792u + t, col0, k1, k_end, b_base, fb);
    }
    if (rowsum && t < BM) {  // row t of op(A)'s staged slice (zeros past K)
      var s = 0.0;
      for (var kk = 0u; kk < BK; kk++) {
        if (TRANSPOSE_A) { s += f32(As[kk * SA + t]); } else { s += f32(As[t * SA + kk]); }
      }
      rs += s;
    }
    {
      let l0 = left(m0 + 0u, 0u);
      let l1 = left(m0 + 16u, 0u);
      let l2 = left(m0 + 32u, 0u);
      let l3 = left(m0 + 48u, 0u);
      let r0 = right(n0 + 0u, 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      let r1 = right(n0 + 16u, 0u);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
    }
    {
      let l0 = left(m0 + 0u, 16u);
      let l1 = left(m0 + 16u, 16u);
      let l2 = left(m0 + 32u, 16u);
      let l3 = left(m0 + 48u, 16u);
      let r0 = right(n0 + 0u, 16u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      let r1 = right(n0 + 16u, 16u);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
    }
    workgroupBarrier();
  }
  if (rowsum && t < BM && row0 + t < p.M) { G[wg.z * p.M + row0 + t] = rs; }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  let inside = row0 + BM <= p.M && col0 + BN <= p.N;
  if (plain && inside && p.ldc % 4u == 0u && c_base % 4u == 0u) {
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 0u) * p.ldc + col0 + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 0u) * p.ldc + col0 + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 16u) * p.ldc + col0 + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 16u) * p.ldc + col0 + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 32u) * p.ldc + col0 + n0 + 0u, acc2_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 32u) * p.ldc + col0 + n0 + 16u, acc2_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 48u) * p.ldc + col0 + n0 + 0u, acc3_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (row0 + m0 + 48u) * p.ldc + col0 + n0 + 16u, acc3_1, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 0u, col0 + n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 0u, col0 + n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 16u, col0 + n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 16u, col0 + n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 32u, col0 + n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 32u, col0 + n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 48u, col0 + n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, row0 + m0 + 48u, col0 + n0 + 16u);
  workgroupBarrier();
}

// ---- Direct-load entries (direct_*) and the f16 cast ---------------------------------------------
// The same contract without the causal flags, on operands already in f16 (A16, B16: the f16 copies
// that cast_f16 writes, offsets and strides in f16 elements): each subgroup loads its operand
// matrices straight from storage, no workgroup memory and no barriers in the K loop (the
// hardware's caches serve the re-reads). A transposed operand is loaded column-major. The host
// picks an entry only where M, N and K are multiples of its tile and the offsets keep 16-byte
// alignment (matmul_f16.pick_direct); ROWSUM is summed from storage by the column-0 workgroups.
@group(0) @binding(1) var<storage, read> A16: array<f16>;
@group(0) @binding(2) var<storage, read> B16: array<f16>;

fn dleft(base: u32, m: u32, k: u32) -> subgroup_matrix_left<f16, 16, 16> {
  if (TRANSPOSE_A) { return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&A16, base + k * p.lda + m, true, p.lda); }
  return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&A16, base + m * p.lda + k, false, p.lda);
}

fn dright(base: u32, n: u32, k: u32) -> subgroup_matrix_right<f16, 16, 16> {
  if (TRANSPOSE_B) { return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&B16, base + n * p.ldb + k, true, p.ldb); }
  return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&B16, base + k * p.ldb + n, false, p.ldb);
}

// ROWSUM: G[z * M + r] = the sum over K of row r of op(A), rows r0 .. r0 + rows, nt invocations.
fn drowsum(z: u32, base: u32, r0: u32, rows: u32, t: u32, nt: u32) {
  for (var r = t; r < rows; r += nt) {
    var s = 0.0;
    for (var k = 0u; k < p.K; k++) {
      if (TRANSPOSE_A) { s += f32(A16[base + k * p.lda + r0 + r]); } else { s += f32(A16[base + (r0 + r) * p.lda + k]); }
    }
    if (r0 + r < p.M) { G[z * p.M + r0 + r] = s; }
  }
}

// D16[dst_off / 2 ..] <- S32[src_off .. src_off + n] as packed f16 pairs (dst_off even; an odd n
// leaves a zero in the last high half), rounded as the staged kernel rounds (f16()).
@group(0) @binding(0) var<uniform> cp: Cast;
@group(0) @binding(1) var<storage, read> S32: array<f32>;
@group(0) @binding(2) var<storage, read_write> D16: array<u32>;

@compute @workgroup_size(256)
fn cast_f16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = gid.x + gid.y * nw.x * 256u;
  let i = 2u * w;
  if (i >= cp.n) { return; }
  var y = 0.0;
  if (i + 1u < cp.n) { y = S32[cp.src_off + i + 1u]; }
  D16[cp.dst_off / 2u + w] = bitcast<u32>(vec2<f16>(vec2<f32>(S32[cp.src_off + i], y)));
}

// direct_64: 1 x 1 subgroups of 4 x 4 matrices (64 x 64 of C), K unrolled 1x
@compute @workgroup_size(32)
fn direct_64(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * 64u;
  let m0 = row0 + (sg / 1u) * 64u;
  let n0 = wg.x * 64u + (sg % 1u) * 64u;
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc0_2: subgroup_matrix_result<f32, 16, 16>;
  var acc0_3: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_2: subgroup_matrix_result<f32, 16, 16>;
  var acc1_3: subgroup_matrix_result<f32, 16, 16>;
  var acc2_0: subgroup_matrix_result<f32, 16, 16>;
  var acc2_1: subgroup_matrix_result<f32, 16, 16>;
  var acc2_2: subgroup_matrix_result<f32, 16, 16>;
  var acc2_3: subgroup_matrix_result<f32, 16, 16>;
  var acc3_0: subgroup_matrix_result<f32, 16, 16>;
  var acc3_1: subgroup_matrix_result<f32, 16, 16>;
  var acc3_2: subgroup_matrix_result<f32, 16, 16>;
  var acc3_3: subgroup_matrix_result<f32, 16, 16>;
  for (var k = 0u; k < p.K; k += 16u) {
    {
      let l0 = dleft(a_base, m0 + 0u, k + 0u);
      let l1 = dleft(a_base, m0 + 16u, k + 0u);
      let l2 = dleft(a_base, m0 + 32u, k + 0u);
      let l3 = dleft(a_base, m0 + 48u, k + 0u);
      let r0 = dright(b_base, n0 + 0u, k + 0u);
      let r1 = dright(b_base, n0 + 16u, k + 0u);
      let r2 = dright(b_base, n0 + 32u, k + 0u);
      let r3 = dright(b_base, n0 + 48u, k + 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc2_2 = subgroupMatrixMultiplyAccumulate(l2, r2, acc2_2);
      acc3_2 = subgroupMatrixMultiplyAccumulate(l3, r2, acc3_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
      acc2_3 = subgroupMatrixMultiplyAccumulate(l2, r3, acc2_3);
      acc3_3 = subgroupMatrixMultiplyAccumulate(l3, r3, acc3_3);
    }
  }
  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) { drowsum(wg.z, a_base, row0, 64u, t, 32u); }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  if (plain) {
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 32u, acc0_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 48u, acc0_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 32u, acc1_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 48u, acc1_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 0u, acc2_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 16u, acc2_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 32u, acc2_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 48u, acc2_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 0u, acc3_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 16u, acc3_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 32u, acc3_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 48u, acc3_3, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 48u);
  workgroupBarrier();
}

// direct_64_u2: 1 x 1 subgroups of 4 x 4 matrices (64 x 64 of C), K unrolled 2x
@compute @workgroup_size(32)
fn direct_64_u2(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * 64u;
  let m0 = row0 + (sg / 1u) * 64u;
  let n0 = wg.x * 64u + (sg % 1u) * 64u;
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc0_2: subgroup_matrix_result<f32, 16, 16>;
  var acc0_3: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_2: subgroup_matrix_result<f32, 16, 16>;
  var acc1_3: subgroup_matrix_result<f32, 16, 16>;
  var acc2_0: subgroup_matrix_result<f32, 16, 16>;
  var acc2_1: subgroup_matrix_result<f32, 16, 16>;
  var acc2_2: subgroup_matrix_result<f32, 16, 16>;
  var acc2_3: subgroup_matrix_result<f32, 16, 16>;
  var acc3_0: subgroup_matrix_result<f32, 16, 16>;
  var acc3_1: subgroup_matrix_result<f32, 16, 16>;
  var acc3_2: subgroup_matrix_result<f32, 16, 16>;
  var acc3_3: subgroup_matrix_result<f32, 16, 16>;
  for (var k = 0u; k < p.K; k += 32u) {
    {
      let l0 = dleft(a_base, m0 + 0u, k + 0u);
      let l1 = dleft(a_base, m0 + 16u, k + 0u);
      let l2 = dleft(a_base, m0 + 32u, k + 0u);
      let l3 = dleft(a_base, m0 + 48u, k + 0u);
      let r0 = dright(b_base, n0 + 0u, k + 0u);
      let r1 = dright(b_base, n0 + 16u, k + 0u);
      let r2 = dright(b_base, n0 + 32u, k + 0u);
      let r3 = dright(b_base, n0 + 48u, k + 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc2_2 = subgroupMatrixMultiplyAccumulate(l2, r2, acc2_2);
      acc3_2 = subgroupMatrixMultiplyAccumulate(l3, r2, acc3_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
      acc2_3 = subgroupMatrixMultiplyAccumulate(l2, r3, acc2_3);
      acc3_3 = subgroupMatrixMultiplyAccumulate(l3, r3, acc3_3);
    }
    {
      let l0 = dleft(a_base, m0 + 0u, k + 16u);
      let l1 = dleft(a_base, m0 + 16u, k + 16u);
      let l2 = dleft(a_base, m0 + 32u, k + 16u);
      let l3 = dleft(a_base, m0 + 48u, k + 16u);
      let r0 = dright(b_base, n0 + 0u, k + 16u);
      let r1 = dright(b_base, n0 + 16u, k + 16u);
      let r2 = dright(b_base, n0 + 32u, k + 16u);
      let r3 = dright(b_base, n0 + 48u, k + 16u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc2_2 = subgroupMatrixMultiplyAccumulate(l2, r2, acc2_2);
      acc3_2 = subgroupMatrixMultiplyAccumulate(l3, r2, acc3_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
      acc2_3 = subgroupMatrixMultiplyAccumulate(l2, r3, acc2_3);
      acc3_3 = subgroupMatrixMultiplyAccumulate(l3, r3, acc3_3);
    }
  }
  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) { drowsum(wg.z, a_base, row0, 64u, t, 32u); }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  if (plain) {
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 32u, acc0_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 48u, acc0_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 32u, acc1_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 48u, acc1_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 0u, acc2_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 16u, acc2_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 32u, acc2_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 48u, acc2_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 0u, acc3_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 16u, acc3_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 32u, acc3_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 48u, acc3_3, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 48u);
  workgroupBarrier();
}

// direct_64x128: 1 x 2 subgroups of 4 x 4 matrices (64 x 128 of C), K unrolled 1x
@compute @workgroup_size(64)
fn direct_64x128(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * 64u;
  let m0 = row0 + (sg / 2u) * 64u;
  let n0 = wg.x * 128u + (sg % 2u) * 64u;
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc0_2: subgroup_matrix_result<f32, 16, 16>;
  var acc0_3: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_2: subgroup_matrix_result<f32, 16, 16>;
  var acc1_3: subgroup_matrix_result<f32, 16, 16>;
  var acc2_0: subgroup_matrix_result<f32, 16, 16>;
  var acc2_1: subgroup_matrix_result<f32, 16, 16>;
  var acc2_2: subgroup_matrix_result<f32, 16, 16>;
  var acc2_3: subgroup_matrix_result<f32, 16, 16>;
  var acc3_0: subgroup_matrix_result<f32, 16, 16>;
  var acc3_1: subgroup_matrix_result<f32, 16, 16>;
  var acc3_2: subgroup_matrix_result<f32, 16, 16>;
  var acc3_3: subgroup_matrix_result<f32, 16, 16>;
  for (var k = 0u; k < p.K; k += 16u) {
    {
      let l0 = dleft(a_base, m0 + 0u, k + 0u);
      let l1 = dleft(a_base, m0 + 16u, k + 0u);
      let l2 = dleft(a_base, m0 + 32u, k + 0u);
      let l3 = dleft(a_base, m0 + 48u, k + 0u);
      let r0 = dright(b_base, n0 + 0u, k + 0u);
      let r1 = dright(b_base, n0 + 16u, k + 0u);
      let r2 = dright(b_base, n0 + 32u, k + 0u);
      let r3 = dright(b_base, n0 + 48u, k + 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc2_2 = subgroupMatrixMultiplyAccumulate(l2, r2, acc2_2);
      acc3_2 = subgroupMatrixMultiplyAccumulate(l3, r2, acc3_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
      acc2_3 = subgroupMatrixMultiplyAccumulate(l2, r3, acc2_3);
      acc3_3 = subgroupMatrixMultiplyAccumulate(l3, r3, acc3_3);
    }
  }
  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) { drowsum(wg.z, a_base, row0, 64u, t, 64u); }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  if (plain) {
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 32u, acc0_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 48u, acc0_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 32u, acc1_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 48u, acc1_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 0u, acc2_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 16u, acc2_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 32u, acc2_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 48u, acc2_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 0u, acc3_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 16u, acc3_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 32u, acc3_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 48u, acc3_3, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 48u);
  workgroupBarrier();
}

// direct_128x64: 2 x 1 subgroups of 4 x 4 matrices (128 x 64 of C), K unrolled 1x
@compute @workgroup_size(64)
fn direct_128x64(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * 128u;
  let m0 = row0 + (sg / 1u) * 64u;
  let n0 = wg.x * 64u + (sg % 1u) * 64u;
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc0_2: subgroup_matrix_result<f32, 16, 16>;
  var acc0_3: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_2: subgroup_matrix_result<f32, 16, 16>;
  var acc1_3: subgroup_matrix_result<f32, 16, 16>;
  var acc2_0: subgroup_matrix_result<f32, 16, 16>;
  var acc2_1: subgroup_matrix_result<f32, 16, 16>;
  var acc2_2: subgroup_matrix_result<f32, 16, 16>;
  var acc2_3: subgroup_matrix_result<f32, 16, 16>;
  var acc3_0: subgroup_matrix_result<f32, 16, 16>;
  var acc3_1: subgroup_matrix_result<f32, 16, 16>;
  var acc3_2: subgroup_matrix_result<f32, 16, 16>;
  var acc3_3: subgroup_matrix_result<f32, 16, 16>;
  for (var k = 0u; k < p.K; k += 16u) {
    {
      let l0 = dleft(a_base, m0 + 0u, k + 0u);
      let l1 = dleft(a_base, m0 + 16u, k + 0u);
      let l2 = dleft(a_base, m0 + 32u, k + 0u);
      let l3 = dleft(a_base, m0 + 48u, k + 0u);
      let r0 = dright(b_base, n0 + 0u, k + 0u);
      let r1 = dright(b_base, n0 + 16u, k + 0u);
      let r2 = dright(b_base, n0 + 32u, k + 0u);
      let r3 = dright(b_base, n0 + 48u, k + 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc2_2 = subgroupMatrixMultiplyAccumulate(l2, r2, acc2_2);
      acc3_2 = subgroupMatrixMultiplyAccumulate(l3, r2, acc3_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
      acc2_3 = subgroupMatrixMultiplyAccumulate(l2, r3, acc2_3);
      acc3_3 = subgroupMatrixMultiplyAccumulate(l3, r3, acc3_3);
    }
  }
  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) { drowsum(wg.z, a_base, row0, 128u, t, 64u); }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  if (plain) {
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 32u, acc0_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 48u, acc0_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 32u, acc1_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 48u, acc1_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 0u, acc2_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 16u, acc2_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 32u, acc2_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 48u, acc2_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 0u, acc3_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 16u, acc3_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 32u, acc3_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 48u, acc3_3, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 48u);
  workgroupBarrier();
}

// direct_128: 2 x 2 subgroups of 4 x 4 matrices (128 x 128 of C), K unrolled 1x
@compute @workgroup_size(128)
fn direct_128(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * 128u;
  let m0 = row0 + (sg / 2u) * 64u;
  let n0 = wg.x * 128u + (sg % 2u) * 64u;
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc0_2: subgroup_matrix_result<f32, 16, 16>;
  var acc0_3: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_2: subgroup_matrix_result<f32, 16, 16>;
  var acc1_3: subgroup_matrix_result<f32, 16, 16>;
  var acc2_0: subgroup_matrix_result<f32, 16, 16>;
  var acc2_1: subgroup_matrix_result<f32, 16, 16>;
  var acc2_2: subgroup_matrix_result<f32, 16, 16>;
  var acc2_3: subgroup_matrix_result<f32, 16, 16>;
  var acc3_0: subgroup_matrix_result<f32, 16, 16>;
  var acc3_1: subgroup_matrix_result<f32, 16, 16>;
  var acc3_2: subgroup_matrix_result<f32, 16, 16>;
  var acc3_3: subgroup_matrix_result<f32, 16, 16>;
  for (var k = 0u; k < p.K; k += 16u) {
    {
      let l0 = dleft(a_base, m0 + 0u, k + 0u);
      let l1 = dleft(a_base, m0 + 16u, k + 0u);
      let l2 = dleft(a_base, m0 + 32u, k + 0u);
      let l3 = dleft(a_base, m0 + 48u, k + 0u);
      let r0 = dright(b_base, n0 + 0u, k + 0u);
      let r1 = dright(b_base, n0 + 16u, k + 0u);
      let r2 = dright(b_base, n0 + 32u, k + 0u);
      let r3 = dright(b_base, n0 + 48u, k + 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc2_2 = subgroupMatrixMultiplyAccumulate(l2, r2, acc2_2);
      acc3_2 = subgroupMatrixMultiplyAccumulate(l3, r2, acc3_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
      acc2_3 = subgroupMatrixMultiplyAccumulate(l2, r3, acc2_3);
      acc3_3 = subgroupMatrixMultiplyAccumulate(l3, r3, acc3_3);
    }
  }
  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) { drowsum(wg.z, a_base, row0, 128u, t, 128u); }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  if (plain) {
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 32u, acc0_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 48u, acc0_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 32u, acc1_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 48u, acc1_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 0u, acc2_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 16u, acc2_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 32u, acc2_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 32u) * p.ldc + n0 + 48u, acc2_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 0u, acc3_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 16u, acc3_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 32u, acc3_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 48u) * p.ldc + n0 + 48u, acc3_3, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc2_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 32u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc3_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 48u, n0 + 48u);
  workgroupBarrier();
}

// direct_32x64: 1 x 1 subgroups of 2 x 4 matrices (32 x 64 of C), K unrolled 1x
@compute @workgroup_size(32)
fn direct_32x64(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * 32u;
  let m0 = row0 + (sg / 1u) * 32u;
  let n0 = wg.x * 64u + (sg % 1u) * 64u;
  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc0_1: subgroup_matrix_result<f32, 16, 16>;
  var acc0_2: subgroup_matrix_result<f32, 16, 16>;
  var acc0_3: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_1: subgroup_matrix_result<f32, 16, 16>;
  var acc1_2: subgroup_matrix_result<f32, 16, 16>;
  var acc1_3: subgroup_matrix_result<f32, 16, 16>;
  for (var k = 0u; k < p.K; k += 16u) {
    {
      let l0 = dleft(a_base, m0 + 0u, k + 0u);
      let l1 = dleft(a_base, m0 + 16u, k + 0u);
      let r0 = dright(b_base, n0 + 0u, k + 0u);
      let r1 = dright(b_base, n0 + 16u, k + 0u);
      let r2 = dright(b_base, n0 + 32u, k + 0u);
      let r3 = dright(b_base, n0 + 48u, k + 0u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc0_2 = subgroupMatrixMultiplyAccumulate(l0, r2, acc0_2);
      acc1_2 = subgroupMatrixMultiplyAccumulate(l1, r2, acc1_2);
      acc0_3 = subgroupMatrixMultiplyAccumulate(l0, r3, acc0_3);
      acc1_3 = subgroupMatrixMultiplyAccumulate(l1, r3, acc1_3);
    }
  }
  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) { drowsum(wg.z, a_base, row0, 32u, t, 32u); }
  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;
  if (plain) {
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 0u, acc0_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 16u, acc0_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 32u, acc0_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 0u) * p.ldc + n0 + 48u, acc0_3, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 0u, acc1_0, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 16u, acc1_1, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 32u, acc1_2, false, p.ldc);
    subgroupMatrixStore(&C, c_base + (m0 + 16u) * p.ldc + n0 + 48u, acc1_3, false, p.ldc);
    return;
  }
  subgroupMatrixStore(&Cs, sg * 256u, acc0_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc0_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 0u, n0 + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_0, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 0u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_1, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_2, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&Cs, sg * 256u, acc1_3, false, 16u);
  workgroupBarrier();
  scratch(sg, lane, c_base, m0 + 16u, n0 + 48u);
  workgroupBarrier();
}
