// Causal softmax of attention scores, in place, and its backward. The scores S = q k^T / sqrt(d)
// and the products with v come from transformer_matmul (batched over sequences and heads).
//   softmax_causal:          P[i, j] = exp(S[i, j] - max) / sum over j <= i; 0 for j > i
//   softmax_causal_backward: dS[i, j] = scale * P[i, j] * (dP[i, j] - sum_k P[i, k] dP[i, k]);
//                            0 for j > i (scale = 1/sqrt(d), the factor the forward folded in)
// Layout: (batch * heads * T) rows of T, row r holds query i = r % T. Every entry of every row is
// written (zeros above the diagonal), so tiles the matmul skipped hold no stale values after this.
// One workgroup of 64 a row; rows = wg.x + wg.y * nwg.x.

const WG = 64u;
#include wg_reduce

@group(0) @binding(0) var<uniform> p: Params;

// -- forward: 0 params, 1 S -> P (rows, T), in place
@group(0) @binding(1) var<storage, read_write> S: array<f32>;

@compute @workgroup_size(64)
fn softmax_causal(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                  @builtin(local_invocation_id) lid3: vec3u) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let i = row % p.T;
  let base = row * p.T;
  var m = -3.0e38;
  for (var j = lid; j <= i; j += WG) { m = max(m, S[base + j]); }
  m = wg_max(m, lid);
  var s = 0.0;
  for (var j = lid; j <= i; j += WG) { s += exp(S[base + j] - m); }
  let inv = 1.0 / wg_sum(s, lid);
  for (var j = lid; j < p.T; j += WG) {
    var v = 0.0;
    if (j <= i) { v = exp(S[base + j] - m) * inv; }
    S[base + j] = v;
  }
}

// -- backward: 0 params, 1 P (rows, T), 2 dP -> dS (rows, T), in place
@group(0) @binding(1) var<storage, read> bP: array<f32>;
@group(0) @binding(2) var<storage, read_write> bdP: array<f32>;

@compute @workgroup_size(64)
fn softmax_causal_backward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                           @builtin(local_invocation_id) lid3: vec3u) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let i = row % p.T;
  let base = row * p.T;
  var d = 0.0;
  for (var j = lid; j <= i; j += WG) { d += bP[base + j] * bdP[base + j]; }
  d = wg_sum(d, lid);
  for (var j = lid; j < p.T; j += WG) {
    var v = 0.0;
    if (j <= i) { v = p.scale * bP[base + j] * (bdP[base + j] - d); }
    bdP[base + j] = v;
  }
}
