"""Writes the matmul_f16 family's WGSL: the subgroup-matrix (tensor core) matmul, one tiling.

The kernel is written out here rather than by hand because WGSL has no loop unrolling and
Chromium's robustness pass clamps every dynamic array index: arrays of subgroup matrices or of
staging registers indexed by a loop variable end up in local memory. So every accumulator,
operand matrix and staging register is a named variable, one statement each, for the tiling
asked for. The family's description (`FAMILY.generate`) calls `module()` when the shader is
loaded; `python -m py_core.kernels.matmul_f16.wgsl OUT [BM BN BK WM WN]` writes the assembled
shader (header and all) of the default or another tiling, to read or to benchmark.
"""
from __future__ import annotations

from itertools import product
from pathlib import Path

DEFAULT = {"bm": 128, "bn": 128, "bk": 32, "wm": 2, "wn": 4}

HEADER = """\
// WRITTEN by py_core/kernels/matmul_f16/wgsl.py ({tiling}) when the shader is loaded: edit
// that file. Params and the flags come from the family header.
//
// Mixed-precision matrix multiply on subgroup matrices (tensor cores): f16 operands, f32
// accumulation, f32 results. The same contract as transformer_matmul (the same Params, bindings
// and flags, see shaders/transformer_matmul.wgsl), so a model swaps one for the other:
//   C[z] = alpha * op(A[z]) * op(B[z]) (+ bias) (+ R[z]) (+ C[z] when ACCUMULATE), z < grid.z
// with the GELU, GELU-gradient and row-sum epilogues and the causal tile shortcuts, on {bm} x {bn}
// tiles (the causal flags act on tiles of {bm} rows). The transposes are also pipeline constants
// (TRANSPOSE_A, TRANSPOSE_B), which must agree with flags TRANS_A and TRANS_B.
// Needs the adapter features `shader-f16`, `subgroups` and `chromium-experimental-subgroup-matrix`
// with an f16 x f16 -> f32 16x16x16 configuration, and subgroups of 32 invocations.
//
// Operands: A and B are bound as raw 32-bit words. With IN_F16 false (the mixed path: f32 master
// values) each word is an f32, rounded to f16 (to nearest) when staged; with IN_F16 true each word
// holds two f16 values (element 2i in the low half), and offsets, strides and element counts of A
// and B count f16 elements. C, bias, R and G are f32 in both.
//
// Tiling: {wm} x {wn} subgroups compute a {bm} x {bn} tile of C; a subgroup owns a {sm} x {sn} block
// of it as {fm} x {fn} 16x16 result matrices. For each {bk}-deep slice of K the workgroup stages
// op(A) and op(B) in workgroup memory as f16, in the orientation they lie in memory (a transposed
// operand is read back column-major by subgroupMatrixLoad), so staging copies contiguous runs and
// global loads coalesce; the next slice's loads are issued before this slice's multiply-adds.
// Epilogue: a workgroup whose tile lies inside C, with no epilogue flag and alpha 1, stores its
// matrices straight to C; otherwise each subgroup passes them through a 16 x 16 f32 scratch in
// workgroup memory and every invocation applies the epilogue to 8 elements of each.
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<u32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;
@group(0) @binding(6) var<storage, read_write> G: array<f32>;

override IN_F16: bool = false;
override TRANSPOSE_A: bool = false;
override TRANSPOSE_B: bool = false;

const BM = {bm}u;
const BN = {bn}u;
const BK = {bk}u;
const NT = {nt}u;
const PAD = 8u;  // f16 elements after each staged row: 16 bytes, rows stay 16-byte aligned
// staged tiles: A as [m][k], or [k][m] when transposed; B as [k][n], or [n][k] when transposed
override A_COLS: u32 = select(BK, BM, TRANSPOSE_A);
override B_COLS: u32 = select(BN, BK, TRANSPOSE_B);
override SA: u32 = A_COLS + PAD;
override SB: u32 = B_COLS + PAD;
var<workgroup> As: array<f16, {a_len}>;
var<workgroup> Bs: array<f16, {b_len}>;
var<workgroup> Cs: array<f32, {c_len}>;  // a 16 x 16 scratch a subgroup

#include epilogue

{operands}

fn left(m: u32, kk: u32) -> subgroup_matrix_left<f16, 16, 16> {{
  if (TRANSPOSE_A) {{ return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, kk * SA + m, true, SA); }}
  return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&As, m * SA + kk, false, SA);
}}

fn right(n: u32, kk: u32) -> subgroup_matrix_right<f16, 16, 16> {{
  if (TRANSPOSE_B) {{ return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, n * SB + kk, true, SB); }}
  return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&Bs, kk * SB + n, false, SB);
}}

// The scratch-path epilogue of one 16 x 16 result matrix at (r0, c0) of C, for subgroup sg.
fn scratch(sg: u32, lane: u32, c_base: u32, r0: u32, c0: u32) {{
  for (var e = 0u; e < 8u; e++) {{
    let el = e * 32u + lane;
    store1(c_base, r0 + el / 16u, c0 + el % 16u, Cs[sg * 256u + el]);
  }}
}}

@compute @workgroup_size(NT)
fn matmul(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {{
  let row0 = wg.y * BM;
  let col0 = wg.x * BN;
  if ((p.flags & SKIP_UPPER) != 0u && col0 > row0 + BM - 1u) {{ return; }}  // whole workgroup: uniform
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let rowsum = (p.flags & ROWSUM) != 0u && wg.x == 0u;
  var k_end = p.K;
  if ((p.flags & K_UPTO_ROW) != 0u) {{ k_end = min(p.K, row0 + BM); }}
  var k0 = 0u;
  if ((p.flags & K_FROM_ROW) != 0u) {{ k0 = min(row0, k_end); }}
  // unchecked pair loads where the tile's rows and columns are inside and pairs are aligned
  let even = !IN_F16 || (p.lda % 2u == 0u && p.ldb % 2u == 0u && a_base % 2u == 0u && b_base % 2u == 0u);
  let inside_a = even && row0 + BM <= p.M;
  let inside_b = even && col0 + BN <= p.N;
  let sg = t / 32u;
  let lane = t % 32u;
  let m0 = (sg / {wn}u) * {sm}u;  // the subgroup's block within the tile
  let n0 = (sg % {wn}u) * {sn}u;
"""


