// Random forest, grown level by level for a batch of trees at once (py_core/forest/builder.py).
// References: py_core/kernels/forest/__init__.py. Every kernel takes the same uniform Params at binding 0
// (sort_pass: its own Sort; thresholds: Bins).
// Once a fit: check_finite (X, and targets for y), sample + sort_pass (each feature's sorted
// subsample, for the bin thresholds), bin_features, targets (y to fixed point).
// A level (or, where one level's histograms do not fit a buffer, each range of its slots):
// hist_clear (zero the built slots) -> hist_build (atomics, built slots) -> split_vary (derived
// slots = parent - sibling; per feature of an open slot: varies? rank?) -> split_rows (the same
// for SMALL slots, from their listed rows, and only the bins of the features they scan) ->
// split_scan (best split per selected feature) -> split_pick (per node); then alloc (number the
// children, give the open ones next-level slots, list room for SMALL ones) -> route_rows (and the
// lists). Histograms stay raw, bin by bin.
// On GPUs the _wg versions of split_vary, split_scan and split_pick do their work. After a
// batch's last level: finalize (its trees into prediction arrays), importance, oob; predict.
//
// Shapes (u32 unless said): X (rows, F) f32, or f64 as two words (lo, hi) when p.xd = 1: read
// through x_at, which rounds an f64 to f32 exactly as the CPU does · edges f32 (NB, 3): per bin
// its upper threshold, smallest and largest value · fmeta (F, 2): first global bin, bins · binned
// (n, FW): four 8-bit bins a word, or two 16-bit ones (p.b16: bin_word, bin_in) · target (n): i32 fixed-point y or class · state (T, n):
// slot << SLOT_SHIFT | bootstrap count · hist (T, S_h, NB, C): the slots [s_lo, s_lo + S_h) of the level
// (S_h = S: all of them) · slots (T, S, 4): node, flags, parent slot, end of its rows' list
// (SMALL) · list (T, n): rows of SMALL slots, row << SLOT_SHIFT | count · childmap (T, S, 2)
// · left (T, S, C) · cand (T, S_h, F, 4): the pass's slots · nodes (T, NC, 4 + C): the batch's
// trees (T of them, the first tree0), per node feature, bin, next bin, left child, stats[C] (the
// node's channels; a leaf's feature is LEAF) · meta (T_all, 2): nodes, open slots next level.
// Prediction arrays, a chunk of trees (the forest is one chunk or several): ptree (N, 3):
// feature, threshold bits, left child (LEAF in a leaf) · pval f32 (N, K) · offs (T_all): each
// tree's first node in its chunk. · flags (1): 1 X, 2 y not finite.
// Channels C: regression [sum lo, sum hi, weight, rows] (the sum is 64-bit two's complement in two
// u32, exact under atomics); classification [weight of class 0..K-1, rows].
// Grids are 2-D when large: workgroup id = wid.x + wid.y * nwg.x.

@group(0) @binding(0) var<uniform> p: Params;

#include tree_grid

#include pcg

#include tree_f64

// ---- exact_ops: div_rn and mid_down on given operands (their test) ---------------------------
// 1 ops (n, 3): a bits, b bits, w · 2 out (n, 2): div_rn(a, w) bits, mid_down(a, b) bits.
@group(0) @binding(1) var<storage, read> eo_ops: array<u32>;
@group(0) @binding(2) var<storage, read_write> eo_out: array<u32>;

@compute @workgroup_size(256)
fn exact_ops(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n) { return; }
  let a = bitcast<f32>(eo_ops[3u * i]);
  eo_out[2u * i] = bitcast<u32>(div_rn(a, eo_ops[3u * i + 2u]));
  eo_out[2u * i + 1u] = bitcast<u32>(mid_down(a, bitcast<f32>(eo_ops[3u * i + 1u])));
}

#include tree_x

#include tree_binned

// ---- check_finite: flags |= 1 when some X value is NaN or infinite (as f32) ------------------
// 1 X · 2 flags (1) atomic. Thread per value.
@group(0) @binding(2) var<storage, read_write> cf_flags: array<atomic<u32>>;

@compute @workgroup_size(256)
fn check_finite(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n * p.F) { return; }
  if ((x_bits(i / p.F, i % p.F) & 0x7F800000u) == 0x7F800000u) { atomicOr(&cf_flags[0], NOT_FINITE_X); }
}

#include tree_quantiles

// ---- bin_features: X -> binned, bin = number of the feature's thresholds below x -----------
// 1 X · 2 edges (NB, 3) f32 · 3 fmeta (F, 2) · 4 binned (n, FW) out. Thread per word.
@group(0) @binding(2) var<storage, read> bf_edges: array<f32>;
@group(0) @binding(3) var<storage, read> bf_fmeta: array<u32>;
@group(0) @binding(4) var<storage, read_write> bf_binned: array<u32>;

@compute @workgroup_size(256)
fn bin_features(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n * p.FW) { return; }
  let r = i / p.FW;
  let wd = i % p.FW;
  var word = 0u;
  let per = 4u >> p.b16;  // bins a word
  for (var q = 0u; q < per; q++) {
    let f = wd * per + q;
    if (f >= p.F) { break; }
    let x = x_at(r, f);
    let off = bf_fmeta[2u * f];
    var lo = 0u;
    var hi = bf_fmeta[2u * f + 1u] - 1u;  // thresholds of this feature
    while (lo < hi) {
      let m = (lo + hi) / 2u;
      if (bf_edges[3u * (off + m)] < x) { lo = m + 1u; } else { hi = m; }
    }
    word |= lo << ((8u << p.b16) * q);
  }
  bf_binned[i] = word;
}

