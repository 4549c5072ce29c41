// Numbering a level's children and giving the open ones next-level slots (alloc and its three-pass form).

// == tree_alloc
#include tree_grid
#include tree_hist
// ---- alloc: number the children of this level's splits; give open children next-level slots --
// 1 slots (T, S, 4) · 2 nodes · 3 left (T, S, C) · 4 slots_next (T, S, 4) · 5 childmap (T, S, 2)
// · 6 meta (T_all, 2) · 7 counts (T, S, 4). A prefix sum over each tree's slots in slot order,
// so node numbers are the same on every backend. Levels of many slots in three dispatches:
// alloc_count (thread per (tree, slot): does it split, does its pair of children take slots, how
// many rows they list), alloc_scan (workgroup of 256 per tree: those made exclusive prefix sums
// in place, from the tree's next node; the tree's nodes and open pairs into meta), alloc_write
// (thread per (tree, slot): the children's records, slots and child map); others in one, `alloc`
// (a workgroup per tree doing all three over runs of slots). A split whose children are both closed takes no slot; otherwise
// the pair (2j, 2j+1): the child with fewer rows (slot 2j) is built, the other (if open) derived.
// Where this level or the next has more slots than a histogram buffer holds (S_cur or S_next >
// S_h: done in passes), there is no whole parent level to derive from: the open children are both
// built, a closed one takes no slot. An open child of at most p.small rows is SMALL instead
// (split_rows: no histogram of its own to clear, build or derive); its rows are listed from word 3
// of its slot on (a prefix sum of such rows over the tree's next slots: route_rows lists them
// there, moving word 3 to their end). Beside a SMALL child an open one is built; a closed one is
// built only for an open sibling to derive from.
// Where a level's histograms are numbered (tree_hist's `numbered`: deep trees), a fourth count,
// the slots with a histogram (BUILT or derived), numbers them in slot order: the number in word
// 3 of the slot, the slot in 8 hmap (T, S); word 2 of a slot holds its parent's histogram
// number (its slot where not numbered), the levels in passes are those whose histogram slots
// (hist_slots: the host's bound) exceed S_h, and meta (T_all, 2) is followed by each tree's
// histogram slots at the next level (T_all), which bound the levels after it.
@group(0) @binding(1) var<storage, read> al_slots: array<u32>;
@group(0) @binding(2) var<storage, read_write> al_nodes: array<u32>;
@group(0) @binding(3) var<storage, read> al_left: array<u32>;
@group(0) @binding(4) var<storage, read_write> al_next: array<u32>;
@group(0) @binding(5) var<storage, read_write> al_childmap: array<u32>;
@group(0) @binding(6) var<storage, read_write> al_meta: array<u32>;
@group(0) @binding(7) var<storage, read_write> al_count: array<u32>;
@group(0) @binding(8) var<storage, read_write> al_hmap: array<u32>;

var<workgroup> al_a: array<u32, 256>;
var<workgroup> al_b: array<u32, 256>;
var<workgroup> al_c: array<u32, 256>;
var<workgroup> al_d: array<u32, 256>;

fn node_rec(t: u32, node: u32) -> u32 { return (t * p.NC + node) * (4u + p.C); }  // t: of the batch

// Channel c of child `side` of the node in slot s (record rec): left from split_pick, right = node - left.
fn child_stat(t: u32, s: u32, rec: u32, side: u32, c: u32) -> u32 {
  let lrec = (t * p.S + s) * p.C;
  let l = al_left[lrec + c];
  if (side == 0u) { return l; }
  let tot = al_nodes[rec + 4u + c];
  if (p.crit == MSE && c == 1u) {
    return tot - l - select(0u, 1u, al_nodes[rec + 4u] < al_left[lrec]);
  }
  return tot - l;
}

