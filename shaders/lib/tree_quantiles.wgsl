// Sections that bin features by quantiles on the device: each feature's subsample sorted and its
// bins picked there, for the random forest (shaders/forest.wgsl) and gradient boosting
// (shaders/boosting.wgsl). They expect the uniform `p: Params` at binding 0 with fields n, F, xd,
// step and SM, the structs Sort and Bins (py_core/kernels/forest: SORT, BINS), and the sections
// tree_grid, tree_x (x_bits) and tree_f64 (mid_down). References: py_core/kernels/forest
// (sample, sort_pass, thresholds), whichever family runs them.

// == tree_quantiles
#include tree_f64
// ---- sample: every step-th row of each feature, padded with +inf to SM values ----------------
// 1 X · 2 samp (F, SM) f32 bits out (-0 made +0, so that equal values have equal bits; NaN made
// +inf, so that it sorts last and `thresholds` leaves it out: boosting's missing values, which
// the forest refuses, as it refuses infinities). Thread per (feature, i). sort_pass then sorts
// each feature's SM values.
@group(0) @binding(2) var<storage, read_write> sa_out: array<u32>;

@compute @workgroup_size(256)
fn sample(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.F * p.SM) { return; }
  let f = i / p.SM;
  let j = i % p.SM;
  var v = 0x7F800000u;
  if (j * p.step < p.n) {
    v = x_bits(j * p.step, f);
    if ((v & 0x7FFFFFFFu) == 0u) { v = 0u; }
    if ((v & 0x7FFFFFFFu) > 0x7F800000u) { v = 0x7F800000u; }
  }
  sa_out[i] = v;
}

// ---- sort_pass: one compare-exchange pass (j, k) of a bitonic sort of `count` runs of `len` ---
// 1 data (count, len) f32 bits, sorted ascending as floats (finite, or +inf) through an integer
// key. Thread per pair. Run for k = 2, 4, .., len and, for each, j = k/2, .., 1.
@group(0) @binding(0) var<uniform> so: Sort;
@group(0) @binding(1) var<storage, read_write> so_data: array<u32>;

fn order_key(b: u32) -> u32 { return select(b ^ 0x80000000u, ~b, (b >> 31u) == 1u); }

@compute @workgroup_size(256)
fn sort_pass(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  let half = so.len / 2u;
  if (i >= so.count * half) { return; }
  let t = i % half;
  let a = (i / half) * so.len + 2u * so.j * (t / so.j) + t % so.j;
  let b = a + so.j;
  let x = so_data[a];
  let y = so_data[b];
  let up = ((2u * so.j * (t / so.j) + t % so.j) & so.k) == 0u;
  if ((order_key(x) > order_key(y)) == up && x != y) {
    so_data[a] = y;
    so_data[b] = x;
  }
}

// ---- thresholds: each feature's bins from its sorted sample (binning.py's feature_bins) -----
// 0 Bins · 1 samp (F, SM) f32 bits, each feature's first m sorted (-0 made +0), +inf (and NaN,
// `sample`'s missing values) last · 2 out (F, record_words): per feature its number of bins (0
// where all m are +inf), then per bin its upper threshold (+inf for the last), smallest and
// largest value, as f32 bits. The bins are those of the m_f values below +inf (a search for the
// first +inf): all m in a forest, which refuses infinities; boosting refuses them too (bin_rows
// flags them), after leaving NaN out here. Workgroup per feature (nbins <= 256: a
// thread a bin). Values are compared as bits (order_key), so subnormals count as on the CPU.
// The same bits as feature_bins: at most max(nbins, exact) distinct values, a bin each with
// thresholds at their midpoints (mid_down: each written by the thread that finds the next value,
// however many); else the cuts at the (m - 1) k / nbins quantiles (k = 1 .. nbins
// - 1; a value where its two neighbours agree, else their midpoint), non-decreasing in k so that
// dropping repeats is Python's sorted(set(...)), the top bin kept for the largest value.
@group(0) @binding(0) var<uniform> bn: Bins;
@group(0) @binding(1) var<storage, read> th_samp: array<u32>;
@group(0) @binding(2) var<storage, read_write> th_out: array<u32>;

var<workgroup> th_cnt: array<u32, 256>;  // boundaries (value changes) in each thread's chunk, then their prefix
var<workgroup> th_cut: array<u32, 256>;  // the quantile cuts, f32 bits
var<workgroup> th_end: array<u32, 256>;  // each bin's end in the sorted values
var<workgroup> th_n: u32;

fn th_key(f: u32, i: u32) -> u32 { return order_key(th_samp[f * bn.SM + i]); }

