// Gradient-boosted trees (scikit-learn's HistGradientBoosting), K trees an iteration grown
// together, best-first. Reference: py_core/kernels/boosting/__init__.py (the same steps, and the
// order of an iteration's dispatches). Histograms hold exact 64-bit integer sums of fixed-point
// gradients and hessians (integer atomics), so every GPU sums them to the same words; gains are
// f32 operations on those sums, with no product feeding a sum (no fused multiply-add changes a
// bit). Shared sections: the forest's (shaders/lib/tree*.wgsl: the grid, the binned matrix, X in
// f32 or f64, exact i64 -> f32, the binning subsample sorted and each feature's bins picked from it:
// sample, sort_pass, thresholds) and common.wgsl's (wg_reduce, pcg).
//
// Shapes: rows n (p.n: the training, validation or prediction rows of the dispatch), features F,
// outputs K, bins B a feature (B - 1: missing values), nodes NN a tree. binned (n, FW) four 8-bit
// bins a word · gh (n, K, 2) f32 · qs (K, 2) the largest |g| and h (f32 bits) · node_of (K, n)
// · ts (K, TS) a tree's state · nodes (K, NN, NR) · hist (K, NN, F, B, H_WORDS) · cand (K, 2, F, CW)
// · fmeta (F) thresholds a feature · fmiss (F) · edges (F, B) f32 thresholds, then +inf · ctr (1)
// the iteration.

@group(0) @binding(0) var<uniform> p: Params;

#include tree_grid
#include tree_binned
#include tree_x
#include pcg
#include tree_quantiles

fn row_id(wid: vec3u, nwg: vec3u, lid: u32) -> u32 { return linear(wid, nwg) * WG + lid; }

fn bin_of(word: u32, f: u32) -> u32 { return bin_in(word, f); }

fn is_nan_bits(b: u32) -> bool { return (b & 0x7FFFFFFFu) > 0x7F800000u; }

// The fixed-point exponent of values at most bitcast<f32>(mb) in magnitude (scale_exp).
fn scale_exp(mb: u32) -> i32 {
  if (mb == 0u) { return 0; }
  return i32(Q_BITS) - (i32((mb >> 23u) & 0xFFu) - 127);
}

fn deq(v: vec2u, e: i32) -> f32 { return ldexp(i64_to_f32(v.x, v.y), -e); }

fn node_at(k: u32, node: u32) -> u32 { return (k * p.NN + node) * NR; }

// The first word of a tree's histogram slot (a slot a leaf: py_core/kernels/boosting says how).
fn slot_at(k: u32, slot: u32) -> u32 { return (k * ((p.NN + 1u) / 2u) + slot) * p.F * p.B * H_WORDS; }

// ---- bin_rows: each row's bins ------------------------------------------------------------------
// 1 X (n, F) f32 or f64 · 2 edges (F, B) · 3 fmeta (F) · 4 binned (n, FW) · 5 fmiss (F) atomic.
// Thread per (row, word of four features).
@group(0) @binding(2) var<storage, read> br_edges: array<f32>;
@group(0) @binding(3) var<storage, read> br_fmeta: array<u32>;
@group(0) @binding(4) var<storage, read_write> br_binned: array<u32>;
@group(0) @binding(5) var<storage, read_write> br_fmiss: array<atomic<u32>>;

@compute @workgroup_size(256)
fn bin_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.n * p.FW) { return; }
  let r = i / p.FW;
  let w = i % p.FW;
  var word = 0u;
  for (var f = 4u * w; f < min(p.F, 4u * w + 4u); f++) {
    let xb = x_bits(r, f);
    var b = p.B - 1u;
    if (is_nan_bits(xb)) {
      atomicOr(&br_fmiss[f], MISSING);
    } else {
      if ((xb & 0x7FFFFFFFu) == 0x7F800000u) { atomicOr(&br_fmiss[f], INFINITE); }
      let x = bitcast<f32>(xb);
      var lo = 0u;
      var hi = br_fmeta[f];
      while (lo < hi) {  // the thresholds below x
        let mid = (lo + hi) / 2u;
        if (x <= br_edges[f * p.B + mid]) { hi = mid; } else { lo = mid + 1u; }
      }
      b = lo;
    }
    word |= b << (8u * (f % 4u));  // as bin_in reads it (8-bit bins)
  }
  br_binned[i] = word;
}

// ---- gradients: g, h of each row and output; the roots --------------------------------------------
// 1 raw (n, K) · 2 y (n) f32 (classes: the index) · 3 gh (n, K, 2) · 4 qs (K, 2) atomic
// · 5 node_of (K, n) · 6 ts (K, TS). Thread per row.
@group(0) @binding(1) var<storage, read> gr_raw: array<f32>;
@group(0) @binding(2) var<storage, read> gr_y: array<f32>;
@group(0) @binding(3) var<storage, read_write> gr_gh: array<f32>;
@group(0) @binding(4) var<storage, read_write> gr_qs: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> gr_node_of: array<u32>;
@group(0) @binding(6) var<storage, read_write> gr_ts: array<u32>;
var<workgroup> gr_max: array<atomic<u32>, 128>;  // 2 MAXK

fn put_gh(r: u32, k: u32, g: f32, h: f32) {
  gr_gh[2u * (r * p.K + k)] = g;
  gr_gh[2u * (r * p.K + k) + 1u] = h;
  atomicMax(&gr_max[2u * k], bitcast<u32>(abs(g)));
  atomicMax(&gr_max[2u * k + 1u], bitcast<u32>(h));
  gr_node_of[k * p.n + r] = 0u;
}