# The per-operand helpers, written once and formatted for A and for B, in the order elem_a,
# elem_b, pair_a, ... In memory an operand is a (rows, cols) matrix, op(A) = (M, K) or
# op(B) = (K, N) as stored untransposed: `row`/`col` name the index along each, `row0`/`col0`
# where the tile's slice starts, `rows`/`cols` the bounds.
OPERAND = ("""
fn elem_{x}(i: u32) -> f16 {{
  if (IN_F16) {{ return f16(unpack2x16float({X}[i >> 1u])[i & 1u]); }}
  return f16(bitcast<f32>({X}[i]));
}}
""", """
// Elements i and i + 1 of a row, both in range, i even when IN_F16 (the caller checks).
fn pair_{x}(i: u32) -> vec2<f16> {{
  if (IN_F16) {{ return vec2<f16>(unpack2x16float({X}[i >> 1u])); }}
  return vec2<f16>(vec2<f32>(bitcast<f32>({X}[i]), bitcast<f32>({X}[i + 1u])));
}}
""", """
// Pair q of the {X} tile of the slice at k0: (row, column) in memory order, bounds checked.
fn load_{x}(q: u32, {tile0}: u32, k0: u32, k_end: u32, base: u32, fast: bool) -> vec2<f16> {{
  let e = 2u * q;
  let r = e / {X}_COLS;
  let c = e % {X}_COLS;
  var {row} = {row0} + r;
  var {col} = {col0} + c;
  if (TRANSPOSE_{X}) {{ {row} = {row0} + c; {col} = {col0} + r; }}
  var idx = base + {row} * p.ld{x} + {col};
  if (TRANSPOSE_{X}) {{ idx = base + {col} * p.ld{x} + {row}; }}
  if (fast) {{ return pair_{x}(idx); }}
  var ok0 = {row} < {rows} && {col} < {cols};
  var ok1 = {row} < {rows} && {col} + 1u < {cols};
  if (TRANSPOSE_{X}) {{ ok1 = {col} < {cols} && {row} + 1u < {rows}; }}
  var v = vec2<f16>(0.0h, 0.0h);
  if (ok0) {{ v.x = elem_{x}(idx); }}
  if (ok1) {{ v.y = elem_{x}(idx + 1u); }}
  return v;
}}
""", """
fn stage_{x}(q: u32, v: vec2<f16>) {{
  let e = 2u * q;
  let at = (e / {X}_COLS) * S{X} + e % {X}_COLS;
  {X}s[at] = v.x;
  {X}s[at + 1u] = v.y;
}}
""")
OPERAND_A = {"x": "a", "X": "A", "tile0": "row0", "row": "m", "row0": "row0", "rows": "p.M",
             "col": "k", "col0": "k0", "cols": "k_end"}
