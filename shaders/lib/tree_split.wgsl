// A level's splits from its histograms: vary, scan, pick (and the _wg versions, split_rows).

// == tree_split
#include tree_grid
#include pcg
#include tree_f64
#include tree_binned
#include tree_hist
// ---- split_vary, split_scan, split_pick: a level's splits, from its raw histograms ------------
// 1 fmeta · 2 slots · 3 hist · 4 nodes · 5 cand (T, S_h, F, 4): score bits, bin, next bin (LEAF:
// no split), rank << RANK_SHIFT | VARIES if the feature varies in the node · 6 xlogx (n + 1)
// f32: x ln x, for entropy · 7 hist_prev (the parent level's); split_pick: left (T, S, C), the
// left child's channels · 8 hmap (T, S): the slot of each histogram number (numbered levels). Histograms stay raw (bin j holds bin j's rows alone), so parent -
// sibling is exact word by word, and a feature's bins are summed along only where a node scans
// that feature (a few of them: max_features), not for every feature of every slot.
// split_vary: thread (_wg: workgroup) per (tree, slot of the pass, feature). An open slot not
// built by atomics gets this feature's bins as parent - sibling; then the feature's rank in the
// node's random permutation, with VARIES when two or more of its bins hold rows. At depth 0 the
// root's totals (feature 0's bins summed) go into its node record, where alloc puts every other
// node's: from here on a node's totals are read there.
// split_scan: the same grid. For a node that may split (rows, depth, purity: its record), the
// features that vary in the node among the first max_features of the permutation, constant ones
// counted; if none of those varies, the first that does (scikit-learn's splitter counts every
// feature it draws, constant or not, and draws past max_features only until one varies:
// sklearn/tree/_splitter.pyx). Candidates: a split after each
// non-empty bin b with rows after it, the right side starting at the next non-empty bin b2
// (only such splits differ). From the left side's sums over bins 0..b and the node's totals, a
// score (larger is better, f32 in this order):
//   squared error  sl*sl/wl + sr*sr/wr      (sl, sr: sums of w*y, wl, wr: weights)
//   gini           (sum_k cl_k*cl_k)/wl + (sum_k cr_k*cr_k)/wr, the sums exact integers
//   entropy        sum_k xlogx(cl_k) + sum_k xlogx(cr_k) - xlogx(wl) - xlogx(wr)
// Each division is div_rn's (correctly rounded), so every GPU gets the same scores. Ties go to
// the lowest bin.
// split_pick: thread (_wg: workgroup) per (tree, slot of the pass): the slot's split among its
// features' candidates, and the left child's channels summed over the split feature's bins.
@group(0) @binding(1) var<storage, read> sp_fmeta: array<u32>;
@group(0) @binding(2) var<storage, read> sp_slots: array<u32>;
@group(0) @binding(3) var<storage, read_write> sp_hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> sp_nodes: array<u32>;
@group(0) @binding(5) var<storage, read_write> sp_cand: array<u32>;
@group(0) @binding(6) var<storage, read> sp_xlogx: array<f32>;
@group(0) @binding(7) var<storage, read> sp_prev: array<u32>;
@group(0) @binding(7) var<storage, read_write> sp_left: array<u32>;
@group(0) @binding(8) var<storage, read> sp_hmap: array<u32>;  // hist_clear's hmap (numbered levels)

struct Best { score: f32, f: u32, b: u32, b2: u32 }

// Lanes: a channel a lane, but regression's 64-bit sum (words 0 and 1) is one lane, lane 0.
fn lanes() -> u32 { return select(p.C, p.C - 1u, p.crit == MSE); }
fn lane_wide(lane: u32) -> bool { return p.crit == MSE && lane == 0u; }
fn lane_word(lane: u32) -> u32 { return select(lane, lane + 1u, p.crit == MSE && lane > 0u); }

// Lane `lane` of the channels from word h of `sp_hist` (a bin), as a 64-bit value or a u32 in .x.
fn lane_at(h: u32, lane: u32) -> vec2u {
  let w = h + lane_word(lane);
  if (lane_wide(lane)) { return vec2u(sp_hist[w], sp_hist[w + 1u]); }
  return vec2u(sp_hist[w], 0u);
}

fn lane_put(h: u32, lane: u32, v: vec2u) {  // the inverse of lane_at
  let w = h + lane_word(lane);
  sp_hist[w] = v.x;
  if (lane_wide(lane)) { sp_hist[w + 1u] = v.y; }
}

fn lane_add(a: vec2u, b: vec2u, lane: u32) -> vec2u {
  if (lane_wide(lane)) { return add64(a, b); }
  return vec2u(a.x + b.x, 0u);
}

// Lane `lane` summed over bins [j0, j1) of a feature whose first bin is at word h0.
fn lane_sum(h0: u32, j0: u32, j1: u32, lane: u32) -> vec2u {
  var sum = vec2u(0u);
  for (var j = j0; j < j1; j++) { sum = lane_add(sum, lane_at(h0 + j * p.C, lane), lane); }
  return sum;
}

// Where slot s of tree t has its histogram and candidates in this pass: by its histogram number
// where the level's are numbered (not a SMALL slot: that one's candidates by its slot, in the
// passes of split_rows and split_small over the level's slots).
fn hslot(t: u32, s: u32) -> u32 {
  let sl = (t * p.S + s) * 4u;
  if (numbered() && (sp_slots[sl + 1u] & SMALL) == 0u) { return hist_slot(t, sp_slots[sl + 3u]); }
  return hist_slot(t, s);
}

// The slot of item i of this pass's histograms (split_vary, split_scan, split_pick); LEAF: none
// (a number past the level's last).
fn item_slot(t: u32, i: u32) -> u32 {
  let h = p.s_lo + i;
  if (!numbered()) { return h; }
  let s = sp_hmap[t * p.S + h];
  if (s >= p.S_cur) { return LEAF; }
  let sl = (t * p.S + s) * 4u;
  return select(LEAF, s, numbered_as(s, sp_slots[sl + 1u], sp_slots[sl + 3u], h));
}

// The slots of this pass of split_rows and split_small: [s_lo, s_lo + slot_pass()).
fn slot_pass() -> u32 { return min(p.S_h, p.S_cur - p.s_lo); }

fn slot_rec(t: u32, s: u32) -> u32 {  // the node record of slot s of tree t (of the batch)
  return (t * p.NC + sp_slots[(t * p.S + s) * 4u]) * (4u + p.C);
}

// A random permutation of the features per key, with O(1) state: p.pr rounds of swap-or-not
// (Hoang, Morris and Rogaway) on [0, F). Round i pairs x with (k_i - x) mod F and swaps the pair
// or not by a bit of the pair; each round is its own inverse. (A 4-round Feistel network walked
// down to F drew some features up to 1.6x as often as others among a node's first max_features.)
fn swap_or_not(key: u32, i: u32, x: u32) -> u32 {
  let h = pcg(key + i);
  return swap_round(vec2u(h, h % p.F), x);
}