@compute @workgroup_size(256)
fn gradients(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let r = row_id(wid, nwg, lid);
  if (lid < 2u * p.K) { atomicStore(&gr_max[lid], 0u); }
  workgroupBarrier();
  if (r < p.n) {
    if (p.loss == SQUARED) {
      put_gh(r, 0u, gr_raw[r] - gr_y[r], 1.0);
    } else if (p.loss == ABSOLUTE) {
      put_gh(r, 0u, select(-1.0, 1.0, gr_raw[r] > gr_y[r]), 1.0);  // scikit-learn's: -1 at equality
    } else if (p.K == 1u) {
      let pr = 1.0 / (1.0 + exp(-gr_raw[r]));
      put_gh(r, 0u, pr - gr_y[r], pr * (1.0 - pr));
    } else {
      var m = gr_raw[r * p.K];
      for (var k = 1u; k < p.K; k++) { m = max(m, gr_raw[r * p.K + k]); }
      var s = 0.0;
      for (var k = 0u; k < p.K; k++) { s = s + exp(gr_raw[r * p.K + k] - m); }
      let yk = u32(gr_y[r]);
      for (var k = 0u; k < p.K; k++) {
        let pk = exp(gr_raw[r * p.K + k] - m) / s;
        put_gh(r, k, pk - select(0.0, 1.0, k == yk), pk * (1.0 - pk));
      }
    }
  }
  if (r == 0u) {
    for (var k = 0u; k < p.K; k++) {
      let t = k * TS;
      gr_ts[t] = 1u; gr_ts[t + 1u] = 1u; gr_ts[t + 2u] = 0u; gr_ts[t + 3u] = NONE;
      gr_ts[t + 4u] = 0u; gr_ts[t + 5u] = NONE; gr_ts[t + 6u] = 0u; gr_ts[t + 7u] = NONE;
      gr_ts[t + 8u] = 0u; gr_ts[t + 9u] = 0u;
    }
  }
  workgroupBarrier();
  if (lid < 2u * p.K) {
    let v = atomicLoad(&gr_max[lid]);
    if (v != 0u) { atomicMax(&gr_qs[lid], v); }
  }
}

// ---- hist_build: the rows of each tree's node to build into its histogram ------------------------
// 1 binned · 2 gh · 3 qs · 4 node_of · 5 ts · 6 hist atomic. Thread per (output, row).
@group(0) @binding(1) var<storage, read> hb_binned: array<u32>;
@group(0) @binding(2) var<storage, read> hb_gh: array<f32>;
@group(0) @binding(3) var<storage, read> hb_qs: array<u32>;
@group(0) @binding(4) var<storage, read> hb_node_of: array<u32>;
@group(0) @binding(5) var<storage, read> hb_ts: array<u32>;
@group(0) @binding(6) var<storage, read_write> hb_hist: array<atomic<u32>>;

fn hist_add64(h: u32, v: i32) {  // a signed value into the 64-bit sum at words (h, h + 1)
  let lo = bitcast<u32>(v);
  let old = atomicAdd(&hb_hist[h], lo);
  let up = select(0u, 0xFFFFFFFFu, v < 0) + select(0u, 1u, old + lo < old);  // carry
  if (up != 0u) { atomicAdd(&hb_hist[h + 1u], up); }
}

@compute @workgroup_size(256)
fn hist_build(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * p.n) { return; }
  let k = i / p.n;
  let r = i % p.n;
  let node = hb_ts[k * TS + 4u];
  if (node == NONE || hb_node_of[i] != node) { return; }
  let qg = i32(round(ldexp(hb_gh[2u * (r * p.K + k)], scale_exp(hb_qs[2u * k]))));
  let qh = i32(round(ldexp(hb_gh[2u * (r * p.K + k) + 1u], scale_exp(hb_qs[2u * k + 1u]))));
  let base = slot_at(k, hb_ts[k * TS + 8u]);
  for (var f = 0u; f < p.F; f++) {
    let h = base + (f * p.B + bin_of(hb_binned[r * p.FW + bin_word(f)], f)) * H_WORDS;
    hist_add64(h, qg);
    hist_add64(h + 2u, qh);
    atomicAdd(&hb_hist[h + 4u], 1u);
  }
}

// hist_build_wg (GPUs): the same sums, a workgroup per (output, group of features, run of HB_ROWS
// rows): its rows add into workgroup memory (the group's bins, HB_WORDS words at most), then each
// non-zero word goes to the histogram with one global atomic, so the many rows of the first nodes
// do not all contend for the same few thousand words. Integer sums: the same words.
var<workgroup> hw: array<atomic<u32>, HB_WORDS>;

fn wg_add64(h: u32, v: i32) {
  let lo = bitcast<u32>(v);
  let old = atomicAdd(&hw[h], lo);
  let up = select(0u, 0xFFFFFFFFu, v < 0) + select(0u, 1u, old + lo < old);
  if (up != 0u) { atomicAdd(&hw[h + 1u], up); }
}

