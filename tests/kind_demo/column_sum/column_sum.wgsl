// The column_sum family (tests/kind_demo's kernel, kept in the kind's own package): the sum of n
// f32 values on the GPU, in two levels.
//   partial_sums: part[g] = sum of x[g * WG .. g * WG + WG - 1] (those below p.n), one workgroup
//                 of WG a group g; the tree order of common.wgsl's wg_sum, so the same sum every
//                 run. The host adds the few parts up (column_sum.total).
// Groups fold into a grid of two dimensions (one holds at most 65535 workgroups):
// g = wg.x + wg.y * nwg.x.

const WG = 256u;
#include wg_reduce

// -- partial_sums: 0 params, 1 x (n), 2 part (ceil(n / WG))
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> part: array<f32>;

@compute @workgroup_size(256)
fn partial_sums(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_id) lid: vec3u) {
  let g = wg.x + wg.y * nwg.x;
  let i = g * WG + lid.x;
  var v = 0.0;
  if (i < p.n) { v = x[i]; }
  let s = wg_sum(v, lid.x);  // every invocation reaches the barriers: no early return above
  if (lid.x == 0u && g * WG < p.n) { part[g] = s; }
}
