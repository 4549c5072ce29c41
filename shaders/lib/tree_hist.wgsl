// Histograms of a level's slots: clear and build (integer atomics, exact sums).

// == tree_hist
#include tree_grid
#include tree_binned
// A level's histograms are numbered: by slot, or in deep trees (p.row_scan: their SMALL slots all
// split from their rows, with no histogram, by split_small) by the level's histogram slots alone, its BUILT and
// derived ones, which alloc numbers in slot order (the number in word 3 of such a slot, the slot
// of each number in `hmap`): a deep level's passes are as many as its histograms need, not its
// slots. Those numbered [s_lo, s_lo + pass_slots()) have histograms in this pass; number h of
// tree t sits at hist_slot(t, h).
fn numbered() -> bool { return p.row_scan != 0u && p.small <= p.row_scan; }

// The level's (next: the next level's) histogram slots, at most: all its slots, or where
// numbered p.H_cur (p.H_next), the host's bound (builder.Grower._level).
fn hist_slots(next: bool) -> u32 {
  if (numbered()) { return select(p.H_cur, p.H_next, next); }
  return select(p.S_cur, p.S_next, next);
}

fn pass_slots() -> u32 { return min(p.S_h, hist_slots(false) - p.s_lo); }

fn hist_slot(t: u32, h: u32) -> u32 { return t * p.S_h + h - p.s_lo; }

// Is slot s (its flags and word 3) the one of histogram number h at this level? Numbers past
// the level's last are still in hmap from an older level (or batch): their slot is not.
fn numbered_as(s: u32, flags: u32, word3: u32, h: u32) -> bool {
  return s < p.S_cur && flags != 0u && (flags & SMALL) == 0u && word3 == h;
}

// ---- hist_clear: zero the histograms of this pass's built slots -----------------------------
// 1 slots (T, S, 4) · 2 hist (T, S_h, NB, C) · 3 hmap (T, S): the slot of each histogram number
// (numbered levels). Workgroup of 256 per (tree, HC_SLOTS slots of the pass): most slots of a
// deep level are empty, and a workgroup that only finds that out still costs a CPU adapter
// microseconds.
@group(0) @binding(1) var<storage, read> hc_slots: array<u32>;
@group(0) @binding(2) var<storage, read_write> hc_hist: array<u32>;
@group(0) @binding(3) var<storage, read> hc_hmap: array<u32>;

fn clear_slot(t: u32, h: u32) -> u32 {  // the slot of histogram number h; LEAF: none
  if (!numbered()) { return h; }
  let s = hc_hmap[t * p.S + h];
  if (s >= p.S_cur) { return LEAF; }
  let sl = (t * p.S + s) * 4u;
  return select(LEAF, s, numbered_as(s, hc_slots[sl + 1u], hc_slots[sl + 3u], h));
}

@compute @workgroup_size(256)
fn hist_clear(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let sp = pass_slots();
  let groups = (sp + HC_SLOTS - 1u) / HC_SLOTS;
  if (id >= p.T * groups) { return; }
  let t = id / groups;
  let W = p.NB * p.C;
  for (var ls = (id % groups) * HC_SLOTS; ls < min(sp, (id % groups + 1u) * HC_SLOTS); ls++) {
    let h = p.s_lo + ls;
    let s = clear_slot(t, h);
    if (s == LEAF || (hc_slots[(t * p.S + s) * 4u + 1u] & BUILT) == 0u) { continue; }
    let base = hist_slot(t, h) * W;
    for (var e = lid; e < W; e += 256u) { hc_hist[base + e] = 0u; }
  }
}

// hist_clear_wg (GPUs): a workgroup per (tree, slot of the pass, run of its words): a run of
// HC_WORDS, so that a level's few slots fill the GPU rather than a workgroup looping over 8 of
// them, or longer where the pass has so many slots that WG_TREE workgroups a tree cover it (a
// deep level: most of its slots need no clearing, SMALL or derived). As wg_items' clear_runs.
fn clear_runs(W: u32, sp: u32) -> u32 {
  return max(1u, min((W + HC_WORDS - 1u) / HC_WORDS, (WG_TREE + sp - 1u) / sp));
}