OPERAND_B = {"x": "b", "X": "B", "tile0": "col0", "row": "k", "row0": "k0", "rows": "k_end",
             "col": "n", "col0": "col0", "cols": "p.N"}
OPERANDS = "".join(f.format(**OPERAND_A) + f.format(**OPERAND_B) for f in OPERAND).strip("\n")


def accumulators(w, fm: int, fn: int):
    """The subgroup's fm x fn f32 result matrices, acc{i}_{j}, row-major (i: 16-row block)."""
    for i, j in product(range(fm), range(fn)):
        w(f"  var acc{i}_{j}: subgroup_matrix_result<f32, 16, 16>;")


def multiply_add(w, fm: int, fn: int, left, right, rights_first: bool):
    """One 16-deep step of the subgroup's block, in a WGSL block of its own: the left operands
    l{i} = `left(i)`, the right ones r{j} = `right(j)` (the loads' WGSL), and acc{i}_{j} += l{i} r{j}.
    The staged entry multiplies with each r{j} as soon as it is loaded; the direct ones load every
    r{j} first (`rights_first`): the orders each was tuned on the H200 with."""
    def column(j):  # acc{i}_{j} += l{i} r{j} for every i
        for i in range(fm):
            w(f"      acc{i}_{j} = subgroupMatrixMultiplyAccumulate(l{i}, r{j}, acc{i}_{j});")

    w("    {")
    for i in range(fm):
        w(f"      let l{i} = {left(i)};")
    for j in range(fn):
        w(f"      let r{j} = {right(j)};")
        if not rights_first:
            column(j)
    for j in range(fn) if rights_first else ():
        column(j)
    w("    }")


def store(w, fm: int, fn: int, r0: str, c0: str):
    """The end of an entry, after its open `if (plain ...) {`: there every result matrix goes
    straight to C, then return; otherwise each passes through the scratch and the epilogue. The
    subgroup's block starts at row `r0`m0 and column `c0`n0 of C (r0, c0: the tile's origin, or
    "" where m0 and n0 already count from C's corner)."""
    for i, j in product(range(fm), range(fn)):
        w(f"    subgroupMatrixStore(&C, c_base + ({r0}m0 + {16 * i}u) * p.ldc + {c0}n0 + {16 * j}u, "
          f"acc{i}_{j}, false, p.ldc);")
    w("    return;")
    w("  }")
    for i, j in product(range(fm), range(fn)):
        w(f"  subgroupMatrixStore(&Cs, sg * 256u, acc{i}_{j}, false, 16u);")
        w("  workgroupBarrier();")
        w(f"  scratch(sg, lane, c_base, {r0}m0 + {16 * i}u, {c0}n0 + {16 * j}u);")
        w("  workgroupBarrier();")
    w("}")