// ---- targets: regression y (f64) to fixed point, round(y 2^ye) - ym, exact -------------------
// 1 y (n, 2): f64 words · 2 target (n) i32 out · 3 flags (1) atomic: |= 2 for a y not finite.
@group(0) @binding(1) var<storage, read> tg_y: array<u32>;
@group(0) @binding(2) var<storage, read_write> tg_out: array<u32>;
@group(0) @binding(3) var<storage, read_write> tg_flags: array<atomic<u32>>;

@compute @workgroup_size(256)
fn targets(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.n) { return; }
  let lo = tg_y[2u * i];
  let hi = tg_y[2u * i + 1u];
  if (((hi >> 20u) & 0x7FFu) == 0x7FFu) {
    atomicOr(&tg_flags[0], NOT_FINITE_Y);
    tg_out[i] = 0u;
    return;
  }
  tg_out[i] = sub64(f64_scaled_round(lo, hi, p.ye), vec2u(p.ym_lo, p.ym_hi)).x;
}

// ---- bootstrap: n draws with replacement per tree, counted into state (cleared before) ------
// 1 state (T, n) atomic. Thread per (tree, draw).
@group(0) @binding(1) var<storage, read_write> bs_state: array<atomic<u32>>;

@compute @workgroup_size(256)
fn bootstrap(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.n) { return; }
  if (p.boot == 0u) {
    atomicStore(&bs_state[i], 1u);
    return;
  }
  let t = i / p.n;
  let row = hash3(p.seed, 2u * (p.tree0 + t), i % p.n) % p.n;
  atomicAdd(&bs_state[t * p.n + row], 1u);
}

// ---- init_trees: root slot open and built, root node a leaf for now ------------------------
// 1 slots (T, S, 4) · 2 nodes · 3 meta. Thread per (tree, slot).
@group(0) @binding(1) var<storage, read_write> it_slots: array<u32>;
@group(0) @binding(2) var<storage, read_write> it_nodes: array<u32>;
@group(0) @binding(3) var<storage, read_write> it_meta: array<u32>;

@compute @workgroup_size(256)
fn init_trees(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.S) { return; }
  let s = i % p.S;
  it_slots[4u * i] = 0u;
  it_slots[4u * i + 1u] = select(0u, OPEN | BUILT, s == 0u);
  it_slots[4u * i + 2u] = 0u;
  it_slots[4u * i + 3u] = 0u;
  if (s == 0u) {
    let tree = p.tree0 + i / p.S;
    let rec = i / p.S * p.NC * (4u + p.C);
    it_nodes[rec] = LEAF;
    for (var c = 1u; c < 4u + p.C; c++) { it_nodes[rec + c] = 0u; }
    it_meta[2u * tree] = 1u;
    it_meta[2u * tree + 1u] = 1u;
  }
}

#include tree_hist

#include tree_split

#include tree_alloc

// ---- route_rows: each row of a split node moves to its child's slot, or rests (DONE) ----------
// 1 binned (n, FW) · 2 state (T, n) · 3 slots (T, S, 4) · 4 nodes · 5 childmap (T, S, 2)
// · 6 the next level's slots (T, S, 4) atomic · 7 list (T, n). A row that moves to a SMALL slot
// is listed there as row << SLOT_SHIFT | count, at the slot's word 3, which it moves on by one
// (the order within a slot's list is the atomics'; what split_rows sums from it is not).
@group(0) @binding(1) var<storage, read> pa_binned: array<u32>;
@group(0) @binding(2) var<storage, read_write> pa_state: array<u32>;
@group(0) @binding(3) var<storage, read> pa_slots: array<u32>;
@group(0) @binding(4) var<storage, read> pa_nodes: array<u32>;
@group(0) @binding(5) var<storage, read> pa_childmap: array<u32>;
@group(0) @binding(6) var<storage, read_write> pa_next: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> pa_list: array<u32>;

@compute @workgroup_size(256)
fn route_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
             @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.n) { return; }
  let st = pa_state[i];
  let w = st & COUNT_MASK;
  let slot = st >> SLOT_SHIFT;
  if (w == 0u || slot == DONE) { return; }
  let t = i / p.n;
  let r = i % p.n;
  let sl = (t * p.S + slot) * 4u;
  var next = DONE;
  if ((pa_slots[sl + 1u] & OPEN) != 0u) {
    let rec = (t * p.NC + pa_slots[sl]) * (4u + p.C);
    let f = pa_nodes[rec];
    if (f != LEAF) {
      let b = bin_in(pa_binned[r * p.FW + bin_word(f)], f);
      next = pa_childmap[(t * p.S + slot) * 2u + select(0u, 1u, b > pa_nodes[rec + 1u])];
    }
  }
  pa_state[i] = (next << SLOT_SHIFT) | w;
  if (p.small != 0u && next != DONE && (atomicLoad(&pa_next[(t * p.S + next) * 4u + 1u]) & SMALL) != 0u) {
    pa_list[t * p.n + atomicAdd(&pa_next[(t * p.S + next) * 4u + 3u], 1u)] = (r << SLOT_SHIFT) | w;
  }
}

#include tree_predict