@compute @workgroup_size(256)
fn hist_build_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let fw = p.B * H_WORDS;  // a feature's words
  let per = max(1u, HB_WORDS / fw);
  let G = (p.F + per - 1u) / per;
  let runs = (p.n + HB_ROWS - 1u) / HB_ROWS;
  if (id >= p.K * G * runs) { return; }
  let run = id % runs;
  let g = id / runs % G;
  let k = id / runs / G;
  let node = hb_ts[k * TS + 4u];
  if (node == NONE) { return; }  // the same for the whole workgroup
  let f0 = g * per;
  let f1 = min(p.F, f0 + per);
  let nw = (f1 - f0) * fw;
  for (var e = lid; e < nw; e += WG) { atomicStore(&hw[e], 0u); }
  workgroupBarrier();
  let eg = scale_exp(hb_qs[2u * k]);
  let eh = scale_exp(hb_qs[2u * k + 1u]);
  for (var r = run * HB_ROWS + lid; r < min(p.n, (run + 1u) * HB_ROWS); r += WG) {
    if (hb_node_of[k * p.n + r] != node) { continue; }
    let qg = i32(round(ldexp(hb_gh[2u * (r * p.K + k)], eg)));
    let qh = i32(round(ldexp(hb_gh[2u * (r * p.K + k) + 1u], eh)));
    for (var f = f0; f < f1; f++) {
      let h = ((f - f0) * p.B + bin_of(hb_binned[r * p.FW + bin_word(f)], f)) * H_WORDS;
      wg_add64(h, qg);
      wg_add64(h + 2u, qh);
      atomicAdd(&hw[h + 4u], 1u);
    }
  }
  workgroupBarrier();
  let base = slot_at(k, hb_ts[k * TS + 8u]) + f0 * fw;
  for (var j = lid; j < nw / H_WORDS; j += WG) {  // a thread a bin: the 64-bit sums carry
    let h = j * H_WORDS;
    for (var c = 0u; c < 4u; c += 2u) {
      let lo = atomicLoad(&hw[h + c]);
      var hi = atomicLoad(&hw[h + c + 1u]);
      if (lo != 0u) {
        let old = atomicAdd(&hb_hist[base + h + c], lo);
        hi += select(0u, 1u, old + lo < old);
      }
      if (hi != 0u) { atomicAdd(&hb_hist[base + h + c + 1u], hi); }
    }
    let cnt = atomicLoad(&hw[h + 4u]);
    if (cnt != 0u) { atomicAdd(&hb_hist[base + h + 4u], cnt); }
  }
}

// ---- root_totals: each root's sums, from its histogram of feature 0 --------------------------------
// 1 hist · 2 nodes · 3 ts · 4 qs. Thread per output.
@group(0) @binding(1) var<storage, read> rt_hist: array<u32>;
@group(0) @binding(2) var<storage, read_write> rt_nodes: array<u32>;
@group(0) @binding(3) var<storage, read_write> rt_ts: array<u32>;
@group(0) @binding(4) var<storage, read> rt_qs: array<u32>;

@compute @workgroup_size(256)
fn root_totals(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  let k = row_id(wid, nwg, lid);
  if (k >= p.K) { return; }
  let base = slot_at(k, 0u);
  var G = vec2u(0u);
  var H = vec2u(0u);
  var cnt = 0u;
  for (var b = 0u; b < p.B; b++) {
    let h = base + b * H_WORDS;
    G = add64(G, vec2u(rt_hist[h], rt_hist[h + 1u]));
    H = add64(H, vec2u(rt_hist[h + 2u], rt_hist[h + 3u]));
    cnt += rt_hist[h + 4u];
  }
  let rec = node_at(k, 0u);
  rt_nodes[rec + 1u] = 0u;
  rt_nodes[rec + 2u] = cnt;
  rt_nodes[rec + 3u] = G.x; rt_nodes[rec + 4u] = G.y;
  rt_nodes[rec + 5u] = H.x; rt_nodes[rec + 6u] = H.y;
  rt_nodes[rec + 19u] = NONE;
  let small = cnt < 2u * p.msl || deq(H, scale_exp(rt_qs[2u * k + 1u])) < p.min_hess;
  rt_nodes[rec] = select(PENDING, LEAF, small);
  if (small) { rt_ts[k * TS + 6u] = NONE; }
}

// ---- split_find: each pending node's best split of each feature it draws ---------------------------
// 1 hist (read and written: the derived child) · 2 nodes · 3 ts · 4 cand · 5 fmeta · 6 fmiss · 7 qs
// · 8 ctr. Thread per (output, pending node of two, feature).
@group(0) @binding(1) var<storage, read_write> sf_hist: array<u32>;
@group(0) @binding(2) var<storage, read> sf_nodes: array<u32>;
@group(0) @binding(3) var<storage, read> sf_ts: array<u32>;
@group(0) @binding(4) var<storage, read_write> sf_cand: array<u32>;
@group(0) @binding(5) var<storage, read> sf_fmeta: array<u32>;
@group(0) @binding(6) var<storage, read> sf_fmiss: array<u32>;
@group(0) @binding(7) var<storage, read> sf_qs: array<u32>;
@group(0) @binding(8) var<storage, read> sf_ctr: array<u32>;

fn node_score(G: f32, H: f32) -> f32 { return (G * G) / (H + p.l2); }

// Whether feature f is among the mf of the node's (key's) draw: the mf smallest hashes.
fn selected(key: u32, f: u32) -> bool {
  if (p.mf >= p.F) { return true; }
  let h = hash3(p.seed, key, f);
  var rank = 0u;
  for (var j = 0u; j < p.F; j++) {
    let hj = hash3(p.seed, key, j);
    if (hj < h || (hj == h && j < f)) { rank++; }
  }
  return rank < p.mf;
}

struct Best { gain: f32, bin: u32, ml: u32, nl: u32, gl: vec2u, hl: vec2u, found: bool }

struct Node { G: vec2u, H: vec2u, n: u32, cur: f32, eg: i32, eh: i32 }