fn swap_round(h: vec2u, x: u32) -> u32 {  // h: the round's hash, and that mod F
  let y = (h.y + p.F - x) % p.F;
  if ((pcg(h.x ^ max(x, y)) & 1u) == 1u) { return y; }
  return x;
}

fn feature_rank(key: u32, f: u32) -> u32 {  // feature f's rank in the node's permutation
  var x = f;
  for (var i = 0u; i < p.pr; i++) { x = swap_or_not(key, i, x); }
  return x;
}

fn rank_feature(key: u32, r: u32) -> u32 {  // the inverse: the feature of rank r (rounds undone)
  var x = r;
  for (var i = p.pr; i > 0u; i--) { x = swap_or_not(key, i - 1u, x); }
  return x;
}

// May the node whose totals start at word `tot` of sp_nodes split? Rows, depth, purity.
fn eligible(tot: u32) -> bool {
  let cnt = sp_nodes[tot + p.C - 1u];
  if (cnt < p.mss || cnt < 2u * p.msl || p.depth >= p.max_depth) { return false; }
  if (p.crit != MSE) {
    var w = 0u;
    for (var k = 0u; k < p.K; k++) { w += sp_nodes[tot + k]; }
    for (var k = 0u; k < p.K; k++) {
      if (sp_nodes[tot + k] == w) { return false; }  // pure
    }
  }
  return true;
}

// The root's totals (depth 0) into its node record: feature 0's bins summed, the lanes c0,
// c0 + step, ...
fn root_totals(t: u32, s: u32, c0: u32, step: u32) {
  let rec = slot_rec(t, s) + 4u;
  let h0 = (hslot(t, s) * p.NB + sp_fmeta[0]) * p.C;
  for (var lane = c0; lane < lanes(); lane += step) {
    let sum = lane_sum(h0, 0u, sp_fmeta[1], lane);
    sp_nodes[rec + lane_word(lane)] = sum.x;
    if (lane_wide(lane)) { sp_nodes[rec + 1u] = sum.y; }
  }
}

// The key of the node in slot s of tree t: its permutation of the features (feature_rank).
fn node_key(t: u32, s: u32) -> u32 {
  return hash3(p.seed, 2u * (p.tree0 + t) + 1u, sp_slots[(t * p.S + s) * 4u]);
}

// Feature f of open slot s, its bins final: its candidate reset (no split yet) and its rank in
// the node's permutation (`rank`: feature_rank's), with VARIES when v = 1 (it varies in the node).
fn finish_vary(t: u32, s: u32, f: u32, v: u32, rank: u32) {
  let e = 4u * (hslot(t, s) * p.F + f);
  sp_cand[e] = 0u;
  sp_cand[e + 1u] = 0u;
  sp_cand[e + 2u] = LEAF;
  sp_cand[e + 3u] = (rank << RANK_SHIFT) | select(0u, VARIES, v == 1u);
}

// A feature's words e0, e0 + step, .. below e1 (from word `me` of sp_hist) made parent -
// sibling (from word `par` of sp_prev, `sib` of sp_hist); returns how many bins hold rows.
fn derive_bins(me: u32, sib: u32, par: u32, e0: u32, e1: u32, step: u32) -> u32 {
  let cc = p.C - 1u;
  var nonempty = 0u;
  for (var e = e0; e < e1; e += step) {
    let c = e % p.C;
    var v = sp_prev[par + e] - sp_hist[sib + e];
    if (p.crit == MSE && c == 1u && sp_prev[par + e - 1u] < sp_hist[sib + e - 1u]) { v -= 1u; }  // borrow
    sp_hist[me + e] = v;
    if (c == cc && v != 0u) { nonempty += 1u; }
  }
  return nonempty;
}

// How many of a feature's bins j0, j0 + step, ... (from word h0) hold rows.
fn count_nonempty(h0: u32, nb: u32, j0: u32, step: u32) -> u32 {
  var nonempty = 0u;
  for (var j = j0; j < nb; j += step) {
    if (sp_hist[h0 + j * p.C + p.C - 1u] != 0u) { nonempty += 1u; }
  }
  return nonempty;
}

// Words of feature f's bins in slot s of tree t: (first word, bins).
fn feature_words(t: u32, s: u32, f: u32) -> vec2u {
  return vec2u((hslot(t, s) * p.NB + sp_fmeta[2u * f]) * p.C, sp_fmeta[2u * f + 1u]);
}

@compute @workgroup_size(256)
fn split_vary(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // the bindings of split_scan, all of them used
  let i = linear(wid, nwg) * 256u + lid;
  let sp = pass_slots();
  if (i >= p.T * sp * p.F) { return; }
  let f = i % p.F;
  let t = i / p.F / sp;
  let s = item_slot(t, i / p.F % sp);
  if (s == LEAF) { return; }
  let sl = (t * p.S + s) * 4u;
  let flags = sp_slots[sl + 1u];
  if ((flags & OPEN) == 0u || (flags & SMALL) != 0u) { return; }  // SMALL: split_rows
  let fw = feature_words(t, s, f);
  var nonempty = 0u;
  if ((flags & BUILT) == 0u) {
    let d = fw.x - hslot(t, s) * p.NB * p.C;  // the feature's offset in a slot
    nonempty = derive_bins(fw.x, hslot(t, s ^ 1u) * p.NB * p.C + d,
                           (t * p.S_h + sp_slots[sl + 2u]) * p.NB * p.C + d, 0u, fw.y * p.C, 1u);
  } else {
    nonempty = count_nonempty(fw.x, fw.y, 0u, 1u);
    if (p.depth == 0u && f == 0u) { root_totals(t, s, 0u, 1u); }
  }
  finish_vary(t, s, f, select(0u, 1u, nonempty >= 2u), feature_rank(node_key(t, s), f));
}

// Is a feature of rank r that varies in the node one it scans? Its rank is below mf (the first
// max_features of the node's permutation, constant features counted), or no feature before it
// varies (none of the first mf does: scikit-learn then draws on until one varies).
fn selected(t: u32, s: u32, r: u32) -> bool {
  if (r < p.mf) { return true; }
  let cbase = hslot(t, s) * p.F;
  for (var g = 0u; g < p.F; g++) {
    let w = sp_cand[4u * (cbase + g) + 3u];
    if ((w & VARIES) != 0u && (w >> RANK_SHIFT) < r) { return false; }
  }
  return true;
}

// Does split_scan scan feature f of open slot s? The node may split, f varies and is selected.
fn scans(t: u32, s: u32, f: u32) -> bool {
  let w = sp_cand[4u * (hslot(t, s) * p.F + f) + 3u];
  return eligible(slot_rec(t, s) + 4u) && (w & VARIES) != 0u && selected(t, s, w >> RANK_SHIFT);
}

// A candidate's left side, summed over bins 0..b: what its score needs. s: the sum of w*y
// (64-bit; gini: sum_k cl_k^2), r: gini's sum_k cr_k^2, w: weight, a: entropy's sum of xlogx
// terms so far, rows: rows.
struct Left { s: vec2u, r: vec2u, w: u32, a: f32, rows: u32 }

