// Elementwise kernels and the deterministic column sum of the transformer.
//   gelu_forward:  y = 0.5 x (1 + tanh(k0 (x + k1 x^3))), GELU's tanh approximation
//                  (torch.nn.GELU(approximate="tanh"); GPT-2 used it, nanoGPT's default is erf)
//   gelu_backward: dy <- dy * gelu'(x), in place
//   colsum:        out[out_off + chunk * cols + c] = sum of in[r * cols + c] over the chunk's rows;
//                  run once with chunks of rows, once more over the chunk sums (bias gradients)
// Elementwise grids: workgroups of 256, i = (wg.x + wg.y * nwg.x) * 256 + lid.

#include gelu

// -- gelu_forward: 0 params, 1 x (n), 2 y (n)
@group(0) @binding(0) var<uniform> pg: Gelu;
@group(0) @binding(1) var<storage, read> gx: array<f32>;
@group(0) @binding(2) var<storage, read_write> gy: array<f32>;

@compute @workgroup_size(256)
fn gelu_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_id) lid: vec3u) {
  let i = (wg.x + wg.y * nwg.x) * 256u + lid.x;
  if (i >= pg.n) { return; }
  gy[i] = gelu(gx[i]);
}

// -- gelu_backward: 0 params, 1 x (n), 2 dy -> dx (n), in place
@group(0) @binding(1) var<storage, read> bx: array<f32>;
@group(0) @binding(2) var<storage, read_write> bdy: array<f32>;

@compute @workgroup_size(256)
fn gelu_backward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_id) lid: vec3u) {
  let i = (wg.x + wg.y * nwg.x) * 256u + lid.x;
  if (i >= pg.n) { return; }
  bdy[i] = bdy[i] * gelu_grad(bx[i]);
}

// -- colsum: 0 params, 1 in (rows, cols), 2 out. Grid (ceil(cols / 64), chunks).
@group(0) @binding(0) var<uniform> pc: Colsum;
@group(0) @binding(1) var<storage, read> cin: array<f32>;
@group(0) @binding(2) var<storage, read_write> cout: array<f32>;

@compute @workgroup_size(64)
fn colsum(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let c = wg.x * 64u + lid.x;
  if (c >= pc.cols) { return; }
  let r0 = wg.y * pc.chunk;
  let r1 = min(pc.rows, r0 + pc.chunk);
  var s = 0.0;
  for (var r = r0; r < r1; r++) { s += cin[r * pc.cols + c]; }
  cout[pc.out_off + wg.y * pc.cols + c] = s;
}