fn consider(b0: Best, nd: Node, gl: vec2u, hl: vec2u, nl: u32, bin: u32, ml: u32) -> Best {
  var b = b0;
  let GL = deq(gl, nd.eg);
  let HL = deq(hl, nd.eh);
  let GR = deq(sub64(nd.G, gl), nd.eg);
  let HR = deq(sub64(nd.H, hl), nd.eh);
  let both = node_score(GL, HL) + node_score(GR, HR);
  let gain = both - nd.cur;
  if (gain > b.gain && gain > 0.0 && gain > GAIN_EPS * both) {
    b = Best(gain, bin, ml, nl, gl, hl, true);
  }
  return b;
}

fn hist_pair(h: u32) -> vec2u { return vec2u(sf_hist[h], sf_hist[h + 1u]); }

fn scan(base: u32, nb: u32, has_missing: bool, nd: Node) -> Best {
  var best = Best(-1.0, 0u, 0u, 0u, vec2u(0u), vec2u(0u), false);
  var gl = vec2u(0u);
  var hl = vec2u(0u);
  var cl = 0u;
  let end = nb - 1u + select(0u, 1u, has_missing);
  for (var b = 0u; b < end; b++) {  // left to right: missing values go right
    let h = base + b * H_WORDS;
    gl = add64(gl, hist_pair(h));
    hl = add64(hl, hist_pair(h + 2u));
    cl += sf_hist[h + 4u];
    if (cl < p.msl) { continue; }
    if (nd.n - cl < p.msl) { break; }
    if (deq(hl, nd.eh) < p.min_hess) { continue; }
    if (deq(sub64(nd.H, hl), nd.eh) < p.min_hess) { break; }
    best = consider(best, nd, gl, hl, cl, b, 0u);
  }
  if (has_missing && nb >= 2u) {  // right to left: missing values go left
    var gr = vec2u(0u);
    var hr = vec2u(0u);
    var cr = 0u;
    for (var b = i32(nb) - 2; b >= 0; b--) {
      let h = base + (u32(b) + 1u) * H_WORDS;
      gr = add64(gr, hist_pair(h));
      hr = add64(hr, hist_pair(h + 2u));
      cr += sf_hist[h + 4u];
      if (cr < p.msl) { continue; }
      if (nd.n - cr < p.msl) { break; }
      if (deq(hr, nd.eh) < p.min_hess) { continue; }
      if (deq(sub64(nd.H, hr), nd.eh) < p.min_hess) { break; }
      best = consider(best, nd, sub64(nd.G, gr), sub64(nd.H, hr), nd.n - cr, u32(b), 1u);
    }
  }
  return best;
}

// scikit-learn's categorical split (scan_categorical): the categories of enough support, the
// missing values' bin among them, sorted by G / (H + MIN_CAT_SUPPORT) (stably), scanned from
// either end up to the middle; the bins that go left into the candidate's words at + 10.
fn scan_cat(base: u32, nb: u32, has_missing: bool, nd: Node, at: u32) -> Best {
  var best = Best(-1.0, 0u, 0u, 0u, vec2u(0u), vec2u(0u), false);
  var cv: array<f32, 256>;
  var cb: array<u32, 256>;
  var nu = 0u;
  let support = f32(nd.n) / deq(nd.H, nd.eh);
  for (var i = 0u; i < nb + select(0u, 1u, has_missing); i++) {
    let b = select(i, p.B - 1u, i == nb);
    let h = base + b * H_WORDS;
    let Hb = deq(hist_pair(h + 2u), nd.eh);
    if (Hb * support >= MIN_CAT_SUPPORT) {
      let v = deq(hist_pair(h), nd.eg) / (Hb + MIN_CAT_SUPPORT);
      var j = nu;
      while (j > 0u && cv[j - 1u] > v) { cv[j] = cv[j - 1u]; cb[j] = cb[j - 1u]; j--; }
      cv[j] = v;
      cb[j] = b;
      nu++;
    }
  }
  for (var w = 0u; w < CAT_WORDS; w++) { sf_cand[at + 10u + w] = 0u; }
  if (nu <= 1u) { return best; }
  var bdir = 0u;
  var bi = 0u;
  for (var dir = 0u; dir < 2u; dir++) {
    let middle = (nu + 1u) / 2u - dir;
    var gl = vec2u(0u);
    var hl = vec2u(0u);
    var cl = 0u;
    for (var i = 0u; i < middle; i++) {
      let b = cb[select(i, nu - 1u - i, dir == 1u)];
      let h = base + b * H_WORDS;
      gl = add64(gl, hist_pair(h));
      hl = add64(hl, hist_pair(h + 2u));
      cl += sf_hist[h + 4u];
      if (cl < p.msl || deq(hl, nd.eh) < p.min_hess) { continue; }
      if (nd.n - cl < p.msl || deq(sub64(nd.H, hl), nd.eh) < p.min_hess) { break; }
      let before = best.gain;
      best = consider(best, nd, gl, hl, cl, 0u, 0u);
      if (best.gain != before) { bdir = dir; bi = i; }
    }
  }
  if (best.found) {
    for (var i = 0u; i <= bi; i++) {
      let b = cb[select(i, nu - 1u - i, bdir == 1u)];
      sf_cand[at + 10u + b / 32u] |= 1u << (b % 32u);
      if (b == p.B - 1u) { best.ml = 1u; }
    }
  }
  return best;
}