def wgsl(bm=128, bn=128, bk=32, wm=2, wn=4) -> str:
    """The kernel's WGSL for one tiling (tile bm x bn, slices bk deep, wm x wn subgroups)."""
    sm, sn = bm // wm, bn // wn
    fm, fn = sm // 16, sn // 16
    nt = wm * wn * 32
    pa, pb = bm * bk // 2 // nt, bk * bn // 2 // nt
    if sm % 16 or sn % 16 or bk % 16 or pa * 2 * nt != bm * bk or pb * 2 * nt != bk * bn or pa < 1 or pb < 1:
        raise ValueError(f"tiling {bm}x{bn}x{bk} on {wm}x{wn} subgroups does not divide evenly")
    pad = 8
    fmt = {"bm": bm, "bn": bn, "bk": bk, "wm": wm, "wn": wn, "sm": sm, "sn": sn, "fm": fm, "fn": fn, "nt": nt,
               "tiling": f"BM {bm}, BN {bn}, BK {bk}, {wm} x {wn} subgroups",
               "a_len": max(bm * (bk + pad), bk * (bm + pad)), "b_len": max(bk * (bn + pad), bn * (bk + pad)),
               "c_len": wm * wn * 256, "operands": OPERANDS}
    out = [HEADER.format(**fmt)]
    w = out.append

    # Each operand's staging registers (ra0, ra1, ... then rb0, ...): operand, count, tile origin.
    regs = (("a", pa, "row0"), ("b", pb, "col0"))

    def fetch(k: str, ind: str):
        for x, _, _ in regs:
            w(f"{ind}let f{x} = inside_{x} && {k} + BK <= k_end;")
        for x, n, tile0 in regs:
            for i in range(n):
                w(f"{ind}r{x}{i} = load_{x}({i * nt}u + t, {tile0}, {k}, k_end, {x}_base, f{x});")

    for x, n, _ in regs:
        for i in range(n):
            w(f"  var r{x}{i}: vec2<f16>;")
    w("  {")
    fetch("k0", "    ")
    w("  }")
    w("  var rs = 0.0;  // ROWSUM: invocation t < BM sums row t of op(A)")
    accumulators(w, fm, fn)
    w("  for (; k0 < k_end; k0 += BK) {")
    for x, n, _ in regs:
        for i in range(n):
            w(f"    stage_{x}({i * nt}u + t, r{x}{i});")
    w("    workgroupBarrier();")
    w("    let k1 = k0 + BK;")
    w("    if (k1 < k_end) {  // the next slice's loads, in flight during the multiply-adds below")
    fetch("k1", "      ")
    w("    }")
    w("    if (rowsum && t < BM) {  // row t of op(A)'s staged slice (zeros past K)")
    w("      var s = 0.0;")
    w("      for (var kk = 0u; kk < BK; kk++) {")
    w("        if (TRANSPOSE_A) { s += f32(As[kk * SA + t]); } else { s += f32(As[t * SA + kk]); }")
    w("      }")
    w("      rs += s;")
    w("    }")
    for kk in range(0, bk, 16):
        multiply_add(w, fm, fn, lambda i: f"left(m0 + {16 * i}u, {kk}u)",
                     lambda j: f"right(n0 + {16 * j}u, {kk}u)", rights_first=False)
    w("    workgroupBarrier();")
    w("  }")
    w("  if (rowsum && t < BM && row0 + t < p.M) { G[wg.z * p.M + row0 + t] = rs; }")
    w("  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;")
    w("  let inside = row0 + BM <= p.M && col0 + BN <= p.N;")
    w("  if (plain && inside && p.ldc % 4u == 0u && c_base % 4u == 0u) {")
    store(w, fm, fn, "row0 + ", "col0 + ")
    return "\n".join(out) + "\n"


# The direct-load entries: name -> (wm, wn, fm, fn, ku): wm x wn subgroups a workgroup, each
# owning fm x fn 16x16 result matrices, the K loop unrolled ku times. Measured on the H200 (see
# __init__.PREFERENCE for which shapes each serves).
DIRECT = {"direct_64": (1, 1, 4, 4, 1), "direct_64_u2": (1, 1, 4, 4, 2), "direct_64x128": (1, 2, 4, 4, 1),
          "direct_128x64": (2, 1, 4, 4, 1), "direct_128": (2, 2, 4, 4, 1), "direct_32x64": (1, 1, 2, 4, 1)}

