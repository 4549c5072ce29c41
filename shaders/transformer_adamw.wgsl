// The optimizer end: the global gradient norm and AdamW over the flat parameter buffer.
//   reduce_sum: out[out_off + g] = sum over group g's elements of x (or x * x when flags bit 0);
//               run once over the gradients (groups of `per_group`), once over the group sums,
//               so the squared norm lands in state[0] in a fixed order (deterministic)
//   adamw:      torch.optim.AdamW after torch.nn.utils.clip_grad_norm_, element by element:
//               g *= gscale (undoing a loss scale), then g *= min(1, clip / (norm + 1e-6)), the
//               norm of the unscaled gradients; p *= 1 - lr * wd (first n_decay elements: the
//               2-D weights); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//               p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// The schedule uniform (written by Python each step) carries lr / (1 - b1^t), sqrt(1 - b2^t) and
// 1 - lr * wd, so no power is computed on the GPU.


var<workgroup> red: array<f32, 256>;

// -- reduce_sum: 0 params, 1 x, 2 out. Workgroups of 256; group = wg.x + wg.y * nwg.x.
@group(0) @binding(0) var<uniform> pr: Reduce;
@group(0) @binding(1) var<storage, read> rx: array<f32>;
@group(0) @binding(2) var<storage, read_write> rout: array<f32>;

@compute @workgroup_size(256)
fn reduce_sum(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_id) lid3: vec3u) {
  let lid = lid3.x;
  let g = wg.x + wg.y * nwg.x;
  let i0 = g * pr.per_group;
  if (i0 >= pr.n) { return; }
  let i1 = min(pr.n, i0 + pr.per_group);
  let square = (pr.flags & SQUARE) != 0u;
  var s = 0.0;
  for (var i = i0 + lid; i < i1; i += 256u) {
    let x = rx[i];
    if (square) { s += x * x; } else { s += x; }
  }
  red[lid] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid < k) { red[lid] += red[lid + k]; }
    workgroupBarrier();
  }
  if (lid == 0u) { rout[pr.out_off + g] = red[0]; }
}

// -- adamw: 0 params, 1 schedule (uniform), 2 state (state[0] = squared gradient norm),
//    3 parameters, 4 gradients, 5 first moments, 6 second moments (all n)
@group(0) @binding(0) var<uniform> pa: Adam;
@group(0) @binding(1) var<uniform> sched: Sched;
@group(0) @binding(2) var<storage, read> state: array<f32>;
@group(0) @binding(3) var<storage, read_write> param: array<f32>;
@group(0) @binding(4) var<storage, read> grad: array<f32>;
@group(0) @binding(5) var<storage, read_write> m1: array<f32>;
@group(0) @binding(6) var<storage, read_write> m2: array<f32>;

@compute @workgroup_size(256)
fn adamw(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_id) lid: vec3u) {
  let i = (wg.x + wg.y * nwg.x) * 256u + lid.x;
  if (i >= pa.n) { return; }
  var coef = 1.0;
  if (pa.clip > 0.0) { coef = min(1.0, pa.clip / (sqrt(state[0]) * pa.gscale + 1e-6)); }
  let g = grad[i] * pa.gscale * coef;
  var w = param[i];
  if (i < pa.n_decay) { w *= sched.decay; }
  let m = pa.beta1 * m1[i] + (1.0 - pa.beta1) * g;
  let v = pa.beta2 * m2[i] + (1.0 - pa.beta2) * g * g;
  m1[i] = m;
  m2[i] = v;
  param[i] = w - sched.step_size * m / (sqrt(v) / sched.bc2_sqrt + pa.eps);
}