@compute @workgroup_size(256)
fn split_find(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * 2u * p.F) { return; }
  let f = i % p.F;
  let which = i / p.F % 2u;
  let k = i / p.F / 2u;
  let at = i * CW;
  sf_cand[at] = 0u;
  let t = k * TS;
  let node = sf_ts[t + 6u + which];
  if (node == NONE) { return; }
  let rec = node_at(k, node);
  let fw = p.B * H_WORDS;  // a feature's words
  let base = slot_at(k, sf_nodes[rec + 28u]) + f * fw;
  if (node == sf_ts[t + 5u]) {  // the larger child: its parent's histogram (its slot) minus its sibling's
    let bu = slot_at(k, sf_ts[t + 8u]) + f * fw;
    for (var e = 0u; e < fw; e += H_WORDS) {
      let g = sub64(hist_pair(base + e), hist_pair(bu + e));
      let h = sub64(hist_pair(base + e + 2u), hist_pair(bu + e + 2u));
      sf_hist[base + e] = g.x; sf_hist[base + e + 1u] = g.y;
      sf_hist[base + e + 2u] = h.x; sf_hist[base + e + 3u] = h.y;
      sf_hist[base + e + 4u] = sf_hist[base + e + 4u] - sf_hist[bu + e + 4u];
    }
  }
  let key = ((sf_ctr[0] * p.K + k) * p.NN + node);
  if (!selected(key, f)) { return; }
  let eg = scale_exp(sf_qs[2u * k]);
  let eh = scale_exp(sf_qs[2u * k + 1u]);
  let G = vec2u(sf_nodes[rec + 3u], sf_nodes[rec + 4u]);
  let H = vec2u(sf_nodes[rec + 5u], sf_nodes[rec + 6u]);
  var cur = 0.0;
  if (node != 0u) { cur = node_score(deq(G, eg), deq(H, eh)); }
  let nd = Node(G, H, sf_nodes[rec + 2u], cur, eg, eh);
  let has_missing = (sf_fmiss[f] & MISSING) != 0u;
  var best: Best;
  if ((sf_fmiss[f] & CATEGORICAL) != 0u) {
    best = scan_cat(base, sf_fmeta[f] + 1u, has_missing, nd, at);
  } else {
    best = scan(base, sf_fmeta[f] + 1u, has_missing, nd);
    for (var w = 0u; w < CAT_WORDS; w++) { sf_cand[at + 10u + w] = 0u; }
  }
  if (!best.found) { return; }
  sf_cand[at] = 1u;
  sf_cand[at + 1u] = bitcast<u32>(best.gain);
  sf_cand[at + 2u] = best.bin;
  sf_cand[at + 3u] = best.ml;
  sf_cand[at + 4u] = best.nl;
  sf_cand[at + 5u] = best.gl.x; sf_cand[at + 6u] = best.gl.y;
  sf_cand[at + 7u] = best.hl.x; sf_cand[at + 8u] = best.hl.y;
}

// ---- grow: each tree's pending nodes settle; its best open leaf splits ----------------------------
// 1 nodes · 2 ts · 3 cand · 4 fmiss. Thread per output.
@group(0) @binding(1) var<storage, read_write> gw_nodes: array<u32>;
@group(0) @binding(2) var<storage, read_write> gw_ts: array<u32>;
@group(0) @binding(3) var<storage, read> gw_cand: array<u32>;
@group(0) @binding(4) var<storage, read> gw_fmiss: array<u32>;

fn settle(k: u32, which: u32) {  // a pending node takes its best split, or becomes a leaf
  let t = k * TS;
  let node = gw_ts[t + 6u + which];
  if (node == NONE) { return; }
  var best = NONE;
  var bg = 0.0;
  for (var f = 0u; f < p.F; f++) {
    let at = ((k * 2u + which) * p.F + f) * CW;
    let g = bitcast<f32>(gw_cand[at + 1u]);
    if (gw_cand[at] != 0u && (best == NONE || g > bg)) { best = f; bg = g; }
  }
  let rec = node_at(k, node);
  if (best == NONE) {
    gw_nodes[rec] = LEAF;
  } else {
    let at = ((k * 2u + which) * p.F + best) * CW;
    gw_nodes[rec] = OPEN;
    gw_nodes[rec + 7u] = best;
    gw_nodes[rec + 8u] = gw_cand[at + 2u];
    gw_nodes[rec + 9u] = gw_cand[at + 3u];
    gw_nodes[rec + 12u] = gw_cand[at + 1u];
    gw_nodes[rec + 13u] = gw_cand[at + 4u];
    for (var w = 0u; w < 4u; w++) { gw_nodes[rec + 14u + w] = gw_cand[at + 5u + w]; }
    for (var w = 0u; w < CAT_WORDS; w++) { gw_nodes[rec + 20u + w] = gw_cand[at + 10u + w]; }
  }
  gw_ts[t + 6u + which] = NONE;
}

fn set_child(k: u32, child: u32, parent: u32, depth: u32, cnt: u32, G: vec2u, H: vec2u, state: u32,
             slot: u32) {
  let rec = node_at(k, child);
  for (var w = 0u; w < NR; w++) { gw_nodes[rec + w] = 0u; }
  gw_nodes[rec] = state;
  gw_nodes[rec + 1u] = depth;
  gw_nodes[rec + 2u] = cnt;
  gw_nodes[rec + 3u] = G.x; gw_nodes[rec + 4u] = G.y;
  gw_nodes[rec + 5u] = H.x; gw_nodes[rec + 6u] = H.y;
  gw_nodes[rec + 19u] = parent;
  gw_nodes[rec + 28u] = slot;
}

