// WGSL helpers shared by kernel families. A family's WGSL pulls a section in with a line
// `#include NAME` (py_core/kernels/family.py expands it when the shader is loaded).

// == wg_reduce
// Sum and max of v over a workgroup of WG invocations (the family defines WG), returned to every
// invocation; a fixed tree order, so the result is the same every run.
var<workgroup> red: array<f32, WG>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

fn wg_max(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

// == mix32
// lowbias32 (Chris Wellons' integer hash): a bijection of u32 with good avalanche. The same in
// py_core/kernels/transformer_embedding (mix32), so Python and PyTorch draw the same numbers.
fn mix32(x0: u32) -> u32 {
  var x = x0;
  x ^= x >> 16u;
  x *= 0x7feb352du;
  x ^= x >> 15u;
  x *= 0x846ca68bu;
  x ^= x >> 16u;
  return x;
}

// == hash32
// A counter-based hash: the counter-th u32 of the stream `key`.
#include mix32
fn hash32(key: u32, counter: u32) -> u32 { return mix32(mix32(key ^ counter)); }
