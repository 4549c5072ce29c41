// Cross-entropy of the logits against the targets, its gradient, and the mean loss, on the GPU.
//   cross_entropy: per row, loss = logsumexp(l) - l[target]; in place l <- (softmax(l) - onehot) / rows
//                  (the gradient of the mean loss); losses[row] = loss
//   loss_mean:     hist[slot] = mean of losses (one workgroup, fixed summation order); the slot
//                  comes from the schedule uniform, so the history fills up without a readback
// cross_entropy: one workgroup of 64 a row, rows = wg.x + wg.y * nwg.x.


var<workgroup> red: array<f32, 256>;

fn wg_reduce(v: f32, lid: u32, size: u32, is_max: bool) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = size / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      if (is_max) { red[lid] = max(red[lid], red[lid + s]); } else { red[lid] += red[lid + s]; }
    }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

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
  for (var v = lid; v < V; v += 64u) { m = max(m, L[base + v]); }
  m = wg_reduce(m, lid, 64u, true);
  var s = 0.0;
  for (var v = lid; v < V; v += 64u) { s += exp(L[base + v] - m); }
  s = wg_reduce(s, lid, 64u, false);
  let inv = 1.0 / s;
  for (var v = lid; v < V; v += 64u) {
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

@compute @workgroup_size(256)
fn loss_mean(@builtin(local_invocation_id) lid3: vec3u) {
  let lid = lid3.x;
  var s = 0.0;
  for (var i = lid; i < p.rows; i += 256u) { s += mlosses[i]; }
  s = wg_reduce(s, lid, 256u, false);
  if (lid == 0u) { hist[sched.slot] = s * p.inv_rows; }
}
