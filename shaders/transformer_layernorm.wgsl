// LayerNorm over the last dimension of a (rows, C) activation, as torch.nn.LayerNorm(C), eps 1e-5.
//   layernorm_forward:  y = xhat * w + b, xhat = (x - mean) * rstd; keeps mean and rstd per row
//   layernorm_backward: dx (+)= rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)), g = dy * w
//   layernorm_param_grads: per chunk of rows, partial sums of dy * xhat (for w) and dy (for b);
//     transformer_elementwise.colsum adds the chunks up (two passes keep the sum deterministic)
// w and b sit side by side in the parameter buffer: w at w_off, b at w_off + C.
// stats: (rows, 2) = mean, rstd. Row kernels: one workgroup of 64 a row, rows = wg.x + wg.y * nwg.x.

const WG = 64u;
#include wg_reduce

// -- forward: 0 params, 1 x (rows, C), 2 weights (parameter buffer), 3 y (rows, C), 4 stats
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> fx: array<f32>;
@group(0) @binding(2) var<storage, read> fw: array<f32>;
@group(0) @binding(3) var<storage, read_write> fy: array<f32>;
@group(0) @binding(4) var<storage, read_write> fstats: array<f32>;

@compute @workgroup_size(64)
fn layernorm_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                     @builtin(local_invocation_id) lid3: vec3u) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let C = p.C;
  let base = row * C;
  var s = 0.0;
  for (var c = lid; c < C; c += WG) { s += fx[base + c]; }
  let mean = wg_sum(s, lid) / f32(C);
  var v = 0.0;
  for (var c = lid; c < C; c += WG) { let d = fx[base + c] - mean; v += d * d; }
  let rstd = 1.0 / sqrt(wg_sum(v, lid) / f32(C) + p.eps);
  for (var c = lid; c < C; c += WG) {
    fy[base + c] = (fx[base + c] - mean) * rstd * fw[p.w_off + c] + fw[p.w_off + C + c];
  }
  if (lid == 0u) { fstats[2u * row] = mean; fstats[2u * row + 1u] = rstd; }
}

// -- backward: 0 params, 1 x, 2 weights, 3 stats, 4 dy, 5 dx (flags bit 0: accumulate into dx)
@group(0) @binding(1) var<storage, read> bx: array<f32>;
@group(0) @binding(2) var<storage, read> bw: array<f32>;
@group(0) @binding(3) var<storage, read> bstats: array<f32>;
@group(0) @binding(4) var<storage, read> bdy: array<f32>;
@group(0) @binding(5) var<storage, read_write> bdx: array<f32>;

@compute @workgroup_size(64)
fn layernorm_backward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                      @builtin(local_invocation_id) lid3: vec3u) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let C = p.C;
  let base = row * C;
  let mean = bstats[2u * row];
  let rstd = bstats[2u * row + 1u];
  var sg = 0.0;
  var sgx = 0.0;
  for (var c = lid; c < C; c += WG) {
    let g = bdy[base + c] * bw[p.w_off + c];
    sg += g;
    sgx += g * (bx[base + c] - mean) * rstd;
  }
  let mg = wg_sum(sg, lid) / f32(C);
  let mgx = wg_sum(sgx, lid) / f32(C);
  let acc = (p.flags & ACCUMULATE) != 0u;
  for (var c = lid; c < C; c += WG) {
    let g = bdy[base + c] * bw[p.w_off + c];
    let xhat = (bx[base + c] - mean) * rstd;
    let d = rstd * (g - mg - xhat * mgx);
    if (acc) { bdx[base + c] += d; } else { bdx[base + c] = d; }
  }
}

// -- param grads: 0 params, 1 x, 2 stats, 3 dy, 4 partial (chunks, 2C): [dw | db] per chunk
// Grid: (ceil(C / 64), chunks); chunk = rows chunk*p.chunk .. (chunk+1)*p.chunk - 1. Workgroups of
// 256: 64 columns x 4 lanes, lane l adding rows l, l + 4, ...; the 4 lanes' sums then added in
// a fixed order (deterministic).
@group(0) @binding(1) var<storage, read> gx: array<f32>;
@group(0) @binding(2) var<storage, read> gstats: array<f32>;
@group(0) @binding(3) var<storage, read> gdy: array<f32>;
@group(0) @binding(4) var<storage, read_write> gpart: array<f32>;
var<workgroup> lane_dw: array<f32, 256>;
var<workgroup> lane_db: array<f32, 256>;

@compute @workgroup_size(256)
fn layernorm_param_grads(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let C = p.C;
  let col = lid3.x % 64u;
  let lane = lid3.x / 64u;
  let c = wg.x * WG + col;
  let r0 = wg.y * p.chunk;
  let r1 = min(p.rows, r0 + p.chunk);
  var dw = 0.0;
  var db = 0.0;
  if (c < C) {
    for (var r = r0 + lane; r < r1; r += 4u) {
      let dy = gdy[r * C + c];
      dw += dy * (gx[r * C + c] - gstats[2u * r]) * gstats[2u * r + 1u];
      db += dy;
    }
  }
  lane_dw[lid3.x] = dw;
  lane_db[lid3.x] = db;
  workgroupBarrier();
  if (lane == 0u && c < C) {
    gpart[wg.y * 2u * C + c] = (lane_dw[col] + lane_dw[col + 64u]) + (lane_dw[col + 128u] + lane_dw[col + 192u]);
    gpart[wg.y * 2u * C + C + c] = (lane_db[col] + lane_db[col + 64u]) + (lane_db[col + 128u] + lane_db[col + 192u]);
  }
}