DIRECT_HEADER = """
// ---- Direct-load entries (direct_*) and the f16 cast ---------------------------------------------
// The same contract without the causal flags, on operands already in f16 (A16, B16: the f16 copies
// that cast_f16 writes, offsets and strides in f16 elements): each subgroup loads its operand
// matrices straight from storage, no workgroup memory and no barriers in the K loop (the
// hardware's caches serve the re-reads). A transposed operand is loaded column-major. The host
// picks an entry only where M, N and K are multiples of its tile and the offsets keep 16-byte
// alignment (matmul_f16.pick_direct); ROWSUM is summed from storage by the column-0 workgroups.
@group(0) @binding(1) var<storage, read> A16: array<f16>;
@group(0) @binding(2) var<storage, read> B16: array<f16>;

fn dleft(base: u32, m: u32, k: u32) -> subgroup_matrix_left<f16, 16, 16> {
  if (TRANSPOSE_A) { return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&A16, base + k * p.lda + m, true, p.lda); }
  return subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&A16, base + m * p.lda + k, false, p.lda);
}

fn dright(base: u32, n: u32, k: u32) -> subgroup_matrix_right<f16, 16, 16> {
  if (TRANSPOSE_B) { return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&B16, base + n * p.ldb + k, true, p.ldb); }
  return subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&B16, base + k * p.ldb + n, false, p.ldb);
}

// ROWSUM: G[z * M + r] = the sum over K of row r of op(A), rows r0 .. r0 + rows, nt invocations.
fn drowsum(z: u32, base: u32, r0: u32, rows: u32, t: u32, nt: u32) {
  for (var r = t; r < rows; r += nt) {
    var s = 0.0;
    for (var k = 0u; k < p.K; k++) {
      if (TRANSPOSE_A) { s += f32(A16[base + k * p.lda + r0 + r]); } else { s += f32(A16[base + (r0 + r) * p.lda + k]); }
    }
    if (r0 + r < p.M) { G[z * p.M + r0 + r] = s; }
  }
}

// D16[dst_off / 2 ..] <- S32[src_off .. src_off + n] as packed f16 pairs (dst_off even; an odd n
// leaves a zero in the last high half), rounded as the staged kernel rounds (f16()).
@group(0) @binding(0) var<uniform> cp: Cast;
@group(0) @binding(1) var<storage, read> S32: array<f32>;
@group(0) @binding(2) var<storage, read_write> D16: array<u32>;

@compute @workgroup_size(256)
fn cast_f16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = gid.x + gid.y * nw.x * 256u;
  let i = 2u * w;
  if (i >= cp.n) { return; }
  var y = 0.0;
  if (i + 1u < cp.n) { y = S32[cp.src_off + i + 1u]; }
  D16[cp.dst_off / 2u + w] = bitcast<u32>(vec2<f16>(vec2<f32>(S32[cp.src_off + i], y)));
}
"""


def wgsl_direct(name: str, wm: int, wn: int, fm: int, fn: int, ku: int) -> str:
    """One direct-load entry point: wm x wn subgroups of fm x fn 16x16 matrices, K unrolled ku times
    (K a multiple of 16 * ku). Every accumulator and operand matrix a named variable (see above)."""
    sm, sn, nt = 16 * fm, 16 * fn, 32 * wm * wn
    out = [f"""
// {name}: {wm} x {wn} subgroups of {fm} x {fn} matrices ({wm * sm} x {wn * sn} of C), K unrolled {ku}x
@compute @workgroup_size({nt})
fn {name}(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {{
  let outer = wg.z / p.inner;
  let inner = wg.z % p.inner;
  let a_base = p.a_off + outer * p.a_so + inner * p.a_si;
  let b_base = p.b_off + outer * p.b_so + inner * p.b_si;
  let c_base = p.c_off + outer * p.c_so + inner * p.c_si;
  let sg = t / 32u;
  let lane = t % 32u;
  let row0 = wg.y * {wm * sm}u;
  let m0 = row0 + (sg / {wn}u) * {sm}u;
  let n0 = wg.x * {wn * sn}u + (sg % {wn}u) * {sn}u;"""]
    w = out.append
    accumulators(w, fm, fn)
    w(f"  for (var k = 0u; k < p.K; k += {16 * ku}u) {{")
    for u in range(ku):
        multiply_add(w, fm, fn, lambda i: f"dleft(a_base, m0 + {16 * i}u, k + {16 * u}u)",
                     lambda j: f"dright(b_base, n0 + {16 * j}u, k + {16 * u}u)", rights_first=True)
    w("  }")
    w(f"  if ((p.flags & ROWSUM) != 0u && wg.x == 0u) {{ drowsum(wg.z, a_base, row0, {wm * sm}u, t, {nt}u); }}")
    w("  let plain = (p.flags & (ACCUMULATE | BIAS | RESIDUAL | GELU | GELU_GRAD)) == 0u && p.alpha == 1.0;")
    w("  if (plain) {")
    store(w, fm, fn, "", "")
    return "\n".join(out) + "\n"


def module() -> str:
    """The whole file: the staged kernel (DEFAULT tiling), the cast and the direct entries."""
    return wgsl(**DEFAULT) + DIRECT_HEADER + "".join(wgsl_direct(name, *t) for name, t in DIRECT.items())


if __name__ == "__main__":  # python -m py_core.kernels.matmul_f16.wgsl OUT [BM BN BK WM WN]
    import sys

    from ..family import assemble  # as a backend compiles it (header and all)
    tiling = [int(x) for x in sys.argv[2:7]]
    text = wgsl(*tiling) + DIRECT_HEADER + "".join(wgsl_direct(n, *t) for n, t in DIRECT.items()) \
        if tiling else module()
    Path(sys.argv[1]).write_text(assemble("matmul_f16", text))
