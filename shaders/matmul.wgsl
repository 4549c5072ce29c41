// Tiled f32 matrix multiply: C = alpha * op(A) * op(B), or C += ... when ACCUMULATE.
//   op(A) is M x K: A is stored M x K, or K x M when TRANS_A (flags bit 0)
//   op(B) is K x N: B is stored K x N, or N x K when TRANS_B (flags bit 1)
//   ACCUMULATE (flags bit 2): add into C instead of overwriting it
// Bindings: 0 params (uniform), 1 A (read), 2 B (read), 3 C (M x N, read_write). Row-major.
// Grid: (ceil(N / 64), ceil(M / 64), 1) workgroups of 16 x 16; each invocation owns a 4 x 4 block.
// Tiles of 64 x 16 and 16 x 64 floats take 8 KiB of workgroup memory, half the WebGPU minimum.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

const TM = 64u;
const TN = 64u;
const TK = 16u;
var<workgroup> As: array<f32, 1024>;  // [TK][TM]
var<workgroup> Bs: array<f32, 1024>;  // [TK][TN]

fn load_a(r: u32, k: u32) -> f32 {
  if (r >= p.M || k >= p.K) { return 0.0; }
  if ((p.flags & TRANS_A) != 0u) { return A[k * p.M + r]; }
  return A[r * p.K + k];
}

fn load_b(k: u32, c: u32) -> f32 {
  if (k >= p.K || c >= p.N) { return 0.0; }
  if ((p.flags & TRANS_B) != 0u) { return B[c * p.K + k]; }
  return B[k * p.N + c];
}

@compute @workgroup_size(16, 16)
fn matmul(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wg.y * TM;
  let col0 = wg.x * TN;
  let t = lid.y * 16u + lid.x;
  let trans_a = (p.flags & TRANS_A) != 0u;
  let trans_b = (p.flags & TRANS_B) != 0u;
  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    // 256 invocations stage 1024 elements of each tile, 4 each. Neighbouring invocations read
    // neighbouring addresses of the stored layout, so global loads coalesce either way.
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      var m = e % TM; var kk = e / TM;
      if (!trans_a) { kk = e % TK; m = e / TK; }
      As[kk * TM + m] = load_a(row0 + m, k0 + kk);
      var n = e % TN; var kb = e / TN;
      if (trans_b) { kb = e % TK; n = e / TK; }
      Bs[kb * TN + n] = load_b(k0 + kb, col0 + n);
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
      let v = p.alpha * acc[i * 4u + j];
      if ((p.flags & ACCUMULATE) != 0u) { C[r * p.N + c] += v; } else { C[r * p.N + c] = v; }
    }
  }
}