// Lane `lane`'s running sum `run` (over bins 0..b) into a candidate's left side; ps: entropy's
// second pass (the right side's terms, class lanes only). The node's totals at word rec + 4.
fn take_lane(l0: Left, lane: u32, run: vec2u, ps: u32, rec: u32) -> Left {
  var l = l0;
  if (p.crit == MSE) {
    if (lane == 0u) { l.s = run; } else if (lane == 1u) { l.w = run.x; } else { l.rows = run.x; }
    return l;
  }
  if (lane == p.K) {
    l.rows = run.x;
    return l;
  }
  let cl = run.x;
  let cr = sp_nodes[rec + 4u + lane] - cl;
  if (p.crit == GINI) {
    l.s = add64(l.s, mul64(cl, cl));
    l.r = add64(l.r, mul64(cr, cr));
    l.w += cl;
  } else if (ps == 0u) {
    l.a = l.a + sp_xlogx[cl];
    l.w += cl;
  } else {
    l.a = l.a + sp_xlogx[cr];
  }
  return l;
}

// The score of a split whose left side is l, in a node with totals at word rec + 4.
fn left_score(l: Left, rec: u32) -> f32 {
  let tot = rec + 4u;
  if (p.crit == MSE) {
    let tlo = sp_nodes[tot];
    let sl = i64_to_f32(l.s.x, l.s.y);
    let sr = i64_to_f32(tlo - l.s.x, sp_nodes[tot + 1u] - l.s.y - select(0u, 1u, tlo < l.s.x));
    return div_rn(sl * sl, l.w) + div_rn(sr * sr, sp_nodes[tot + 2u] - l.w);
  }
  var w = 0u;
  for (var k = 0u; k < p.K; k++) { w += sp_nodes[tot + k]; }
  if (p.crit == GINI) {
    return div_rn(i64_to_f32(l.s.x, l.s.y), l.w) + div_rn(i64_to_f32(l.r.x, l.r.y), w - l.w);
  }
  let a = l.a - sp_xlogx[l.w];
  return a - sp_xlogx[w - l.w];
}

// Is bin j (its raw rows `raw`, `upto` rows in bins 0..j, of the node's `total`) a candidate?
fn candidate(raw: u32, upto: u32, total: u32) -> bool {
  return raw != 0u && upto < total && upto >= p.msl && total - upto >= p.msl;
}

// A feature's nb bins from word h0 made running sums along the bins, in place (undo: back to
// raw), lane by lane, by one thread.
fn sum_bins(h0: u32, nb: u32, undo: bool) {
  for (var i = 1u; i < nb; i++) {
    let j = select(i, nb - i, undo);  // undo: from the last bin down
    for (var lane = 0u; lane < lanes(); lane++) {
      let a = lane_at(h0 + j * p.C, lane);
      let b = lane_at(h0 + (j - 1u) * p.C, lane);
      var v = lane_add(a, b, lane);
      if (undo) { v = select(vec2u(a.x - b.x, 0u), sub64(a, b), lane_wide(lane)); }
      lane_put(h0 + j * p.C, lane, v);
    }
  }
}

@compute @workgroup_size(256)
fn split_scan(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  _ = &sp_prev;  // the bindings of split_vary, all of them used
  let i = linear(wid, nwg) * 256u + lid;
  let sp = pass_slots();
  if (i >= p.T * sp * p.F) { return; }
  let f = i % p.F;
  let t = i / p.F / sp;
  let s = item_slot(t, i / p.F % sp);
  if (s == LEAF) { return; }
  if ((sp_slots[(t * p.S + s) * 4u + 1u] & OPEN) == 0u || rows_scanned(t, s) || !scans(t, s, f)) { return; }
  scan_feature(t, s, f);
}

// A feature's best split (if any) into its candidate: words e..e+2 only (other threads read e+3).
fn put_candidate(t: u32, s: u32, f: u32, best: Best) {
  if (best.f == LEAF) { return; }
  let e = 4u * (hslot(t, s) * p.F + f);
  sp_cand[e] = bitcast<u32>(best.score);
  sp_cand[e + 1u] = best.b;
  sp_cand[e + 2u] = best.b2;
}

// Feature f's best split in slot s of tree t (a feature it scans) into its candidate, by one
// thread: split_scan's, and split_scan_wg's for a feature of more bins than its workgroup holds.
fn scan_feature(t: u32, s: u32, f: u32) {
  // One thread, every bin. Regression: the running sums of its three lanes in registers.
  // Classes: the feature's bins made running sums in place, each candidate scored from them,
  // then the bins made raw again (exact: integers mod 2^32). No per-bin arrays: a CPU adapter
  // runs this, where a thread's large private arrays are slow.
  let fw = feature_words(t, s, f);
  let h0 = fw.x;
  let nb = fw.y;
  let rec = slot_rec(t, s);
  let mse = p.crit == MSE;
  if (!mse) { sum_bins(h0, nb, false); }
  let total = sp_nodes[rec + 4u + p.C - 1u];
  let cc = p.C - 1u;
  var best = Best(0.0, LEAF, 0u, 0u);
  var run = Left(vec2u(0u), vec2u(0u), 0u, 0.0, 0u);  // regression: the bins so far
  var before = 0u;  // rows in the bins before j
  for (var j = 0u; j < nb; j++) {
    let h = h0 + j * p.C;
    if (mse) {
      run.s = add64(run.s, vec2u(sp_hist[h], sp_hist[h + 1u]));
      run.w += sp_hist[h + 2u];
      run.rows += sp_hist[h + 3u];
    } else {
      run.rows = sp_hist[h + cc];
    }
    let upto = run.rows;
    if (upto == before) { continue; }  // empty
    before = upto;
    if (best.f != LEAF && best.b2 == LEAF) { best.b2 = j; }  // the best's right side starts here
    if (candidate(1u, upto, total)) {  // 1u: bin j holds rows (empty ones were skipped above)
      var l = run;
      if (!mse) {
        l = Left(vec2u(0u), vec2u(0u), 0u, 0.0, 0u);
        for (var lane = 0u; lane < lanes(); lane++) { l = take_lane(l, lane, lane_at(h, lane), 0u, rec); }
        if (p.crit == ENTROPY) {  // the right side's terms after every class's left ones
          for (var k = 0u; k < p.K; k++) { l = take_lane(l, k, lane_at(h, k), 1u, rec); }
        }
      }
      let sc = left_score(l, rec);
      if (best.f == LEAF || sc > best.score) { best = Best(sc, f, j, LEAF); }
    }
    if (upto == total) { break; }  // the rest is empty (deep nodes hold few rows)
  }
  if (!mse) { sum_bins(h0, nb, true); }
  put_candidate(t, s, f, best);
}