fn child_open(t: u32, s: u32, rec: u32, side: u32) -> bool {
  if (p.depth + 1u >= p.max_depth) { return false; }
  let cnt = child_stat(t, s, rec, side, p.C - 1u);
  if (cnt < p.mss || cnt < 2u * p.msl) { return false; }
  if (p.crit != MSE) {
    var w = 0u;
    for (var k = 0u; k < p.K; k++) { w += child_stat(t, s, rec, side, k); }
    for (var k = 0u; k < p.K; k++) {
      if (child_stat(t, s, rec, side, k) == w) { return false; }
    }
  }
  return true;
}

// Is child `side` SMALL (split from its rows) when open?
fn child_small(t: u32, s: u32, rec: u32, side: u32) -> bool {
  return child_stat(t, s, rec, side, p.C - 1u) <= p.small;
}

// Rows an open child lists: its rows if SMALL, else none.
fn listed_rows(t: u32, s: u32, rec: u32, side: u32, open: bool) -> u32 {
  return select(0u, child_stat(t, s, rec, side, p.C - 1u), open && child_small(t, s, rec, side));
}

fn slot_splits(t: u32, s: u32) -> bool {
  let sl = (t * p.S + s) * 4u;
  if ((al_slots[sl + 1u] & OPEN) == 0u) { return false; }
  return al_nodes[node_rec(t, al_slots[sl])] != LEAF;
}

fn alloc_bindings() {  // every kernel of alloc binds all eight
  _ = &al_slots;
  _ = &al_nodes;
  _ = &al_left;
  _ = &al_next;
  _ = &al_childmap;
  _ = &al_meta;
  _ = &al_count;
  _ = &al_hmap;
}

// The flags of the children of the split in slot s (node record rec), as their next-level
// slots (2j, 2j + 1) take them: (the even slot's, the odd one's, the side in the even slot).
fn pair_flags(t: u32, s: u32, rec: u32) -> vec3u {
  let open_l = child_open(t, s, rec, 0u);
  let open_r = child_open(t, s, rec, 1u);
  let fewer = select(1u, 0u, child_stat(t, s, rec, 0u, p.C - 1u) <= child_stat(t, s, rec, 1u, p.C - 1u));
  let whole = !child_small(t, s, rec, 0u) && !child_small(t, s, rec, 1u);  // neither SMALL
  let built = select(1u - fewer, fewer, whole || child_small(t, s, rec, 1u - fewer));
  let passes = hist_slots(false) > p.S_h || hist_slots(true) > p.S_h;
  var out = vec3u(0u, 0u, fewer);
  for (var k = 0u; k < 2u; k++) {  // the even slot first: the child with fewer rows
    let side = fewer ^ k;
    let open = select(open_l, open_r, side == 1u);
    var flags = 0u;
    if (open && child_small(t, s, rec, side)) {
      flags = OPEN | SMALL;
    } else if (open) {
      flags = OPEN | select(0u, BUILT, side == built || passes);
    } else if (k == 0u && whole && !passes) {
      flags = BUILT;  // for the open sibling to derive from
    }
    out[k] = flags;
  }
  return out;
}

// Does a next-level slot of these flags have a histogram (numbered levels)?
fn has_hist(flags: u32) -> bool { return flags != 0u && (flags & SMALL) == 0u; }

// Slot s's counts: 1 if it splits, 1 if its children take a pair of slots, the rows they list,
// the histograms they take (numbered levels).
fn slot_counts(t: u32, s: u32) -> vec4u {
  if (!slot_splits(t, s)) { return vec4u(0u); }
  let rec = node_rec(t, al_slots[(t * p.S + s) * 4u]);
  let open_l = child_open(t, s, rec, 0u);
  let open_r = child_open(t, s, rec, 1u);
  var hists = 0u;
  if (numbered() && (open_l || open_r)) {
    let f = pair_flags(t, s, rec);
    hists = select(0u, 1u, has_hist(f.x)) + select(0u, 1u, has_hist(f.y));
  }
  return vec4u(1u, select(0u, 1u, open_l || open_r),
               listed_rows(t, s, rec, 0u, open_l) + listed_rows(t, s, rec, 1u, open_r), hists);
}