fn th_upper(f: u32, key: u32, below: bool) -> u32 {  // first i with v[i] > key (>= key if below)
  var lo = 0u;
  var hi = bn.m;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    let k = th_key(f, mid);
    if (k < key || (!below && k == key)) { lo = mid + 1u; } else { hi = mid; }
  }
  return lo;
}

fn th_mid(a: u32, b: u32) -> u32 {  // feature_bins' cut between two sorted values
  if (a == b) { return a; }
  return bitcast<u32>(mid_down(bitcast<f32>(a), bitcast<f32>(b)));
}

@compute @workgroup_size(256)
fn thresholds(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let f = linear(wid, nwg);  // uniform: a workgroup's feature
  if (f >= bn.F) { return; }  // a 2-D grid's last row runs past the features
  let m = th_upper(f, order_key(0x7F800000u), true);  // m_f (uniform: a read-only binding)
  let nb = bn.nbins;
  let base = f * bn.SM;
  let out0 = f * (1u + 3u * min(max(nb, bn.exact), bn.m));  // record_words
  if (m == 0u) {
    if (lid == 0u) { th_out[out0] = 0u; }
    return;
  }
  let chunk = (m + 255u) / 256u;
  let c0 = max(1u, lid * chunk);
  let c1 = min(m, (lid + 1u) * chunk);
  var changes = 0u;
  for (var i = c0; i < c1; i++) {
    changes += select(0u, 1u, th_samp[base + i] != th_samp[base + i - 1u]);
  }
  th_cnt[lid] = changes;
  workgroupBarrier();
  if (lid == 0u) {
    var total = 0u;
    for (var t = 0u; t < 256u; t++) {
      let c = th_cnt[t];
      th_cnt[t] = total;
      total += c;
    }
    th_n = total + 1u;  // distinct values
  }
  let distinct = workgroupUniformLoad(&th_n);
  if (distinct <= max(nb, bn.exact)) {  // a bin per value: value a (from 0) starts where the
    if (lid == 0u) {                     // sample changes for the a-th time
      let v = th_samp[base];
      th_out[out0] = distinct;
      th_out[out0 + 2u] = v;
      th_out[out0 + 3u] = v;
      th_out[out0 + 1u + 3u * (distinct - 1u)] = 0x7F800000u;  // the last bin's: +inf
    }
    var at = 1u + th_cnt[lid];
    for (var i = c0; i < c1; i++) {
      let u = th_samp[base + i - 1u];
      let v = th_samp[base + i];
      if (v != u) {
        th_out[out0 + 1u + 3u * (at - 1u)] = th_mid(u, v);  // the value before's threshold
        th_out[out0 + 2u + 3u * at] = v;
        th_out[out0 + 3u + 3u * at] = v;
        at++;
      }
    }
    return;
  }
  if (lid + 1u < nb) {  // cut k = lid + 1
    let h = (m - 1u) * (lid + 1u);
    let q = h / nb;
    th_cut[lid] = th_mid(th_samp[base + q], th_samp[base + q + select(0u, 1u, h % nb != 0u)]);
  }
  workgroupBarrier();
  if (lid == 0u) {
    var kept = 0u;
    for (var k = 0u; k + 1u < nb; k++) {
      let c = th_cut[k];
      if (kept == 0u || c != th_cut[kept - 1u]) {
        th_cut[kept] = c;
        kept++;
      }
    }
    let top = th_samp[base + m - 1u];
    if (order_key(th_cut[kept - 1u]) >= order_key(top)) {  // the top bin must hold the largest value
      kept--;
      let below = th_samp[base + th_upper(f, order_key(top), true) - 1u];
      if (kept == 0u || order_key(th_cut[kept - 1u]) < order_key(below)) {
        th_cut[kept] = th_mid(below, top);
        kept++;
      }
    }
    th_n = kept;
  }
  let L = workgroupUniformLoad(&th_n);  // thresholds: L + 1 bins
  if (lid < L) {
    th_end[lid] = th_upper(f, order_key(th_cut[lid]), false);
  } else if (lid == L) {
    th_end[lid] = m;
  }
  workgroupBarrier();
  if (lid <= L) {
    let before = max(lid, 1u) - 1u;
    var start = 0u;
    if (lid > 0u) { start = th_end[before]; }
    let end = th_end[lid];
    var lo = th_cut[before];  // a bin empty in the sample: its bounds stand in for its values
    var hi = th_cut[min(lid, L - 1u)];
    if (end > start) {
      lo = th_samp[base + start];
      hi = th_samp[base + end - 1u];
    }
    th_out[out0 + 1u + 3u * lid] = select(0x7F800000u, th_cut[lid], lid < L);
    th_out[out0 + 2u + 3u * lid] = lo;
    th_out[out0 + 3u + 3u * lid] = hi;
  }
  if (lid == 0u) { th_out[out0] = L + 1u; }
}
