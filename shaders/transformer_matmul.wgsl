// Strided, batched f32 matrix multiply for the transformer:
//   C[z] = alpha * op(A[z]) * op(B[z]) (+ bias) (+ C[z] when ACCUMULATE), z = 0 .. grid.z - 1
// The tiling is shaders/matmul.wgsl's (64 x 64 tiles of C, 16 x 16 invocations, 4 x 4 each).
// What this family adds is what the model needs to avoid copies:
//   - element offsets: all parameters live in one buffer, so a weight is (buffer, offset);
//   - leading dimensions: a head's slice of q, k or v is a strided view of the qkv rows;
//   - a two-level batch, z = outer * inner + i (outer: sequence, inner: head), each level with
//     its own element stride for A, B and C;
//   - a fused bias, and causal shortcuts for attention's triangular matrices.
// Row-major. op(A) is M x K: A[r * lda + k], or A[k * lda + r] when TRANS_A.
//            op(B) is K x N: B[k * ldb + c], or B[c * ldb + k] when TRANS_B.
//            C[r * ldc + c].
// flags: 1 TRANS_A, 2 TRANS_B, 4 ACCUMULATE (add into C), 8 BIAS (add bias[bias_off + c]),
//   16 SKIP_UPPER: output tiles whose columns all exceed their rows are left unwritten,
//   32 K_UPTO_ROW: op(A) is lower triangular (k <= r): the k loop stops after the tile's rows,
//   64 K_FROM_ROW: op(A) is upper triangular (k >= r): the k loop starts at the tile's rows.
// The causal flags skip whole tiles only; entries inside a computed tile come from the data, so
// the result is exact as long as the skipped parts are zero (P and dS are, by the softmax).
// Bindings: 0 params (uniform), 1 A (read), 2 B (read), 3 C (read_write), 4 bias (read; bind
// any read-only buffer when BIAS is off). Grid: (ceil(N / 64), ceil(M / 64), batches).