// The split in slot s (it splits): its children numbered from nid (their records from its
// node's channels); if either is open, the pair of next-level slots (2j, 2j + 1) with their
// flags, parent and where their rows are listed (from `at` on), or their histogram numbers
// (from `hn` on), as in the comment above.
fn write_children(t: u32, s: u32, nid: u32, j: u32, at0: u32, hn0: u32) {
  var at = at0;
  var hn = hn0;
  let rec = node_rec(t, al_slots[(t * p.S + s) * 4u]);
  al_nodes[rec + 3u] = nid;
  for (var side = 0u; side < 2u; side++) {
    let crec = node_rec(t, nid + side);
    al_nodes[crec] = LEAF;
    al_nodes[crec + 1u] = 0u;
    al_nodes[crec + 2u] = 0u;
    al_nodes[crec + 3u] = 0u;
    for (var c = 0u; c < p.C; c++) { al_nodes[crec + 4u + c] = child_stat(t, s, rec, side, c); }
  }
  let cm = (t * p.S + s) * 2u;
  let open_l = child_open(t, s, rec, 0u);
  let open_r = child_open(t, s, rec, 1u);
  al_childmap[cm] = DONE;
  al_childmap[cm + 1u] = DONE;
  if (!open_l && !open_r) { return; }
  let pair = pair_flags(t, s, rec);
  // the parent's histogram (derived children): by its number where numbered
  let parent = select(s, al_slots[(t * p.S + s) * 4u + 3u], numbered());
  for (var k = 0u; k < 2u; k++) {  // the even slot first: the child with fewer rows
    let side = pair.z ^ k;
    let ns = 2u * j + k;
    let flags = pair[k];
    var word3 = 0u;
    if ((flags & SMALL) != 0u) {  // its rows' list
      word3 = at;
      at += child_stat(t, s, rec, side, p.C - 1u);
    } else if (numbered() && flags != 0u) {  // its histogram's number
      word3 = hn;
      al_hmap[t * p.S + hn] = ns;
      hn += 1u;
    }
    let e = (t * p.S + ns) * 4u;
    al_next[e] = nid + side;
    al_next[e + 1u] = flags;
    al_next[e + 2u] = parent;
    al_next[e + 3u] = word3;
    if (flags != 0u) { al_childmap[cm + side] = ns; }
  }
}

// The run of the level's slots thread lid of a tree's workgroup walks: [x, y).
fn slot_run(lid: u32) -> vec2u {
  let chunk = (p.S_cur + 255u) / 256u;
  let s0 = min(lid * chunk, p.S_cur);
  return vec2u(s0, min(s0 + chunk, p.S_cur));
}

// The (tree, slot) of a thread of a thread-per-slot alloc kernel; x = LEAF: none.
fn slot_item(wid: vec3u, nwg: vec3u, lid: u32) -> vec2u {
  let i = linear(wid, nwg) * 256u + lid;
  if (i >= p.T * p.S_cur) { return vec2u(LEAF, 0u); }
  return vec2u(i / p.S_cur, i % p.S_cur);
}

fn counts_at(t: u32, s: u32) -> vec4u {  // alloc's four counts (or sums) of slot s
  let e = (t * p.S + s) * 4u;
  return vec4u(al_count[e], al_count[e + 1u], al_count[e + 2u], al_count[e + 3u]);
}

fn counts_put(t: u32, s: u32, v: vec4u) {
  let e = (t * p.S + s) * 4u;
  al_count[e] = v.x;
  al_count[e + 1u] = v.y;
  al_count[e + 2u] = v.z;
  al_count[e + 3u] = v.w;
}