// The slot's split among its features' candidates, written to its node record: (feature, bin,
// next bin), LEAF: none. Ties: the feature first in the node's random permutation, as
// scikit-learn keeps the first best in its random order of features. The features scanned were
// those that vary among the first max_features of that order (or the first that varies, as
// `selected`); none varies: a leaf.
fn pick(t: u32, s: u32) -> vec4u {
  let none = vec4u(LEAF, 0u, 0u, 0u);
  if ((sp_slots[(t * p.S + s) * 4u + 1u] & OPEN) == 0u) { return none; }
  let rec = slot_rec(t, s);
  if (!eligible(rec + 4u)) { return none; }
  let cbase = hslot(t, s) * p.F;
  var best = Best(0.0, LEAF, 0u, 0u);
  var best_rank = LEAF;
  for (var f = 0u; f < p.F; f++) {  // the scanned features' splits (b2 LEAF: none)
    let e = 4u * (cbase + f);
    if (sp_cand[e + 2u] == LEAF) { continue; }
    let r = sp_cand[e + 3u] >> RANK_SHIFT;
    let sc = bitcast<f32>(sp_cand[e]);
    if (best.f == LEAF || sc > best.score || (sc == best.score && r < best_rank)) {
      best = Best(sc, f, sp_cand[e + 1u], sp_cand[e + 2u]);
      best_rank = r;
    }
  }
  if (best.f == LEAF) { return none; }
  sp_nodes[rec] = best.f;
  sp_nodes[rec + 1u] = best.b;
  sp_nodes[rec + 2u] = best.b2;
  return vec4u(best.f, best.b, best.b2, 0u);
}

@compute @workgroup_size(256)
fn split_pick(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // bound as for split_scan
  let i = linear(wid, nwg) * 256u + lid;
  let sp = pass_slots();
  if (i >= p.T * sp) { return; }
  let t = i / sp;
  let s = item_slot(t, i % sp);
  if (s == LEAF) { return; }
  if (rows_scanned(t, s)) { return; }  // split_small's
  let best = pick(t, s);
  if (best.x == LEAF) { return; }
  let fw = feature_words(t, s, best.x);
  let out = (t * p.S + s) * p.C;
  for (var lane = 0u; lane < lanes(); lane++) {  // the left child: bins 0..b summed
    let sum = lane_sum(fw.x, 0u, best.y + 1u, lane);
    sp_left[out + lane_word(lane)] = sum.x;
    if (lane_wide(lane)) { sp_left[out + 1u] = sum.y; }
  }
}

// ---- split_vary_wg, split_scan_wg, split_pick_wg: the same, a workgroup each -----------------
// What the thread-per-item kernels do, with a feature's bins spread over the workgroup's
// threads: for GPUs, where one thread's 256-bin loop is slow. Same integers, same f32 scores,
// same ties, so the same forest. (CPU adapters run the looping versions: barriers cost more
// than loops there.)
const PW: u32 = 64u;   // threads a workgroup
const BPT: u32 = 4u;   // bins a thread: PW * BPT = 256, the most bins of 8 bits (more: one thread)
const CH: u32 = 12u;   // lanes split_scan_wg sums along the bins at once (more: in chunks)

var<workgroup> wg_flags: u32;
var<workgroup> wg_node: u32;
var<workgroup> wg_elig: u32;
var<workgroup> wg_feat: u32;
var<workgroup> wg_any: atomic<u32>;
var<workgroup> wg_rs: array<f32, PW>;
var<workgroup> wg_rb: array<u32, PW>;
var<workgroup> wg_run: array<vec2u, 768>;  // CH * PW: a chunk's lanes' sums, thread by thread
var<workgroup> wg_pick: vec4u;
var<workgroup> wg_mask: array<atomic<u32>, 8>;  // split_scan_wg: the non-empty bins, a bit each
var<workgroup> wg_cnt: u32;                     // how many
var<workgroup> wg_bin: array<u32, PW>;          // the sparse scan's bins, in order

// A node's rounds (swap_or_not's hash of each, and that mod F) for a workgroup of its features'
// ranks: computed once, not in every feature's chain. Called by the whole workgroup; ends on a
// barrier.
const MAX_ROUNDS: u32 = 96u;  // perm_rounds: 3 rounds a bit of F (32 bits at most)
var<workgroup> wg_round: array<vec2u, MAX_ROUNDS>;

fn node_rounds(key: u32, lid: u32) {
  for (var i = lid; i < p.pr; i += PW) {
    let h = pcg(key + i);
    wg_round[i] = vec2u(h, h % p.F);
  }
  workgroupBarrier();
}

fn feature_rank_wg(f: u32) -> u32 {  // feature_rank from the rounds node_rounds wrote
  var x = f;
  for (var i = 0u; i < p.pr; i++) { x = swap_round(wg_round[i], x); }
  return x;
}

// Features a workgroup of split_vary_wg takes in turn: one, or more where the pass has more than
// WG_TREE (slot, feature) items a tree (a deep level's pass: most of its slots SMALL or closed, so
// most workgroups would only find that out). As wg_items' vary_features.
fn vary_features(sp: u32) -> u32 { return max(1u, min(p.F, sp * p.F / WG_TREE)); }

@compute @workgroup_size(64)
fn split_vary_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // the bindings of split_scan, all of them used
  let id = linear(wid, nwg);
  let sp = pass_slots();
  let fg = vary_features(sp);
  let groups = (p.F + fg - 1u) / fg;
  if (id >= p.T * sp * groups) { return; }
  let t = id / groups / sp;
  let s = item_slot(t, id / groups % sp);
  if (s == LEAF) { return; }
  if (lid == 0u) {
    wg_flags = sp_slots[(t * p.S + s) * 4u + 1u];
    wg_node = sp_slots[(t * p.S + s) * 4u];
  }
  let flags = workgroupUniformLoad(&wg_flags);
  if ((flags & OPEN) == 0u || (flags & SMALL) != 0u) { return; }  // SMALL: split_rows
  let f0 = id % groups * fg;
  let f1 = min(p.F, f0 + fg);
  // The features' ranks, a thread each (a chain of p.pr rounds: not thread 0's, feature by
  // feature), through workgroup memory to thread 0.
  node_rounds(node_key(t, s), lid);
  for (var c0 = f0; c0 < f1; c0 += PW) {
    if (c0 + lid < f1) { wg_rb[lid] = feature_rank_wg(c0 + lid); }
    workgroupBarrier();
    if (lid == 0u) {
      for (var f = c0; f < min(f1, c0 + PW); f++) {
        sp_cand[4u * (hslot(t, s) * p.F + f) + 3u] = wg_rb[f - c0];
      }
    }
    workgroupBarrier();
  }
  for (var f = f0; f < f1; f++) {
    if (lid == 0u) { atomicStore(&wg_any, 0u); }
    workgroupBarrier();
    let fw = feature_words(t, s, f);
    var nonempty = 0u;
    if ((flags & BUILT) == 0u) {  // parent - sibling, word by word (coalesced)
      let d = fw.x - hslot(t, s) * p.NB * p.C;
      nonempty = derive_bins(fw.x, hslot(t, s ^ 1u) * p.NB * p.C + d,
                             (t * p.S_h + sp_slots[(t * p.S + s) * 4u + 2u]) * p.NB * p.C + d,
                             lid, fw.y * p.C, PW);
    } else {
      nonempty = count_nonempty(fw.x, fw.y, lid, PW);
      if (p.depth == 0u && f == 0u) { root_totals(t, s, lid, PW); }
    }
    if (nonempty != 0u) { atomicAdd(&wg_any, nonempty); }
    workgroupBarrier();
    if (lid == 0u) {
      let v = select(0u, 1u, atomicLoad(&wg_any) >= 2u);
      finish_vary(t, s, f, v, sp_cand[4u * (hslot(t, s) * p.F + f) + 3u]);
    }
  }
}