@compute @workgroup_size(256)
fn hist_clear_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let W = p.NB * p.C;
  let sp = pass_slots();
  let runs = clear_runs(W, sp);
  let len = (W + runs - 1u) / runs;  // words a run
  if (id >= p.T * sp * runs) { return; }
  let t = id / runs / sp;
  let h = p.s_lo + id / runs % sp;
  let s = clear_slot(t, h);
  if (s == LEAF || (hc_slots[(t * p.S + s) * 4u + 1u] & BUILT) == 0u) { return; }
  let base = hist_slot(t, h) * W;
  let end = min(W, (id % runs + 1u) * len);
  for (var e = (id % runs) * len + lid; e < end; e += 256u) { hc_hist[base + e] = 0u; }
}

// ---- hist_build: each in-bag row of a built slot adds itself to (slot, feature, bin) ----------
// 1 binned (n, FW) · 2 fmeta (F, 2) · 3 target (n) · 4 state (T, n) · 5 slots (T, S, 4)
// · 6 hist (T, S_h, NB, C) atomic. Thread per (tree, row); a row of a numbered level finds its
// slot's histogram number in the slot's word 3.
@group(0) @binding(1) var<storage, read> hb_binned: array<u32>;
@group(0) @binding(2) var<storage, read> hb_fmeta: array<u32>;
@group(0) @binding(3) var<storage, read> hb_target: array<u32>;
@group(0) @binding(4) var<storage, read> hb_state: array<u32>;
@group(0) @binding(5) var<storage, read> hb_slots: array<u32>;
@group(0) @binding(6) var<storage, read_write> hb_hist: array<atomic<u32>>;

// A row's regression channel as the histograms add it: w * y as a 64-bit two's-complement pair
// (lo, hi) (|y| < 2^23, w < 256: no overflow in i32); (0, 0) for classes, which add w alone.
fn weighted_target(tv: u32, w: u32) -> vec2u {
  if (p.crit != MSE) { return vec2u(0u); }
  let v = bitcast<i32>(tv) * i32(w);
  return vec2u(bitcast<u32>(v), select(0u, 0xFFFFFFFFu, v < 0));
}

@compute @workgroup_size(256)
fn hist_build(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.n) { return; }
  let w = hb_state[i] & COUNT_MASK;
  let slot = hb_state[i] >> SLOT_SHIFT;
  if (w == 0u || slot == DONE) { return; }
  let t = i / p.n;
  let r = i % p.n;
  let sl = (t * p.S + slot) * 4u;
  let h = select(slot, hb_slots[sl + 3u], numbered());
  if (h < p.s_lo || h >= p.s_lo + pass_slots() || (hb_slots[sl + 1u] & BUILT) == 0u) { return; }
  let base = hist_slot(t, h) * p.NB;
  let tv = hb_target[r];
  let wy = weighted_target(tv, w);
  for (var f = 0u; f < p.F; f++) {
    let b = bin_in(hb_binned[r * p.FW + bin_word(f)], f);
    add_row((base + hb_fmeta[2u * f] + b) * p.C, tv, w, wy);
  }
}

// A row (target word tv, bootstrap count w, wy = weighted_target(tv, w)) into the bin whose
// channels start at word h.
fn add_row(h: u32, tv: u32, w: u32, wy: vec2u) {
  if (p.crit == MSE) {
    let old = atomicAdd(&hb_hist[h], wy.x);
    let up = wy.y + select(0u, 1u, old + wy.x < old);  // carry out of the low word
    if (up != 0u) { atomicAdd(&hb_hist[h + 1u], up); }
    atomicAdd(&hb_hist[h + 2u], w);
    atomicAdd(&hb_hist[h + 3u], 1u);
  } else {
    atomicAdd(&hb_hist[h + tv], w);
    atomicAdd(&hb_hist[h + p.C - 1u], 1u);
  }
}