struct Params {
  M: u32, N: u32, K: u32, flags: u32,
  alpha: f32, inner: u32, lda: u32, ldb: u32,
  ldc: u32, a_off: u32, b_off: u32, c_off: u32,
  bias_off: u32, a_so: u32, a_si: u32, b_so: u32,
  b_si: u32, c_so: u32, c_si: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

const TM = 64u;
const TN = 64u;
const TK = 16u;
var<workgroup> As: array<f32, 1024>;  // [TK][TM]
var<workgroup> Bs: array<f32, 1024>;  // [TK][TN]

fn load_a(base: u32, r: u32, k: u32) -> f32 {
  if (r >= p.M || k >= p.K) { return 0.0; }
  if ((p.flags & 1u) != 0u) { return A[base + k * p.lda + r]; }
  return A[base + r * p.lda + k];
}

fn load_b(base: u32, k: u32, c: u32) -> f32 {
  if (k >= p.K || c >= p.N) { return 0.0; }
  if ((p.flags & 2u) != 0u) { return B[base + c * p.ldb + k]; }
  return B[base + k * p.ldb + c];
}

@compute @workgroup_size(16, 16)
fn matmul(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wg.y * TM;
  let col0 = wg.x * TN;
  if ((p.flags & 16u) != 0u && col0 > row0 + TM - 1u) { return; }  // whole workgroup: uniform
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let trans_a = (p.flags & 1u) != 0u;
  let trans_b = (p.flags & 2u) != 0u;
  var k_begin = 0u;
  var k_end = p.K;
  if ((p.flags & 32u) != 0u) { k_end = min(p.K, row0 + TM); }
  if ((p.flags & 64u) != 0u) { k_begin = row0; }
  let t = lid.y * 16u + lid.x;
  var acc: array<f32, 16>;
  for (var k0 = k_begin; k0 < k_end; k0 += TK) {
    // 256 invocations stage 1024 elements of each tile, 4 each; neighbours read neighbouring
    // addresses of the stored layout, so global loads coalesce with or without a transpose.
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      var m = e % TM; var kk = e / TM;
      if (!trans_a) { kk = e % TK; m = e / TK; }
      As[kk * TM + m] = load_a(a_base, row0 + m, k0 + kk);
      var n = e % TN; var kb = e / TN;
      if (trans_b) { kb = e % TK; n = e / TK; }
      Bs[kb * TN + n] = load_b(b_base, k0 + kb, col0 + n);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        a[i] = As[kk * TM + lid.y * 4u + i];
        b[i] = Bs[kk * TN + lid.x * 4u + i];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) {
          acc[i * 4u + j] = fma(a[i], b[j], acc[i * 4u + j]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + lid.y * 4u + i;
    if (r >= p.M) { continue; }
    for (var j = 0u; j < 4u; j++) {
      let c = col0 + lid.x * 4u + j;
      if (c >= p.N) { continue; }
      var v = p.alpha * acc[i * 4u + j];
      if ((p.flags & 8u) != 0u) { v += bias[p.bias_off + c]; }
      let at = c_base + r * p.ldc + c;
      if ((p.flags & 4u) != 0u) { C[at] += v; } else { C[at] = v; }
    }
  }
}

// matmul_big: the same contract on 128 x 128 tiles of C, each invocation owning 8 x 8 outputs
// strided by 16 (rows lid.y + 16 i, columns lid.x + 16 j: neighbours read neighbouring workgroup
// memory words and write neighbouring C entries). Twice the multiply-adds per workgroup-memory
// read of `matmul`, for large products; the causal flags act on these 128 x 128 tiles.
// Tiles of 16 x 128 floats take 16 KiB of workgroup memory, WebGPU's guaranteed minimum.
// Grid: (ceil(N / 128), ceil(M / 128), batches).
const BM = 128u;
const BN = 128u;
const BK = 16u;
var<workgroup> Ab: array<f32, 2048>;  // [BK][BM]
var<workgroup> Bb: array<f32, 2048>;  // [BK][BN]

@compute @workgroup_size(16, 16)
fn matmul_big(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wg.y * BM;
  let col0 = wg.x * BN;
  if ((p.flags & 16u) != 0u && col0 > row0 + BM - 1u) { return; }
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let trans_a = (p.flags & 1u) != 0u;
  let trans_b = (p.flags & 2u) != 0u;
  var k_begin = 0u;
  var k_end = p.K;
  if ((p.flags & 32u) != 0u) { k_end = min(p.K, row0 + BM); }
  if ((p.flags & 64u) != 0u) { k_begin = row0; }
  let t = lid.y * 16u + lid.x;
  var acc: array<f32, 64>;
  for (var k0 = k_begin; k0 < k_end; k0 += BK) {
    for (var i = 0u; i < 8u; i++) {
      let e = t + i * 256u;
      var m = e % BM; var kk = e / BM;
      if (!trans_a) { kk = e % BK; m = e / BK; }
      Ab[kk * BM + m] = load_a(a_base, row0 + m, k0 + kk);
      var n = e % BN; var kb = e / BN;
      if (trans_b) { kb = e % BK; n = e / BK; }
      Bb[kb * BN + n] = load_b(b_base, k0 + kb, col0 + n);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var a: array<f32, 8>;
      var b: array<f32, 8>;
      for (var i = 0u; i < 8u; i++) {
        a[i] = Ab[kk * BM + lid.y + 16u * i];
        b[i] = Bb[kk * BN + lid.x + 16u * i];
      }
      for (var i = 0u; i < 8u; i++) {
        for (var j = 0u; j < 8u; j++) {
          acc[i * 8u + j] = fma(a[i], b[j], acc[i * 8u + j]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 8u; i++) {
    let r = row0 + lid.y + 16u * i;
    if (r >= p.M) { continue; }
    for (var j = 0u; j < 8u; j++) {
      let c = col0 + lid.x + 16u * j;
      if (c >= p.N) { continue; }
      var v = p.alpha * acc[i * 8u + j];
      if ((p.flags & 8u) != 0u) { v += bias[p.bias_off + c]; }
      let at = c_base + r * p.ldc + c;
      if ((p.flags & 4u) != 0u) { C[at] += v; } else { C[at] = v; }
    }
  }
}