// Is a better than b (candidates as (score, bin); LEAF: none)? Ties: the lower bin.
fn better_bin(as_: f32, ab: u32, bs: f32, bb: u32) -> bool {
  if (ab == LEAF) { return false; }
  if (bb == LEAF) { return true; }
  if (as_ != bs) { return as_ > bs; }
  return ab < bb;
}

// The best of each thread's candidate (score bs, bin or index bb; LEAF: none) into wg_rs[0] and
// wg_rb[0], better_bin's order. Called by the whole workgroup.
fn best_in_workgroup(bs: f32, bb: u32, lid: u32) {
  wg_rs[lid] = bs;
  wg_rb[lid] = bb;
  workgroupBarrier();
  for (var o = PW / 2u; o > 0u; o >>= 1u) {
    if (lid < o && better_bin(wg_rs[lid + o], wg_rb[lid + o], wg_rs[lid], wg_rb[lid])) {
      wg_rs[lid] = wg_rs[lid + o];
      wg_rb[lid] = wg_rb[lid + o];
    }
    workgroupBarrier();
  }
}

// split_scan_wg's workgroups a slot: one per feature the node may scan (max_features of them).
fn scan_width() -> u32 { return min(p.mf, p.F); }

// The features of ranks r0 .. r0 + PW - 1 (below `end`) into wg_rb in rank order, LEAF for one
// that does not vary in the node; `cand`: word 3 of the slot's feature 0 candidate (its rank and
// VARIES, finish_vary's). Where a thread's share of the features is at most the permutation's
// rounds, each feature is put in its rank's place (a read a thread for 64 features); otherwise
// each rank's feature is found by undoing the rounds (rank_feature: 2 hashes a round). The same
// wg_rb either way. Called by the whole workgroup; ends on a barrier.
fn rank_run(key: u32, cand: u32, r0: u32, end: u32, lid: u32) {
  let hi = min(end, r0 + PW);
  if ((p.F + PW - 1u) / PW <= p.pr) {
    wg_rb[lid] = LEAF;
    workgroupBarrier();
    for (var f = lid; f < p.F; f += PW) {
      let w = sp_cand[cand + 4u * f];
      let r = w >> RANK_SHIFT;
      if ((w & VARIES) != 0u && r >= r0 && r < hi) { wg_rb[r - r0] = f; }
    }
  } else {
    var f = LEAF;
    if (r0 + lid < hi) {
      f = rank_feature(key, r0 + lid);
      if ((sp_cand[cand + 4u * f] & VARIES) == 0u) { f = LEAF; }
    }
    wg_rb[lid] = f;
  }
  workgroupBarrier();
}

// The i-th feature (from 0) split_scan_wg scans in slot s (node wg_node): the i-th that varies
// in it among the first mf of the node's permutation, or for i = 0 where none of those does, the
// first that varies, as `selected` (every varying feature when mf >= F: feature i, if it
// varies); LEAF: none. A run of PW ranks at once (rank_run), rather than every feature's
// workgroup counting the ranks before its own. Called by the whole workgroup.
fn scanned_feature(t: u32, s: u32, i: u32, lid: u32) -> u32 {
  let vary = 4u * hslot(t, s) * p.F + 3u;  // word 3 of feature 0's candidate
  if (lid == 0u) { wg_feat = LEAF; }
  if (p.mf >= p.F) {  // (through workgroup memory: the result must be uniform)
    if (lid == 0u && (sp_cand[vary + 4u * i] & VARIES) != 0u) { wg_feat = i; }
    return workgroupUniformLoad(&wg_feat);
  }
  let key = hash3(p.seed, 2u * (p.tree0 + t) + 1u, wg_node);
  var seen = 0u;  // thread 0: varying features of the ranks walked so far
  let end = select(p.mf, p.F, i == 0u);  // ranks past mf: only for the first, if none before varies
  for (var r0 = 0u; r0 < end; r0 += PW) {
    rank_run(key, vary, r0, end, lid);
    if (lid == 0u) {
      for (var j = 0u; j < PW; j++) {
        if (wg_rb[j] == LEAF) { continue; }
        if (seen == i) {
          wg_feat = wg_rb[j];
          break;
        }
        seen += 1u;
      }
    }
    let got = workgroupUniformLoad(&wg_feat);
    if (got != LEAF) { return got; }
  }
  return LEAF;
}

// split_scan_wg where a feature has at most PW non-empty bins in the node: thread i takes the
// i-th of them (wg_mask's bits in order), lane by lane (CH at once) one thread a lane sums them
// along in workgroup memory (a few barriers, not a scan over the workgroup), and thread i takes
// its bin's left side from there, lanes in the same order as the dense path: the same integers
// and f32 scores, and the best is the lowest-indexed, i.e. lowest, bin among equal scores.
fn scan_sparse(t: u32, s: u32, f: u32, h0: u32, nnz: u32, rec: u32, lid: u32) {
  var bin = LEAF;
  if (lid < nnz) {
    var k = lid;
    for (var w = 0u; w < 8u; w++) {
      var m = atomicLoad(&wg_mask[w]);
      let c = countOneBits(m);
      if (k < c) {
        for (var q = 0u; q < k; q++) { m &= m - 1u; }
        bin = 32u * w + firstTrailingBit(m);
        break;
      }
      k -= c;
    }
    wg_bin[lid] = bin;
  }
  var left: Left;
  let passes = select(1u, 2u, p.crit == ENTROPY);
  for (var ps = 0u; ps < passes; ps++) {
    let nlanes = select(lanes(), p.K, ps == 1u);
    for (var l0 = 0u; l0 < nlanes; l0 += CH) {
      let nl = min(CH, nlanes - l0);
      if (lid < nnz) {
        for (var li = 0u; li < nl; li++) { wg_run[li * PW + lid] = lane_at(h0 + bin * p.C, l0 + li); }
      }
      workgroupBarrier();
      if (lid < nl) {
        var run = vec2u(0u);
        for (var i = 0u; i < nnz; i++) {
          run = lane_add(run, wg_run[lid * PW + i], l0 + lid);
          wg_run[lid * PW + i] = run;
        }
      }
      workgroupBarrier();
      if (lid < nnz) {
        for (var li = 0u; li < nl; li++) { left = take_lane(left, l0 + li, wg_run[li * PW + lid], ps, rec); }
      }
      workgroupBarrier();  // wg_run is written again by the next chunk
    }
  }
  var bs = 0.0;
  var bb = LEAF;  // this thread's index, if its bin is a candidate
  if (lid < nnz && candidate(1u, left.rows, sp_nodes[rec + 4u + p.C - 1u])) {
    bs = left_score(left, rec);
    bb = lid;
  }
  best_in_workgroup(bs, bb, lid);
  let i = wg_rb[0];
  if (lid == 0u && i != LEAF) {  // a candidate has rows after it: bin i + 1 is the right side's first
    let e4 = 4u * (hslot(t, s) * p.F + f);
    sp_cand[e4] = bitcast<u32>(wg_rs[0]);
    sp_cand[e4 + 1u] = wg_bin[i];
    sp_cand[e4 + 2u] = wg_bin[i + 1u];
  }
}

