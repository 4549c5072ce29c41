// Cross-entropy of the logits against the targets, its gradient, and the mean loss, on the GPU.
//   cross_entropy: per row, loss = logsumexp(l) - l[target]; in place l <- (softmax(l) - onehot) / rows
//                  (the gradient of the mean loss); losses[row] = loss
//   loss_mean:     hist[slot] = mean of losses (one workgroup, fixed summation order); the slot
//                  comes from the schedule uniform, so the history fills up without a readback
// Both: one workgroup of 64 (cross_entropy: a row, rows = wg.x + wg.y * nwg.x; loss_mean: one).

const WG = 64u;
#include wg_reduce

@group(0) @binding(0) var<uniform> p: Params;

// -- cross_entropy: 0 params, 1 logits -> dlogits (rows, V), 2 targets (rows u32), 3 losses (rows)
@group(0) @binding(1) var<storage, read_write> L: array<f32>;
@group(0) @binding(2) var<storage, read> tgt: array<u32>;
@group(0) @binding(3) var<storage, read_write> losses: array<f32>;

@compute @workgroup_size(64)
fn cross_entropy(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_id) lid3: vec3u) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let V = p.V;
  let base = row * V;
  let t = tgt[row];
  let lt = L[base + t];  // read before any invocation overwrites the row
  var m = -3.0e38;
  for (var v = lid; v < V; v += WG) { m = max(m, L[base + v]); }
  m = wg_max(m, lid);
  var s = 0.0;
  for (var v = lid; v < V; v += WG) { s += exp(L[base + v] - m); }
  s = wg_sum(s, lid);
  let inv = 1.0 / s;
  for (var v = lid; v < V; v += WG) {
    var g = exp(L[base + v] - m) * inv;
    if (v == t) { g -= 1.0; }
    L[base + v] = g * p.inv_rows;
  }
  if (lid == 0u) { losses[row] = m + log(s) - lt; }
}

// -- loss_mean: 0 params (rows), 1 schedule (uniform: slot), 2 losses (rows), 3 hist. One workgroup.
@group(0) @binding(1) var<uniform> sched: Sched;
@group(0) @binding(2) var<storage, read> mlosses: array<f32>;
@group(0) @binding(3) var<storage, read_write> hist: array<f32>;

@compute @workgroup_size(64)
fn loss_mean(@builtin(local_invocation_id) lid3: vec3u) {
  let lid = lid3.x;
  var s = 0.0;
  for (var i = lid; i < p.rows; i += WG) { s += mlosses[i]; }
  s = wg_sum(s, lid);
  if (lid == 0u) { hist[sched.slot] = s * p.inv_rows; }
}