@compute @workgroup_size(256)
fn grow(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let k = row_id(wid, nwg, lid);
  if (k >= p.K) { return; }
  let t = k * TS;
  if (gw_ts[t + 2u] != 0u) {
    for (var w = 3u; w < 8u; w++) { gw_ts[t + w] = NONE; }
    return;
  }
  settle(k, 0u);
  settle(k, 1u);
  var s = NONE;
  var sg = 0.0;
  for (var node = 0u; node < gw_ts[t]; node++) {
    let rec = node_at(k, node);
    let g = bitcast<f32>(gw_nodes[rec + 12u]);
    if (gw_nodes[rec] == OPEN && (s == NONE || g > sg)) { s = node; sg = g; }
  }
  if (s == NONE) {
    gw_ts[t + 2u] = 1u;
    gw_ts[t + 3u] = NONE; gw_ts[t + 4u] = NONE; gw_ts[t + 5u] = NONE;
    return;
  }
  let rec = node_at(k, s);
  let left = gw_ts[t];
  let right = left + 1u;
  gw_ts[t] = left + 2u;
  gw_ts[t + 1u] += 1u;
  let cnt = gw_nodes[rec + 2u];
  let nl = gw_nodes[rec + 13u];
  let nr = cnt - nl;
  let G = vec2u(gw_nodes[rec + 3u], gw_nodes[rec + 4u]);
  let H = vec2u(gw_nodes[rec + 5u], gw_nodes[rec + 6u]);
  let GL = vec2u(gw_nodes[rec + 14u], gw_nodes[rec + 15u]);
  let HL = vec2u(gw_nodes[rec + 16u], gw_nodes[rec + 17u]);
  if ((gw_fmiss[gw_nodes[rec + 7u]] & MISSING) == 0u) {  // none seen: they go where most rows went
    gw_nodes[rec + 9u] = select(0u, 1u, nl > nr);
  }
  gw_nodes[rec] = SPLIT;
  gw_nodes[rec + 10u] = left;
  gw_nodes[rec + 11u] = right;
  let depth = gw_nodes[rec + 1u] + 1u;
  let full = p.L != NONE && gw_ts[t + 1u] >= p.L;
  let deep = p.max_depth != NONE && depth >= p.max_depth;
  let sl = select(PENDING, LEAF, full || deep || nl < 2u * p.msl);
  let sr = select(PENDING, LEAF, full || deep || nr < 2u * p.msl);
  let small = select(right, left, nl < nr);  // its histogram built, the other's derived
  let fresh = gw_ts[t + 1u] - 1u;
  let kept = gw_nodes[rec + 28u];
  set_child(k, left, s, depth, nl, GL, HL, sl, select(kept, fresh, small == left));
  set_child(k, right, s, depth, nr, sub64(G, GL), sub64(H, HL), sr, select(kept, fresh, small == right));
  gw_ts[t + 3u] = s;
  gw_ts[t + 8u] = fresh;
  if (sl == PENDING || sr == PENDING) {
    gw_ts[t + 4u] = small;
    gw_ts[t + 5u] = right + left - small;
  } else {
    gw_ts[t + 4u] = NONE;
    gw_ts[t + 5u] = NONE;
  }
  gw_ts[t + 6u] = select(NONE, left, sl == PENDING);
  gw_ts[t + 7u] = select(NONE, right, sr == PENDING);
  if (full) {
    gw_ts[t + 2u] = 1u;
    for (var node = 0u; node < gw_ts[t]; node++) {
      if (gw_nodes[node_at(k, node)] == OPEN) { gw_nodes[node_at(k, node)] = LEAF; }
    }
  }
}

// ---- route: the rows of each tree's split node to its children --------------------------------------
// 1 binned · 2 nodes · 3 ts · 4 node_of · 5 fmiss. Thread per (output, row).
@group(0) @binding(1) var<storage, read> ro_binned: array<u32>;
@group(0) @binding(2) var<storage, read> ro_nodes: array<u32>;
@group(0) @binding(3) var<storage, read> ro_ts: array<u32>;
@group(0) @binding(4) var<storage, read_write> ro_node_of: array<u32>;
@group(0) @binding(5) var<storage, read> ro_fmiss: array<u32>;

// Whether a row of bin b goes left at a split (its bin, missing_left, whether categorical, and
// the word of its set of bins that holds b).
fn goes_left(b: u32, split_bin: u32, missing_left: u32, cat: bool, word: u32) -> bool {
  if (b == p.B - 1u) { return missing_left != 0u; }
  if (cat) { return ((word >> (b % 32u)) & 1u) != 0u; }
  return b <= split_bin;
}

@compute @workgroup_size(256)
fn route(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * p.n) { return; }
  let k = i / p.n;
  let r = i % p.n;
  let s = ro_ts[k * TS + 3u];
  if (s == NONE || ro_node_of[i] != s) { return; }
  let rec = node_at(k, s);
  let f = ro_nodes[rec + 7u];
  let b = bin_of(ro_binned[r * p.FW + bin_word(f)], f);
  let left = goes_left(b, ro_nodes[rec + 8u], ro_nodes[rec + 9u], (ro_fmiss[f] & CATEGORICAL) != 0u,
                       ro_nodes[rec + 20u + b / 32u]);
  ro_node_of[i] = select(ro_nodes[rec + 11u], ro_nodes[rec + 10u], left);
}

// ---- med_count, med_step: absolute error's leaf medians, a bit a step ---------------------------
// med_count: 1 y · 2 raw · 3 node_of · 4 med (NN, MW) atomic; thread per row (K = 1).
@group(0) @binding(1) var<storage, read> mc_y: array<f32>;
@group(0) @binding(2) var<storage, read> mc_raw: array<f32>;
@group(0) @binding(3) var<storage, read> mc_node_of: array<u32>;
@group(0) @binding(4) var<storage, read_write> mc_med: array<atomic<u32>>;

// order_key: tree_quantiles'
fn from_key(k: u32) -> f32 { return bitcast<f32>(select(~k, k ^ 0x80000000u, (k >> 31u) == 1u)); }

