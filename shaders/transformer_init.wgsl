// Initial weights on the GPU: normal draws from an integer hash and a quantile table, the same
// bits as py_core/rng.py computes in Python (normals_fixed; see there for the method).
//   init_normal: out[offset + i] = f32(z(hash32(key, i))) * scale, i < n
// Integer arithmetic up to z; f32(z) is exact (|z| < 2^23) and the one f32 multiply is correctly
// rounded, so no fused or reordered float operation can change a bit.
// Bindings: 0 params (uniform), 1 table (u32, 7937 tail quantiles in units of 2^-20), 2 out (f32).
// Workgroups of 256; i = (wg.x + wg.y * nwg.x) * 256 + lid.

@group(0) @binding(0) var<uniform> p: Init;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

#include mix32

fn fixed_normal(u: u32) -> i32 {
  let r = max(u & 0x7fffffffu, 1u);
  let octave = firstLeadingBit(r);
  var j = 0u;
  var f = 0u;
  if (octave >= 8u) {
    let b = octave - 8u;
    j = (r >> b) & 255u;
    let rem = r & ((1u << b) - 1u);
    if (b >= 16u) { f = rem >> (b - 16u); } else { f = rem << (16u - b); }
  } else {
    j = (r << (8u - octave)) & 255u;
  }
  let i = octave * 256u + j;
  let z = i32(table[i] - (((table[i] - table[i + 1u]) * f) >> 16u));
  if ((u >> 31u) != 0u) { return -z; }
  return z;
}

@compute @workgroup_size(256)
fn init_normal(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let i = (wg.x + wg.y * nwg.x) * 256u + lid.x;
  if (i >= p.n) { return; }
  out[p.offset + i] = f32(fixed_normal(mix32(mix32(p.key ^ i)))) * p.scale;
}