// Each thread takes BPT consecutive bins. Lane by lane (CH lanes at once), a thread sums its
// bins, the sums of the threads before it come from a scan over the workgroup (in workgroup
// memory), and a second pass over its bins (in cache now) gives each bin's left side. Then the
// best bin over the workgroup, and the next non-empty bin after it.
@compute @workgroup_size(64)
fn split_scan_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &sp_prev;  // the bindings of split_vary, all of them used
  let id = linear(wid, nwg);
  let ns = scan_width();
  let sp = pass_slots();
  if (id >= p.T * sp * ns) { return; }
  let t = id / ns / sp;
  let s = item_slot(t, id / ns % sp);
  if (s == LEAF) { return; }
  if (lid == 0u) {
    wg_flags = sp_slots[(t * p.S + s) * 4u + 1u];
    wg_node = sp_slots[(t * p.S + s) * 4u];
  }
  if (lid < 8u) { atomicStore(&wg_mask[lid], 0u); }
  if ((workgroupUniformLoad(&wg_flags) & OPEN) == 0u) { return; }
  let rec = (t * p.NC + wg_node) * (4u + p.C);
  if (lid == 0u) { wg_elig = select(0u, 1u, eligible(rec + 4u) && !rows_scanned(t, s)); }
  if (workgroupUniformLoad(&wg_elig) == 0u) { return; }
  let f = scanned_feature(t, s, id % ns, lid);
  if (f == LEAF) { return; }
  let fw = feature_words(t, s, f);
  let h0 = fw.x;
  let nb = fw.y;
  if (nb > PW * BPT) {  // 16-bit bins, more than the workgroup holds (small data): one thread
    if (lid == 0u) { scan_feature(t, s, f); }
    return;
  }
  let j0 = lid * BPT;
  let cc = p.C - 1u;
  var occ = 0u;  // bit q: bin j0 + q holds rows (an empty bin is zero in every lane: skipped)
  for (var q = 0u; q < BPT; q++) {
    if (j0 + q < nb && sp_hist[h0 + (j0 + q) * p.C + cc] != 0u) { occ |= 1u << q; }
  }
  if (occ != 0u) { atomicOr(&wg_mask[lid / 8u], occ << (4u * (lid % 8u))); }
  workgroupBarrier();
  if (lid == 0u) {
    var c = 0u;
    for (var w = 0u; w < 8u; w++) { c += countOneBits(atomicLoad(&wg_mask[w])); }
    wg_cnt = c;
  }
  let nnz = workgroupUniformLoad(&wg_cnt);
  if (nnz <= PW) {  // a node of few rows (most of a deep tree's): its non-empty bins a thread each
    scan_sparse(t, s, f, h0, nnz, rec, lid);
    return;
  }
  var left: array<Left, BPT>;
  let passes = select(1u, 2u, p.crit == ENTROPY);  // entropy: every class's left terms, then the right's
  for (var ps = 0u; ps < passes; ps++) {
    let nlanes = select(lanes(), p.K, ps == 1u);
    for (var l0 = 0u; l0 < nlanes; l0 += CH) {
      let nl = min(CH, nlanes - l0);
      for (var li = 0u; li < nl; li++) {
        var sum = vec2u(0u);
        for (var q = 0u; q < BPT; q++) {
          if ((occ & (1u << q)) != 0u) { sum = lane_add(sum, lane_at(h0 + (j0 + q) * p.C, l0 + li), l0 + li); }
        }
        wg_run[li * PW + lid] = sum;
      }
      workgroupBarrier();
      for (var o = 1u; o < PW; o <<= 1u) {  // inclusive sums over the threads (Hillis-Steele)
        var got: array<vec2u, CH>;
        for (var li = 0u; li < nl; li++) {
          if (lid >= o) { got[li] = wg_run[li * PW + lid - o]; }
        }
        workgroupBarrier();
        for (var li = 0u; li < nl; li++) {
          if (lid >= o) { wg_run[li * PW + lid] = lane_add(wg_run[li * PW + lid], got[li], l0 + li); }
        }
        workgroupBarrier();
      }
      for (var li = 0u; li < nl; li++) {
        let lane = l0 + li;
        var run = vec2u(0u);  // the bins of the threads before this one
        if (lid > 0u) { run = wg_run[li * PW + lid - 1u]; }
        for (var q = 0u; q < BPT; q++) {  // an empty bin is no candidate: its left side unused
          if ((occ & (1u << q)) == 0u) { continue; }
          run = lane_add(run, lane_at(h0 + (j0 + q) * p.C, lane), lane);
          left[q] = take_lane(left[q], lane, run, ps, rec);
        }
      }
      workgroupBarrier();  // wg_run is written again by the next chunk
    }
  }
  let total = sp_nodes[rec + 4u + cc];
  var bs = 0.0;
  var bb = LEAF;
  for (var q = 0u; q < BPT; q++) {
    let j = j0 + q;
    if (j >= nb) { break; }
    if (candidate(occ & (1u << q), left[q].rows, total)) {
      let sc = left_score(left[q], rec);
      if (bb == LEAF || sc > bs) {
        bs = sc;
        bb = j;
      }
    }
  }
  best_in_workgroup(bs, bb, lid);
  let best = wg_rb[0];
  let score_bits = bitcast<u32>(wg_rs[0]);
  // The right side starts at the next non-empty bin after the best.
  var next = LEAF;
  for (var q = 0u; q < BPT; q++) {
    let j = j0 + q;
    if (j >= nb) { break; }
    if (best != LEAF && j > best && (occ & (1u << q)) != 0u) {
      next = j;
      break;
    }
  }
  workgroupBarrier();
  wg_rb[lid] = next;
  workgroupBarrier();
  for (var o = PW / 2u; o > 0u; o >>= 1u) {
    if (lid < o) { wg_rb[lid] = min(wg_rb[lid], wg_rb[lid + o]); }
    workgroupBarrier();
  }
  if (lid == 0u && best != LEAF) {  // words e4..e4+2 only: other workgroups read e4+3
    let e4 = 4u * (hslot(t, s) * p.F + f);
    sp_cand[e4] = score_bits;
    sp_cand[e4 + 1u] = best;
    sp_cand[e4 + 2u] = wg_rb[0];
  }
}