@compute @workgroup_size(256)
fn med_count(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let r = row_id(wid, nwg, lid);
  if (r >= p.n) { return; }
  let m = mc_node_of[r] * MW;
  let bit = 31u - atomicLoad(&mc_med[m + 4u]);
  let mask = (1u << bit) - 1u;
  let key = order_key(bitcast<u32>(mc_y[r] - mc_raw[r]));
  for (var j = 0u; j < 2u; j++) {
    if (key <= (atomicLoad(&mc_med[m + j]) | mask)) { atomicAdd(&mc_med[m + 2u + j], 1u); }
  }
}

// med_step: 1 nodes · 2 ts · 3 med; thread per node.
@group(0) @binding(1) var<storage, read> ms_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> ms_ts: array<u32>;
@group(0) @binding(3) var<storage, read_write> ms_med: array<u32>;

@compute @workgroup_size(256)
fn med_step(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
            @builtin(local_invocation_index) lid: u32) {
  _ = p.n;
  let node = row_id(wid, nwg, lid);
  if (node >= ms_ts[0]) { return; }
  let m = node * MW;
  let cnt = ms_nodes[node * NR + 2u];
  let bit = 31u - ms_med[m + 4u];
  let ranks = vec2u((cnt - 1u) / 2u, cnt / 2u);
  for (var j = 0u; j < 2u; j++) {
    if (ms_med[m + 2u + j] < ranks[j] + 1u) { ms_med[m + j] |= 1u << bit; }
    ms_med[m + 2u + j] = 0u;
  }
  ms_med[m + 4u] += 1u;
}

// ---- leaf_values: -G / (H + l2) (absolute error: the median), times the learning rate -----------
// 1 nodes · 2 ts · 3 qs · 4 med. Thread per (output, node).
@group(0) @binding(1) var<storage, read_write> lv_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> lv_ts: array<u32>;
@group(0) @binding(3) var<storage, read> lv_qs: array<u32>;
@group(0) @binding(4) var<storage, read> lv_med: array<u32>;

@compute @workgroup_size(256)
fn leaf_values(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * p.NN) { return; }
  let k = i / p.NN;
  let node = i % p.NN;
  if (node >= lv_ts[k * TS]) { return; }
  let rec = node_at(k, node);
  let state = lv_nodes[rec];
  if (state == SPLIT || state == UNUSED) { return; }
  var v: f32;
  if (p.loss == ABSOLUTE) {
    v = (from_key(lv_med[node * MW]) + from_key(lv_med[node * MW + 1u])) * 0.5;
  } else {
    let G = deq(vec2u(lv_nodes[rec + 3u], lv_nodes[rec + 4u]), scale_exp(lv_qs[2u * k]));
    let H = deq(vec2u(lv_nodes[rec + 5u], lv_nodes[rec + 6u]), scale_exp(lv_qs[2u * k + 1u]));
    v = -G / (H + p.l2);
  }
  lv_nodes[rec + 18u] = bitcast<u32>(v * p.lr);
}

// ---- update, update_val: the rows' raw scores plus their leaves' values ---------------------------
// update: 1 nodes · 2 node_of · 3 raw; thread per (output, row).
@group(0) @binding(1) var<storage, read> up_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> up_node_of: array<u32>;
@group(0) @binding(3) var<storage, read_write> up_raw: array<f32>;

@compute @workgroup_size(256)
fn update(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * p.n) { return; }
  let k = i / p.n;
  let r = i % p.n;
  up_raw[r * p.K + k] = up_raw[r * p.K + k] + bitcast<f32>(up_nodes[node_at(k, up_node_of[i]) + 18u]);
}

// update_val: 1 binned (validation rows) · 2 nodes · 3 raw · 4 fmiss; thread per (output, row).
@group(0) @binding(1) var<storage, read> uv_binned: array<u32>;
@group(0) @binding(2) var<storage, read> uv_nodes: array<u32>;
@group(0) @binding(3) var<storage, read_write> uv_raw: array<f32>;
@group(0) @binding(4) var<storage, read> uv_fmiss: array<u32>;

@compute @workgroup_size(256)
fn update_val(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * p.n) { return; }
  let k = i / p.n;
  let r = i % p.n;
  var rec = node_at(k, 0u);
  while (uv_nodes[rec] == SPLIT) {
    let f = uv_nodes[rec + 7u];
    let b = bin_of(uv_binned[r * p.FW + bin_word(f)], f);
    let left = goes_left(b, uv_nodes[rec + 8u], uv_nodes[rec + 9u], (uv_fmiss[f] & CATEGORICAL) != 0u,
                         uv_nodes[rec + 20u + b / 32u]);
    rec = node_at(k, select(uv_nodes[rec + 11u], uv_nodes[rec + 10u], left));
  }
  uv_raw[r * p.K + k] = uv_raw[r * p.K + k] + bitcast<f32>(uv_nodes[rec + 18u]);
}

// ---- store_tree: the iteration's trees into the model's arrays; next_iter ---------------------------
// 1 nodes · 2 ts · 3 trees (iterations, K, NN, TW) · 4 sizes (iterations, K) · 5 ctr · 6 edges
// · 7 fmiss. Thread per (output, node).
@group(0) @binding(1) var<storage, read> st_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> st_ts: array<u32>;
@group(0) @binding(3) var<storage, read_write> st_trees: array<u32>;
@group(0) @binding(4) var<storage, read_write> st_sizes: array<u32>;
@group(0) @binding(5) var<storage, read> st_ctr: array<u32>;
@group(0) @binding(6) var<storage, read> st_edges: array<f32>;
@group(0) @binding(7) var<storage, read> st_fmiss: array<u32>;

