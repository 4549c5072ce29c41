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
// Their entry points are written out when the shader is loaded, after this file, by
// py_core/kernels/transformer_matmul/wgsl.py (TILES in the family's description); what they share
// is here.
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

#include epilogue

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
  for (var j = 0u; j < 4u; j++) { store1(c_base, r, c + j, acc[j]); }
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