// A workgroup per (tree, slot of the pass): one thread picks, then the left child's lanes are
// summed over bins 0..b, a lane's bins in runs over the threads (hist_build's memory order).
@compute @workgroup_size(64)
fn split_pick_wg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                 @builtin(local_invocation_index) lid: u32) {
  _ = &sp_xlogx;  // bound as for split_scan
  let id = linear(wid, nwg);
  let sp = pass_slots();
  if (id >= p.T * sp) { return; }
  let t = id / sp;
  let s = item_slot(t, id % sp);
  if (s == LEAF) { return; }
  if (lid == 0u) {
    wg_pick = vec4u(LEAF, 0u, 0u, 0u);
    if (!rows_scanned(t, s)) { wg_pick = pick(t, s); }  // else split_small's
  }
  let best = workgroupUniformLoad(&wg_pick);
  if (best.x == LEAF) { return; }
  let out = (t * p.S + s) * p.C;
  let h0 = feature_words(t, s, best.x).x;
  let nb = best.y + 1u;  // bins 0..b
  for (var l0 = 0u; l0 < lanes(); l0 += PW) {
    let nl = min(lanes() - l0, PW);  // lanes in this pass
    let seg = PW / nl;              // runs a lane
    let len = (nb + seg - 1u) / seg;
    let lane = l0 + lid % nl;
    let k = lid / nl;               // this thread's run (none when k >= seg)
    var sum = vec2u(0u);
    if (k < seg) { sum = lane_sum(h0, k * len, min(k * len + len, nb), lane); }
    wg_run[lid] = sum;
    workgroupBarrier();
    if (k == 0u) {
      for (var q = 1u; q < seg; q++) { sum = lane_add(sum, wg_run[q * nl + lid], lane); }
      sp_left[out + lane_word(lane)] = sum.x;
      if (lane_wide(lane)) { sp_left[out + 1u] = sum.y; }
    }
    workgroupBarrier();  // wg_run is written again by the next pass of lanes
  }
}

// ---- split_rows: a SMALL slot's split inputs, from its listed rows ----------------------------
// 1 fmeta · 2 slots · 3 target (n) · 4 nodes · 5 cand · 6 hist (T, S_h, NB, C) atomic · 7 binned
// (n, FW) · 8 list (T, n). A workgroup per (tree, slot of the pass). For a SMALL open slot whose
// node may split, what split_vary does for the others: each feature's candidate reset, its rank
// in the node's permutation and VARIES (two bins among its rows); then the histograms of the
// features split_scan scans there (those that vary among the first max_features of the node's
// order, or the first that varies: `selected`), those
// alone, summed from the slot's rows as hist_build sums them: the same words, so split_scan and
// split_pick find the same split. A node of a few dozen rows costs its rows, not the clear, build
// and parent - sibling of NB x C words for every feature.
// A SMALL slot of at most p.row_scan rows (rows_scanned) gets its ranks here alone: split_small
// finds its split from the rows, without histograms.
@group(0) @binding(7) var<storage, read> sr_binned: array<u32>;
@group(0) @binding(8) var<storage, read> sr_list: array<u32>;
var<workgroup> sr_sel: array<u32, PW>;  // the features of a run of ranks whose bins are summed
var<workgroup> sr_m: u32;               // how many

fn row_bin(r: u32, f: u32) -> u32 { return bin_in(sr_binned[r * p.FW + bin_word(f)], f); }

// Is slot s of tree t open and SMALL (its rows listed)? Its flags alone (read-only: uniform in
// the workgroup), so that the slots that are not, most of a deep level's grid (sized to twice
// its last known pairs, and to the tree with the most), leave split_rows and split_small before
// a barrier, which costs a CPU adapter a switch of every thread.
fn open_listed(t: u32, s: u32) -> bool {
  return (sp_slots[(t * p.S + s) * 4u + 1u] & (OPEN | SMALL)) == (OPEN | SMALL);
}

// Is slot s of tree t SMALL and of at most p.row_scan rows: split from its rows (split_small)?
fn rows_scanned(t: u32, s: u32) -> bool {
  return (sp_slots[(t * p.S + s) * 4u + 1u] & SMALL) != 0u && sp_nodes[slot_rec(t, s) + 4u + p.C - 1u] <= p.row_scan;
}


@compute @workgroup_size(64)
fn split_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let sp = slot_pass();
  if (id >= p.T * sp) { return; }
  let t = id / sp;
  let s = p.s_lo + id % sp;
  let sl = (t * p.S + s) * 4u;
  if (!open_listed(t, s)) { return; }  // most of a deep level's grid: before any barrier
  if (lid == 0u) {
    wg_elig = 0u;
    if ((sp_slots[sl + 1u] & (OPEN | SMALL)) == (OPEN | SMALL) && eligible(slot_rec(t, s) + 4u)) {
      wg_elig = select(1u, 2u, rows_scanned(t, s));
    }
  }
  let mode = workgroupUniformLoad(&wg_elig);  // 2: ranks alone (split_small scans its rows)
  if (mode == 0u) { return; }
  let rows = sp_nodes[slot_rec(t, s) + 4u + p.C - 1u];
  let first = t * p.n + sp_slots[sl + 3u] - rows;  // the slot's rows: sr_list[first, first + rows)
  let key = node_key(t, s);
  node_rounds(key, lid);
  let cbase = 4u * hslot(t, s) * p.F;
  for (var f = lid; f < p.F; f += PW) {
    let b0 = row_bin(sr_list[first] >> SLOT_SHIFT, f);
    var v = 0u;
    for (var i = 1u; i < rows; i++) {
      if (row_bin(sr_list[first + i] >> SLOT_SHIFT, f) != b0) {
        v = VARIES;
        break;
      }
    }
    let e = cbase + 4u * f;
    sp_cand[e] = 0u;
    sp_cand[e + 1u] = 0u;
    sp_cand[e + 2u] = LEAF;
    sp_cand[e + 3u] = (feature_rank_wg(f) << RANK_SHIFT) | v;
  }
  storageBarrier();
  if (mode == 2u) { return; }
  var seen = 0u;  // features chosen so far: those of ranks below mf that vary, or the first that does
  for (var r0 = 0u; r0 < p.F && (r0 < p.mf || seen == 0u); r0 += PW) {  // ranks r0 .. r0 + PW - 1
    if (p.mf < p.F) {
      rank_run(key, cbase + 3u, r0, p.F, lid);
    } else {  // every varying feature (scanned_feature)
      var f = LEAF;
      if (r0 + lid < p.F && (sp_cand[cbase + 4u * (r0 + lid) + 3u] & VARIES) != 0u) { f = r0 + lid; }
      wg_rb[lid] = f;
      workgroupBarrier();
    }
    if (lid == 0u) {
      var m = 0u;
      for (var j = 0u; j < PW; j++) {
        if (wg_rb[j] == LEAF) { continue; }
        if (r0 + j >= p.mf && seen + m > 0u) { break; }
        sr_sel[m] = wg_rb[j];
        m += 1u;
        if (r0 + j >= p.mf) { break; }  // the first that varies, none of the first mf varying
      }
      sr_m = m;
    }
    let m = workgroupUniformLoad(&sr_m);
    for (var j = 0u; j < m; j++) {
      let fw = feature_words(t, s, sr_sel[j]);
      for (var e = lid; e < fw.y * p.C; e += PW) { atomicStore(&hb_hist[fw.x + e], 0u); }
    }
    storageBarrier();
    for (var q = lid; q < rows * m; q += PW) {  // (row, feature) pairs
      let entry = sr_list[first + q / m];
      let r = entry >> SLOT_SHIFT;
      let f = sr_sel[q % m];
      let w = entry & COUNT_MASK;
      let tv = hb_target[r];
      add_row(feature_words(t, s, f).x + row_bin(r, f) * p.C, tv, w, weighted_target(tv, w));
    }
    seen += m;
    workgroupBarrier();  // wg_rb and sr_sel are written again
  }
}