@compute @workgroup_size(256)
fn store_tree(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = row_id(wid, nwg, lid);
  if (i >= p.K * p.NN) { return; }
  let k = i / p.NN;
  let node = i % p.NN;
  let it = st_ctr[0];
  let used = st_ts[k * TS];
  if (node == 0u) { st_sizes[it * p.K + k] = used; }
  let out = ((it * p.K + k) * p.NN + node) * TW;
  let rec = node_at(k, node);
  var w = array<u32, 16>(NONE, 0u, 0u, NONE, NONE, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
  if (node < used) {
    w[7] = st_nodes[rec + 2u];
    if (st_nodes[rec] == SPLIT) {
      let f = st_nodes[rec + 7u];
      let cat = (st_fmiss[f] & CATEGORICAL) != 0u;
      w[0] = f;
      w[1] = bitcast<u32>(st_edges[f * p.B + st_nodes[rec + 8u]]);
      w[2] = (st_nodes[rec + 9u] * MISSING_LEFT) | select(0u, CATEGORY, cat);
      w[3] = st_nodes[rec + 10u];
      w[4] = st_nodes[rec + 11u];
      w[6] = st_nodes[rec + 12u];
      if (cat) {
        for (var j = 0u; j < CAT_WORDS; j++) { w[8u + j] = st_nodes[rec + 20u + j]; }
      }
    } else {
      w[5] = st_nodes[rec + 18u];
    }
  }
  for (var j = 0u; j < TW; j++) { st_trees[out + j] = w[j]; }
}

@group(0) @binding(1) var<storage, read_write> ni_ctr: array<u32>;

@compute @workgroup_size(1)
fn next_iter() {
  _ = p.n;  // every kernel binds its parameters at 0
  ni_ctr[0] += 1u;
}

// ---- loss: each workgroup's sum of its rows' losses, into the iteration's block -------------------
// 1 raw · 2 y · 3 out (iterations + 1, lw) · 4 ctr. Thread per row.
#include wg_reduce
@group(0) @binding(1) var<storage, read> ls_raw: array<f32>;
@group(0) @binding(2) var<storage, read> ls_y: array<f32>;
@group(0) @binding(3) var<storage, read_write> ls_out: array<f32>;
@group(0) @binding(4) var<storage, read> ls_ctr: array<u32>;

fn row_loss(r: u32) -> f32 {
  if (p.loss == SQUARED || p.loss == ABSOLUTE) {
    let d = ls_y[r] - ls_raw[r];
    if (p.loss == SQUARED) { return 0.5 * (d * d); }
    return abs(d);
  }
  if (p.K == 1u) {
    let z = ls_raw[r];
    let soft = max(z, 0.0) + log(1.0 + exp(-abs(z)));
    return soft - ls_y[r] * z;
  }
  var m = ls_raw[r * p.K];
  for (var k = 1u; k < p.K; k++) { m = max(m, ls_raw[r * p.K + k]); }
  var s = 0.0;
  for (var k = 0u; k < p.K; k++) { s = s + exp(ls_raw[r * p.K + k] - m); }
  return (m + log(s)) - ls_raw[r * p.K + u32(ls_y[r])];
}

@compute @workgroup_size(256)
fn loss(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let w = linear(wid, nwg);
  let r = w * WG + lid;
  var v = 0.0;
  if (r < p.n) { v = row_loss(r); }
  let total = wg_sum(v, lid);  // every invocation reaches it: no return above
  if (lid == 0u && w * WG < p.n) { ls_out[ls_ctr[0] * p.lw + p.loff + w] = total; }
}

// ---- predict: each row's raw scores through the model's trees --------------------------------------
// 1 X · 2 trees (nodes, TW) · 3 offs (I, K) first node of each tree · 4 base (K) · 5 out (n, K),
// staged: (n, I, K). Thread per row.
@group(0) @binding(2) var<storage, read> pr_trees: array<u32>;
@group(0) @binding(3) var<storage, read> pr_offs: array<u32>;
@group(0) @binding(4) var<storage, read> pr_base: array<f32>;
@group(0) @binding(5) var<storage, read_write> pr_out: array<f32>;

fn tree_value(first: u32, r: u32) -> f32 {
  var rec = first * TW;
  while (pr_trees[rec] != NONE) {
    let f = pr_trees[rec];
    let xb = x_bits(r, f);
    let x = bitcast<f32>(xb);
    let flags = pr_trees[rec + 2u];
    var left = (flags & MISSING_LEFT) != 0u;
    if (is_nan_bits(xb)) {
    } else if ((flags & CATEGORY) != 0u) {  // a category code: in the set, or else right
      left = x >= 0.0 && x < f32(32u * CAT_WORDS) && x == floor(x);
      if (left) {
        let c = u32(x);
        left = ((pr_trees[rec + 8u + c / 32u] >> (c % 32u)) & 1u) != 0u;
      }
    } else {
      left = x <= bitcast<f32>(pr_trees[rec + 1u]);
    }
    rec = (first + select(pr_trees[rec + 4u], pr_trees[rec + 3u], left)) * TW;
  }
  return bitcast<f32>(pr_trees[rec + 5u]);
}

@compute @workgroup_size(256)
fn predict(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lid: u32) {
  let r = row_id(wid, nwg, lid);
  if (r >= p.n) { return; }
  for (var k = 0u; k < p.K; k++) {
    var acc = pr_base[k];
    for (var it = 0u; it < p.I; it++) {
      acc = acc + tree_value(pr_offs[it * p.K + k], r);
      if (p.staged != 0u) { pr_out[(r * p.I + it) * p.K + k] = acc; }
    }
    if (p.staged == 0u) { pr_out[r * p.K + k] = acc; }
  }
}
