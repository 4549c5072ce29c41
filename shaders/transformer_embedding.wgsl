// The model's input end: drawing a batch, token + position embeddings, and their gradients.
//   get_batch:          idx[b, t] = tokens[o + t], tgt[b, t] = tokens[o + t + 1], with the offset
//                       o = hash32(key, step * B + b) % n_windows: the same counter-based hash as
//                       py_core/rng.py, so PyTorch draws the very same batches
//   embed_forward:      x[m, c] = wte[idx[m], c] + wpe[m % T, c]
//   embed_backward_wte: parts of dwte[v, c] = sum of dx[m, c] over positions m with idx[m] == v,
//                       one a chunk of positions: a gather per (vocabulary row, channel, chunk) in
//                       position order, so no float atomics and the same sum every run
//   embed_backward_wpe: dwpe[t, c] = sum over sequences b of dx[b * T + t, c]


#include hash32

// -- get_batch: 0 params, 1 schedule (uniform: step), 2 tokens (u32), 3 idx (B*T u32), 4 tgt
@group(0) @binding(0) var<uniform> pb: Batch;
@group(0) @binding(1) var<uniform> sched: Sched;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;
@group(0) @binding(3) var<storage, read_write> bidx: array<u32>;
@group(0) @binding(4) var<storage, read_write> btgt: array<u32>;

@compute @workgroup_size(64)
fn get_batch(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i >= pb.B * pb.T) { return; }
  let b = i / pb.T;
  let t = i % pb.T;
  let o = hash32(pb.key, sched.step * pb.B + b) % pb.n_windows;
  bidx[i] = tokens[o + t];
  btgt[i] = tokens[o + t + 1u];
}

// -- embed_forward: 0 params, 1 idx (M u32), 2 weights (parameter buffer), 3 x (M, C)
@group(0) @binding(0) var<uniform> pe: Embed;
@group(0) @binding(1) var<storage, read> eidx: array<u32>;
@group(0) @binding(2) var<storage, read> ew: array<f32>;
@group(0) @binding(3) var<storage, read_write> ex: array<f32>;

@compute @workgroup_size(256)
fn embed_forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_id) lid: vec3u) {
  let i = (wg.x + wg.y * nwg.x) * 256u + lid.x;
  if (i >= pe.M * pe.C) { return; }
  let m = i / pe.C;
  let c = i % pe.C;
  ex[i] = ew[pe.wte_off + eidx[m] * pe.C + c] + ew[pe.wpe_off + (m % pe.T) * pe.C + c];
}

// -- embed_backward_wte: 0 params (EmbedPart), 1 idx (M u32), 2 dx (M, C), 3 out (parts)
// Grid: (ceil(C / 64), V, ceil(M / chunk)); workgroup (c block, v, z) scans positions
// z * chunk .. (z + 1) * chunk - 1, 64 at a time, and writes its part of dwte[v, c] to
// out[out_off + (z * V + v) * C + c]; a column sum over the parts adds them up.
@group(0) @binding(0) var<uniform> pw: EmbedPart;
@group(0) @binding(1) var<storage, read> widx: array<u32>;
@group(0) @binding(2) var<storage, read> wdx: array<f32>;
@group(0) @binding(3) var<storage, read_write> wout: array<f32>;
var<workgroup> tok: array<u32, 64>;

@compute @workgroup_size(64)
fn embed_backward_wte(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let lid = lid3.x;
  let v = wg.y;
  let c = wg.x * 64u + lid;
  let m_begin = wg.z * pw.chunk;
  let m_end = min(pw.M, m_begin + pw.chunk);
  var acc = 0.0;
  for (var m0 = m_begin; m0 < m_end; m0 += 64u) {
    var t = 0xffffffffu;
    if (m0 + lid < m_end) { t = widx[m0 + lid]; }
    tok[lid] = t;
    workgroupBarrier();
    if (c < pw.C) {
      for (var j = 0u; j < 64u; j++) {
        if (tok[j] == v) { acc += wdx[(m0 + j) * pw.C + c]; }
      }
    }
    workgroupBarrier();
  }
  if (c < pw.C) { wout[pw.out_off + (wg.z * pw.V + v) * pw.C + c] = acc; }
}

// -- embed_backward_wpe: 0 params, 1 dx (M, C), 2 grads. One invocation per (t, c).
@group(0) @binding(1) var<storage, read> pdx: array<f32>;
@group(0) @binding(2) var<storage, read_write> pgrad: array<f32>;

@compute @workgroup_size(256)
fn embed_backward_wpe(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                      @builtin(local_invocation_id) lid: vec3u) {
  let i = (wg.x + wg.y * nwg.x) * 256u + lid.x;
  if (i >= pe.T * pe.C) { return; }
  let t = i / pe.C;
  let c = i % pe.C;
  var s = 0.0;
  for (var m = t; m < pe.M; m += pe.T) { s += pdx[m * pe.C + c]; }
  pgrad[pe.wpe_off + i] = s;
}
