// The grown trees: finalize (prediction arrays), importance, out-of-bag, predict.

// == tree_predict
#include tree_grid
#include tree_f64
#include tree_x
// ---- finalize: the batch's trees in the form prediction reads ---------------------------------
// 1 nodes · 2 meta · 3 edges (NB, 3) f32 · 4 fmeta · 5 ptree (N, 3) · 6 pval (N, K) · 7 offs
// (T_all): the chunk the batch's trees go to, tree `tree` from its node offs[tree] on.
// A leaf: feature and left child LEAF, threshold 0. Threshold: the largest f32 at or below the
// midpoint of the left bin's largest value and the right bin's smallest (mid_down: every f32 goes
// the side it goes in scikit-learn's tree, whose f64 midpoint it compares f32 X with), kept within
// the thresholds that give the same partition. Values: mean of y, or class fractions
// (weighted by bootstrap counts). Thread per (tree of the batch, node).
@group(0) @binding(1) var<storage, read> fi_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> fi_meta: array<u32>;
@group(0) @binding(3) var<storage, read> fi_edges: array<f32>;
@group(0) @binding(4) var<storage, read> fi_fmeta: array<u32>;
@group(0) @binding(5) var<storage, read_write> fi_tree: array<u32>;
@group(0) @binding(6) var<storage, read_write> fi_val: array<f32>;
@group(0) @binding(7) var<storage, read> fi_offs: array<u32>;

@compute @workgroup_size(256)
fn finalize(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.NC) { return; }
  let tree = p.tree0 + i / p.NC;
  let node = i % p.NC;
  if (node >= fi_meta[2u * tree]) { return; }
  let rec = i * (4u + p.C);
  let out = fi_offs[tree] + node;
  let f = fi_nodes[rec];
  fi_tree[3u * out] = f;
  fi_tree[3u * out + 1u] = 0u;
  fi_tree[3u * out + 2u] = LEAF;
  if (f != LEAF) {
    let g = fi_fmeta[2u * f] + fi_nodes[rec + 1u];
    let g2 = fi_fmeta[2u * f] + fi_nodes[rec + 2u];
    let mid = mid_down(fi_edges[3u * g + 2u], fi_edges[3u * g2 + 1u]);
    let thr = clamp(mid, fi_edges[3u * g], fi_edges[3u * (g2 - 1u)]);
    fi_tree[3u * out + 1u] = bitcast<u32>(thr);
    fi_tree[3u * out + 2u] = fi_nodes[rec + 3u];
  }
  if (p.crit == MSE) {
    let v = div_rn(i64_to_f32(fi_nodes[rec + 4u], fi_nodes[rec + 5u]), fi_nodes[rec + 6u]);
    fi_val[out] = v * p.inv_scale + p.mid;  // inv_scale a power of two: no rounding before the add
  } else {
    var w = 0u;
    for (var k = 0u; k < p.K; k++) { w += fi_nodes[rec + 4u + k]; }
    for (var k = 0u; k < p.K; k++) { fi_val[out * p.K + k] = div_rn(f32(fi_nodes[rec + 4u + k]), w); }
  }
}

// ---- importance: the impurity decrease of each feature's splits, per tree -----------------------
// 1 nodes · 2 meta · 3 imp (T_all, G, F) f32 out: the sum over nodes [g * IMP_CHUNK, (g + 1) *
// IMP_CHUNK) of the tree split on f. Workgroup per (tree of the batch, g, 256 features). A
// split's decrease of weighted impurity, in a form free of cancellation (w = wl + wr):
//   squared error, gini   wl wr / w * sum over channels (left/wl - right/wr)^2
//                          (the sums of w y, or the class weights)
//   entropy               sum_k cl_k ln(cl_k w / (c_k wl)) + cr_k ln(cr_k w / (c_k wr))
// in units that cancel when a tree's decreases are normalised (fixed-point y for regression).

@group(0) @binding(1) var<storage, read> im_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> im_meta: array<u32>;
@group(0) @binding(3) var<storage, read_write> im_out: array<f32>;

fn im_sum(rec: u32) -> f32 { return i64_to_f32(im_nodes[rec + 4u], im_nodes[rec + 5u]); }

fn decrease(l: u32, r: u32) -> f32 {
  if (p.crit == MSE) {
    let wl = f32(im_nodes[l + 6u]);
    let wr = f32(im_nodes[r + 6u]);
    let d = im_sum(l) / wl - im_sum(r) / wr;
    return wl * wr / (wl + wr) * (d * d);
  }
  var wl = 0u;
  var wr = 0u;
  for (var k = 0u; k < p.K; k++) {
    wl += im_nodes[l + 4u + k];
    wr += im_nodes[r + 4u + k];
  }
  let fl = f32(wl);
  let fr = f32(wr);
  let fw = f32(wl + wr);
  var acc = 0.0;
  for (var k = 0u; k < p.K; k++) {
    let cl = f32(im_nodes[l + 4u + k]);
    let cr = f32(im_nodes[r + 4u + k]);
    if (p.crit == GINI) {
      let d = cl / fl - cr / fr;
      acc = acc + d * d;
    } else {
      let c = cl + cr;
      if (cl > 0.0) { acc = acc + cl * log(cl * fw / (c * fl)); }
      if (cr > 0.0) { acc = acc + cr * log(cr * fw / (c * fr)); }
    }
  }
  if (p.crit == GINI) { return fl * fr / fw * acc; }
  return acc;
}

var<workgroup> im_f: array<u32, 256>;
var<workgroup> im_d: array<f32, 256>;