// hist_build_wg (GPUs, the levels whose passes hold a slot or two a tree: the root, level 1): the
// same sums, a workgroup per (tree, slot of the pass, group of features, run of HB_ROWS rows)
// (binding 8: hmap, as hist_clear's 3).
// Its rows add into workgroup memory (the group's words, at most HB_WORDS; binding 7: the
// number of groups G, then each group's first feature and end), then each non-zero word goes to the slot's histogram with
// one global atomic: where every row of the tree lands in one slot, many fewer of them on the
// same words. Integer sums, so the same words; regression's 64-bit sums carry as in hist_build.
@group(0) @binding(7) var<storage, read> hb_groups: array<u32>;
@group(0) @binding(8) var<storage, read> hb_hmap: array<u32>;
var<workgroup> hb_wg: array<atomic<u32>, HB_WORDS>;

@compute @workgroup_size(256)
fn hist_build_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let G = hb_groups[0];
  let runs = (p.n + HB_ROWS - 1u) / HB_ROWS;
  let sp = pass_slots();
  if (id >= p.T * sp * G * runs) { return; }
  let run = id % runs;
  let g = id / runs % G;
  let t = id / runs / G / sp;
  let h = p.s_lo + id / runs / G % sp;
  var slot = h;
  if (numbered()) {
    slot = hb_hmap[t * p.S + h];
    if (slot >= p.S_cur) { return; }
    let sl = (t * p.S + slot) * 4u;
    if (!numbered_as(slot, hb_slots[sl + 1u], hb_slots[sl + 3u], h)) { return; }
  }
  if ((hb_slots[(t * p.S + slot) * 4u + 1u] & BUILT) == 0u) { return; }
  let f0 = hb_groups[2u * g + 1u];
  let f1 = hb_groups[2u * g + 2u];
  let w0 = hb_fmeta[2u * f0];  // the group's first bin
  let nw = (hb_fmeta[2u * (f1 - 1u)] + hb_fmeta[2u * f1 - 1u] - w0) * p.C;  // its words
  for (var e = lid; e < nw; e += 256u) { atomicStore(&hb_wg[e], 0u); }
  workgroupBarrier();
  let r1 = min(p.n, (run + 1u) * HB_ROWS);
  for (var r = run * HB_ROWS + lid; r < r1; r += 256u) {
    let st = hb_state[t * p.n + r];
    let w = st & COUNT_MASK;
    if (w == 0u || (st >> SLOT_SHIFT) != slot) { continue; }
    let tv = hb_target[r];
    let wy = weighted_target(tv, w);
    let lo = wy.x;
    let hi = wy.y;
    for (var f = f0; f < f1; f++) {
      let b = bin_in(hb_binned[r * p.FW + bin_word(f)], f);
      let h = (hb_fmeta[2u * f] - w0 + b) * p.C;
      if (p.crit == MSE) {
        let old = atomicAdd(&hb_wg[h], lo);
        let up = hi + select(0u, 1u, old + lo < old);
        if (up != 0u) { atomicAdd(&hb_wg[h + 1u], up); }
        atomicAdd(&hb_wg[h + 2u], w);
        atomicAdd(&hb_wg[h + 3u], 1u);
      } else {
        atomicAdd(&hb_wg[h + tv], w);
        atomicAdd(&hb_wg[h + p.C - 1u], 1u);
      }
    }
  }
  workgroupBarrier();
  let base = (hist_slot(t, h) * p.NB + w0) * p.C;
  if (p.crit == MSE) {  // a thread a bin: the 64-bit sum's carry out of the low word
    for (var j = lid; j < nw / 4u; j += 256u) {
      let h = 4u * j;
      let lo = atomicLoad(&hb_wg[h]);
      var hi = atomicLoad(&hb_wg[h + 1u]);
      if (lo != 0u) {
        let old = atomicAdd(&hb_hist[base + h], lo);
        hi += select(0u, 1u, old + lo < old);
      }
      if (hi != 0u) { atomicAdd(&hb_hist[base + h + 1u], hi); }
      for (var c = 2u; c < 4u; c++) {
        let v = atomicLoad(&hb_wg[h + c]);
        if (v != 0u) { atomicAdd(&hb_hist[base + h + c], v); }
      }
    }
  } else {
    for (var e = lid; e < nw; e += 256u) {
      let v = atomicLoad(&hb_wg[e]);
      if (v != 0u) { atomicAdd(&hb_hist[base + e], v); }
    }
  }
}