// A workgroup's prefix sums over its 256 threads' counts (`mine`): each thread's exclusive sums
// (nodes from the tree's next one on, pairs, listed rows, histograms); the tree's totals in
// al_a/al_b[255]. The tree's first node: `first_node`.
fn tree_prefix(lid: u32, mine: vec4u, first_node: u32) -> vec4u {
  al_a[lid] = mine.x;
  al_b[lid] = mine.y;
  al_c[lid] = mine.z;
  al_d[lid] = mine.w;
  workgroupBarrier();
  for (var off = 1u; off < 256u; off *= 2u) {  // inclusive prefix sums
    var v = vec4u(0u);
    if (lid >= off) { v = vec4u(al_a[lid - off], al_b[lid - off], al_c[lid - off], al_d[lid - off]); }
    workgroupBarrier();
    al_a[lid] += v.x;
    al_b[lid] += v.y;
    al_c[lid] += v.z;
    al_d[lid] += v.w;
    workgroupBarrier();
  }
  return vec4u(first_node + 2u * (al_a[lid] - mine.x), al_b[lid] - mine.y, al_c[lid] - mine.z,
               al_d[lid] - mine.w);
}

// The tree's next-level slots past its pairs closed; its nodes and open pairs into meta (after
// every thread has read its first node).
fn close_tree(t: u32, lid: u32, first_node: u32) {
  let tree = p.tree0 + t;
  let total_pairs = al_b[255];
  for (var s = 2u * total_pairs + lid; s < p.S_next; s += 256u) { al_next[(t * p.S + s) * 4u + 1u] = 0u; }
  workgroupBarrier();
  if (lid == 0u) {
    al_meta[2u * tree] = first_node + 2u * al_a[255];
    al_meta[2u * tree + 1u] = total_pairs;
    if (numbered()) { al_meta[2u * p.T_all + tree] = al_d[255]; }  // its next level's histograms
  }
}

// What alloc and alloc_scan share, a workgroup of 256 per tree, each thread a run of the level's
// slots: the run's counts (from the splits when `fresh`, else alloc_count's), their prefix over
// the tree, then each slot's first node, pair and list offsets, written as its children (`fresh`)
// or stored for alloc_write; then the tree's slots closed and its meta.
fn run_counts(t: u32, s: u32, fresh: bool) -> vec4u {
  if (fresh) { return slot_counts(t, s); }
  return counts_at(t, s);
}

fn alloc_tree(wid: vec3u, nwg: vec3u, lid: u32, fresh: bool) {
  alloc_bindings();
  let t = linear(wid, nwg);
  if (t >= p.T) { return; }
  let first_node = al_meta[2u * (p.tree0 + t)];
  let run = slot_run(lid);
  var mine = vec4u(0u);
  for (var s = run.x; s < run.y; s++) { mine += run_counts(t, s, fresh); }
  var at = tree_prefix(lid, mine, first_node);
  for (var s = run.x; s < run.y; s++) {
    let c = run_counts(t, s, fresh);
    if (fresh) {
      if (c.x == 0u) { continue; }
      write_children(t, s, at.x, at.y, at.z, at.w);
    } else {
      counts_put(t, s, at);
    }
    at += vec4u(2u * c.x, c.y, c.z, c.w);
  }
  close_tree(t, lid, first_node);
}

// alloc, one dispatch (levels of few slots, where three dispatches cost more than the walk).
@compute @workgroup_size(256)
fn alloc(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) lid: u32) {
  alloc_tree(wid, nwg, lid, true);
}

// alloc in three dispatches (levels of many slots): alloc_count, a thread per slot, its counts.
@compute @workgroup_size(256)
fn alloc_count(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  alloc_bindings();
  let ts = slot_item(wid, nwg, lid);
  if (ts.x == LEAF) { return; }
  counts_put(ts.x, ts.y, slot_counts(ts.x, ts.y));
}

// Per tree: the counts made exclusive prefix sums over the slots, in place; meta; slots closed.
@compute @workgroup_size(256)
fn alloc_scan(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lid: u32) {
  alloc_tree(wid, nwg, lid, false);
}

// Slot s's split: its children and their slots, from its prefix sums.
@compute @workgroup_size(256)
fn alloc_write(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  alloc_bindings();
  let ts = slot_item(wid, nwg, lid);
  if (ts.x == LEAF || !slot_splits(ts.x, ts.y)) { return; }
  let at = counts_at(ts.x, ts.y);
  write_children(ts.x, ts.y, at.x, at.y, at.z, at.w);
}