// ---- split_small: a SMALL slot of at most p.row_scan rows split from its rows, no histograms ---
// 1 binned (n, FW) · 2 slots · 3 target (n) · 4 nodes · 5 cand · 6 xlogx · 7 left (T, S, C)
// · 8 list (T, n). A workgroup per (tree, slot of the pass); after split_rows (the features'
// ranks and VARIES). A thread a feature the node scans (`scans`) walks the bins present among
// the node's rows in order, each the least above the last (scan_rows: O(rows) a bin), its left
// side summed from the rows: the integers of the histogram's running sums, scored by the same
// f32 steps as scan_feature, with its ties. Then thread 0 picks the split (`pick`) and sums the
// left child's channels from the rows. split_scan and split_pick skip these slots. A node of r
// rows costs about r x r x (lanes) a scanned feature, not NB x C words cleared, built, derived
// and scanned: below p.row_scan rows (builder.row_scan) that is less.
@group(0) @binding(1) var<storage, read> ss_binned: array<u32>;

fn small_bin(r: u32, f: u32) -> u32 { return bin_in(ss_binned[r * p.FW + bin_word(f)], f); }

// Lane `lane` of a listed row (entry: row << SLOT_SHIFT | count) as add_row adds it to a bin.
fn row_lane(entry: u32, lane: u32) -> vec2u {
  let w = entry & COUNT_MASK;
  let tv = hb_target[entry >> SLOT_SHIFT];
  if (p.crit == MSE) {
    if (lane == 0u) { return weighted_target(tv, w); }
    return vec2u(select(1u, w, lane == 1u), 0u);
  }
  if (lane == p.K) { return vec2u(1u, 0u); }
  return vec2u(select(0u, w, tv == lane), 0u);
}

// Lane `lane` summed over the rows sr_list[first, first + rows) whose bin of feature f is at
// most b: a histogram's running sum at bin b.
fn rows_upto(first: u32, rows: u32, f: u32, b: u32, lane: u32) -> vec2u {
  var sum = vec2u(0u);
  for (var i = 0u; i < rows; i++) {
    let entry = sr_list[first + i];
    if (small_bin(entry >> SLOT_SHIFT, f) <= b) { sum = lane_add(sum, row_lane(entry, lane), lane); }
  }
  return sum;
}

// The left side of a candidate at bin b of feature f, from the rows (take_lane's lanes in
// scan_feature's order; entropy: the right side's terms after every class's left ones).
fn rows_left(first: u32, rows: u32, f: u32, b: u32, rec: u32) -> Left {
  var l = Left(vec2u(0u), vec2u(0u), 0u, 0.0, 0u);
  for (var lane = 0u; lane < lanes(); lane++) { l = take_lane(l, lane, rows_upto(first, rows, f, b, lane), 0u, rec); }
  if (p.crit == ENTROPY) {
    for (var k = 0u; k < p.K; k++) { l = take_lane(l, k, rows_upto(first, rows, f, b, k), 1u, rec); }
  }
  return l;
}

// scan_feature's split of feature f, from the slot's `rows` listed rows: the bins present among
// them in order (each the least above the last), the same candidates, scores and ties.
fn scan_rows(t: u32, s: u32, f: u32, first: u32, rows: u32, rec: u32) {
  let total = sp_nodes[rec + 4u + p.C - 1u];
  var best = Best(0.0, LEAF, 0u, 0u);
  var lo = 0u;  // the next bin is the least at or above lo
  loop {
    var j = LEAF;
    for (var i = 0u; i < rows; i++) {
      let b = small_bin(sr_list[first + i] >> SLOT_SHIFT, f);
      if (b >= lo && b < j) { j = b; }
    }
    if (j == LEAF) { break; }
    let l = rows_left(first, rows, f, j, rec);
    if (best.f != LEAF && best.b2 == LEAF) { best.b2 = j; }  // the best's right side starts here
    if (candidate(1u, l.rows, total)) {
      let sc = left_score(l, rec);
      if (best.f == LEAF || sc > best.score) { best = Best(sc, f, j, LEAF); }
    }
    if (l.rows == total) { break; }
    lo = j + 1u;
  }
  put_candidate(t, s, f, best);
}

// The slot's rows (the first list entry, how many) and node record: (first, rows, rec).
fn small_rows(t: u32, s: u32) -> vec3u {
  let rec = slot_rec(t, s);
  let rows = sp_nodes[rec + 4u + p.C - 1u];
  return vec3u(t * p.n + sp_slots[(t * p.S + s) * 4u + 3u] - rows, rows, rec);
}

// The split of a slot whose scanned features have their candidates: picked, and the left
// child's channels summed from its rows.
fn small_split(t: u32, s: u32) {
  let best = pick(t, s);
  if (best.x == LEAF) { return; }
  let at = small_rows(t, s);
  let out = (t * p.S + s) * p.C;
  for (var lane = 0u; lane < lanes(); lane++) {  // the left child: rows of bins 0..b summed
    let sum = rows_upto(at.x, at.y, best.x, best.y, lane);
    sp_left[out + lane_word(lane)] = sum.x;
    if (lane_wide(lane)) { sp_left[out + 1u] = sum.y; }
  }
}

// Is slot s of tree t one split_small splits: open, SMALL, of at most p.row_scan rows?
fn small_open(t: u32, s: u32) -> bool {
  return (sp_slots[(t * p.S + s) * 4u + 1u] & OPEN) != 0u && rows_scanned(t, s);
}

// A workgroup per (tree, slot of the pass), a thread a feature, then thread 0 picks. (On every
// adapter: a thread per slot, its features in turn, computed other splits than the reference for
// a few slots on lavapipe, 3 of 180 at 30k rows x 30 features, 4 classes, and nowhere else: not
// used until understood.)
@compute @workgroup_size(64)
fn split_small(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                  @builtin(local_invocation_index) lid: u32) {
  let id = linear(wid, nwg);
  let sp = slot_pass();
  if (id >= p.T * sp) { return; }
  let t = id / sp;
  let s = p.s_lo + id % sp;
  if (!open_listed(t, s)) { return; }  // most of a deep level's grid: before any barrier
  if (lid == 0u) { wg_elig = select(0u, 1u, small_open(t, s)); }
  if (workgroupUniformLoad(&wg_elig) == 0u) { return; }
  let at = small_rows(t, s);
  for (var f = lid; f < p.F; f += PW) {
    if (scans(t, s, f)) { scan_rows(t, s, f, at.x, at.y, at.z); }
  }
  storageBarrier();  // every scanned feature's candidate written
  if (lid == 0u) { small_split(t, s); }
}