// The chunk's nodes 256 at a time: each thread the decrease of one node (its feature in im_f,
// LEAF for a leaf), then each thread adds those of its feature in node order, as one thread
// walking the chunk would (the same f32 sums), without a thread's 2048 dependent reads.
@compute @workgroup_size(256)
fn importance(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let G = (p.NC + IMP_CHUNK - 1u) / IMP_CHUNK;
  let fchunks = (p.F + 255u) / 256u;
  let id = linear(wid, nwg);
  let t = id / (G * fchunks);
  if (t >= p.T) { return; }
  let g = id / fchunks % G;
  let f = (id % fchunks) * 256u + lid;
  let tree = p.tree0 + t;
  let NW = 4u + p.C;
  let end = min(im_meta[2u * tree], (g + 1u) * IMP_CHUNK);
  var acc = 0.0;
  for (var n0 = g * IMP_CHUNK; n0 < end; n0 += 256u) {
    let node = n0 + lid;
    im_f[lid] = LEAF;
    if (node < end) {
      let rec = (t * p.NC + node) * NW;
      let split = im_nodes[rec];
      if (split != LEAF) {
        let l = (t * p.NC + im_nodes[rec + 3u]) * NW;
        im_f[lid] = split;
        im_d[lid] = decrease(l, l + NW);
      }
    }
    workgroupBarrier();
    for (var j = 0u; j < min(256u, end - n0); j++) {
      if (im_f[j] == f) { acc = acc + im_d[j]; }
    }
    workgroupBarrier();
  }
  if (f < p.F) { im_out[(tree * G + g) * p.F + f] = acc; }
}

// ---- predict / oob: walk every tree for each row ----------------------------------------------
// Both walk the trees [tree0, tree0 + T) of one chunk of prediction arrays.
// predict: 1 X · 2 ptree · 3 pval · 4 offs · 5 out (n, K, 2): the mean over T_all trees, f32
//          summed in tree order across the chunks, one dispatch each, in order: but for the last,
//          a chunk leaves the running sums' bits in the first word of each pair, the next (tree0
//          > 0) goes on from them; the last writes the mean as the f64 of the same value (lo, hi).
// oob:     1 X · 2 ptree · 3 pval · 4 offs · 5 state (T, n) · 6 oob (n, K + 1) f32 += the
//          batch's trees that did not draw the row, and their count.
@group(0) @binding(2) var<storage, read> pr_tree: array<u32>;
@group(0) @binding(3) var<storage, read> pr_val: array<f32>;
@group(0) @binding(4) var<storage, read> pr_offs: array<u32>;
@group(0) @binding(5) var<storage, read_write> pr_out: array<u32>;
@group(0) @binding(5) var<storage, read> oob_state: array<u32>;
@group(0) @binding(6) var<storage, read_write> oob_out: array<f32>;

fn leaf_of(tree: u32, r: u32) -> u32 {
  let base = pr_offs[tree];
  var node = 0u;
  loop {
    let e = 3u * (base + node);
    let f = pr_tree[e];
    if (f == LEAF) { break; }
    let left = pr_tree[e + 2u];
    node = select(left + 1u, left, x_at(r, f) <= bitcast<f32>(pr_tree[e + 1u]));
  }
  return base + node;
}

// The f64 of an f32, exactly (subnormals normalised).
fn f32_to_f64(x: f32) -> vec2u {
  let b = bitcast<u32>(x);
  let sign = b & 0x80000000u;
  let E = (b >> 23u) & 0xFFu;
  var m = b & 0x7FFFFFu;
  if (E == 0xFFu) { return vec2u(m << 29u, sign | 0x7FF00000u | (m >> 3u)); }
  var e = i32(E) + 896;  // 1023 - 127
  if (E == 0u) {
    if (m == 0u) { return vec2u(0u, sign); }
    let sh = 23u - firstLeadingBit(m);
    m = (m << sh) & 0x7FFFFFu;
    e = 897 - i32(sh);
  }
  return vec2u(m << 29u, sign | (u32(e) << 20u) | (m >> 3u));
}

@compute @workgroup_size(256)
fn predict(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lid: u32) {
  let r = linear(wid, nwg) * 256u + lid;
  if (r >= p.n) { return; }
  var acc: array<f32, MAXK>;
  if (p.tree0 > 0u) {  // the sums of the chunks before this one
    for (var k = 0u; k < p.K; k++) { acc[k] = bitcast<f32>(pr_out[2u * (r * p.K + k)]); }
  }
  for (var t = 0u; t < p.T; t++) {
    let leaf = leaf_of(p.tree0 + t, r);
    for (var k = 0u; k < p.K; k++) { acc[k] += pr_val[leaf * p.K + k]; }
  }
  if (p.tree0 + p.T < p.T_all) {
    for (var k = 0u; k < p.K; k++) { pr_out[2u * (r * p.K + k)] = bitcast<u32>(acc[k]); }
    return;
  }
  for (var k = 0u; k < p.K; k++) {
    let v = f32_to_f64(div_rn(acc[k], p.T_all));
    pr_out[2u * (r * p.K + k)] = v.x;
    pr_out[2u * (r * p.K + k) + 1u] = v.y;
  }
}

@compute @workgroup_size(256)
fn oob(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
       @builtin(local_invocation_index) lid: u32) {
  let r = linear(wid, nwg) * 256u + lid;
  if (r >= p.n) { return; }
  let o = r * (p.K + 1u);
  for (var t = 0u; t < p.T; t++) {
    if ((oob_state[t * p.n + r] & COUNT_MASK) != 0u) { continue; }
    let leaf = leaf_of(p.tree0 + t, r);
    for (var k = 0u; k < p.K; k++) { oob_out[o + k] += pr_val[leaf * p.K + k]; }
    oob_out[o + p.K] += 1.0;
  }
}
