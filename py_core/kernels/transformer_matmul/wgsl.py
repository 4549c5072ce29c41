"""Writes the entry points of transformer_matmul, one a tiling (`TILES` in the family's
description: `matmul` 64 x 64, `matmul_wide` 128 x 64, `matmul_big` 128 x 128), when the shader is
loaded; what they share (bindings, loads, the epilogue, the tile set-up) is
shaders/transformer_matmul.wgsl.

Written out here, as matmul_f16's tilings are, rather than as one WGSL function over a tile size:
WGSL has no loop unrolling, and an accumulator indexed by a loop variable could be demoted to local
memory, so every multiply-add and every store names its accumulator with a constant index.

A tiling of R x N (R, N in 64, 128) runs 256 invocations as 16 x 16; invocation (tx, ty) owns
rows 64 h + 4 ty .. + 3 (h < R / 64) and columns 64 g + 4 tx .. + 3 (g < N / 64), accumulator
acc[(4 h + i) * (N / 64) + g] for row 64 h + 4 ty + i and column block g. Tiles of op(A) and op(B),
16 deep in k, sit in workgroup memory k-major as vec4s (rows of R / 4 + 1 vec4s: the padding
spreads stores along k over banks), so an invocation reads 4 rows (or columns) of a block in one
load; the next tiles' global loads are issued before the current tiles' multiply-adds.
"""
from __future__ import annotations

TK = 16  # depth in k of a staged tile
NAMES = {"matmul": "s", "matmul_wide": "w", "matmul_big": "b"}  # its workgroup arrays: A<x>, B<x>


def _stage(out: list[str], what: str, side: str, n: int, size: int, k: str) -> None:
    """The `n` staged elements of invocation t of op(A) (side "a") or op(B) (side "b"), for the
    tile of `size` rows or columns at k (`k`): loaded into registers or stored into workgroup
    memory. Neighbours read neighbouring addresses of the stored layout (along k when k is the
    contiguous index), so global loads coalesce."""
    w = out.append
    w(f"for (var i = 0u; i < {n}u; i++) {{")
    w("  let e = t + i * 256u;")
    if side == "a":
        w(f"  var m = e % {size}u; var kk = e / {size}u;")
        w(f"  if (!trans_a) {{ kk = e % {TK}u; m = e / {TK}u; }}")
    else:
        w(f"  var n = e % {size}u; var kb = e / {size}u;")
        w(f"  if (trans_b) {{ kb = e % {TK}u; n = e / {TK}u; }}")
    w("  " + what.format(k=k))
    w("}")


def entry(name: str, rows: int, cols: int) -> str:
    x, hr, hc = NAMES[name], rows // 64, cols // 64
    sa, sb = rows // 4 + 1, cols // 4 + 1
    arr_a, arr_b, na, nb = f"A{x}", f"B{x}", rows // 16, cols // 16
    out: list[str] = []
    w = out.append

    def stage(body: list[str], what_a: str, what_b: str, k: str, indent: str) -> None:
        lines: list[str] = []
        if na == nb:  # one loop stages both tiles
            lines = _merged(what_a, what_b, na, rows, cols, k)
        else:
            _stage(lines, what_a, "a", na, rows, k)
            _stage(lines, what_b, "b", nb, cols, k)
        body += [indent + line for line in lines]

    load_a = "ra[i] = load_a(a_base, row0 + m, {k} + kk);"
    load_b = "rb[i] = load_b(b_base, {k} + kb, col0 + n);"
    put_a = f"{arr_a}[kk * {sa}u + m / 4u][m % 4u] = ra[i];"
    put_b = f"{arr_b}[kb * {sb}u + n / 4u][n % 4u] = rb[i];"
    w(f"// ---- {name}: {rows} x {cols} tiles " + "-" * (75 - len(name) - len(f"{rows} x {cols}")))
    w(f"var<workgroup> {arr_a}: array<vec4<f32>, {TK * sa}>;  // [{TK}][{sa}]")
    w(f"var<workgroup> {arr_b}: array<vec4<f32>, {TK * sb}>;  // [{TK}][{sb}]")
    w("")
    w("@compute @workgroup_size(256)")
    w(f"fn {name}(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {{")
    w(f"  let row0 = wg.y * {rows}u;")
    w(f"  let col0 = wg.x * {cols}u;")
    w(f"  if ((p.flags & SKIP_UPPER) != 0u && col0 > row0 + {rows}u - 1u) {{ return; }}  // whole workgroup: uniform")
    w(f"  let s = tile_setup(wg, row0, {rows}u);")
    w("  let a_base = s.a_base; let b_base = s.b_base; let c_base = s.c_base; let kr = s.kr;")
    w("  let trans_a = s.trans_a; let trans_b = s.trans_b; let rowsum = s.rowsum;")
    w("  let tx = t % 16u;")
    w("  let ty = t / 16u;")
    w(f"  var ra: array<f32, {na}>;")
    w(f"  var rb: array<f32, {nb}>;")
    stage(out, load_a, load_b, "kr.x", "  ")
    w(f"  var acc: array<vec4<f32>, {4 * hr * hc}>;")
    w(f"  var rsum: array<f32, {na}>;")
    w(f"  for (var k0 = kr.x; k0 < kr.y; k0 += {TK}u) {{")
    w(f"    if (rowsum) {{ for (var i = 0u; i < {na}u; i++) {{ rsum[i] += ra[i]; }} }}")
    stage(out, put_a, put_b, "k0", "    ")
    w("    workgroupBarrier();")
    w(f"    let k1 = k0 + {TK}u;")
    w("    if (k1 < kr.y) {  // the next tiles' loads, in flight during the multiply-adds below")
    stage(out, load_a, load_b, "k1", "      ")
    w("    }")
    w(f"    for (var kk = 0u; kk < {TK}u; kk++) {{")
    for h in range(hr):
        w(f"      let a{h} = {arr_a}[kk * {sa}u + {f'{16 * h}u + ' if h else ''}ty];")
    for g in range(hc):
        w(f"      let b{g} = {arr_b}[kk * {sb}u + {f'{16 * g}u + ' if g else ''}tx];")
    for h in range(hr):
        for i, lane in enumerate("xyzw"):
            for g in range(hc):
                a = (4 * h + i) * hc + g
                w(f"      acc[{a}] = fma(vec4<f32>(a{h}.{lane}), b{g}, acc[{a}]);")
    w("    }")
    w("    workgroupBarrier();")
    w("  }")
    w("  // constant indices only: a dynamically indexed accumulator could be demoted to local memory")
    w("  let r = row0 + ty * 4u;")
    w("  let c = col0 + tx * 4u;")
    for h in range(hr):
        for i in range(4):
            for g in range(hc):
                dr, dc = 64 * h + i, 64 * g
                w(f"  store4(c_base, {f'r + {dr}u' if dr else 'r'}, {f'c + {dc}u' if dc else 'c'}, "
                  f"acc[{(4 * h + i) * hc + g}]);")
    w("  if (rowsum) {  // the staged elements' sums, (kk, m) slot by slot, then down each row m")
    lines: list[str] = []
    _stage(lines, f"{arr_a}[kk * {sa}u + m / 4u][m % 4u] = rsum[i];", "a", na, rows, "")
    out += ["    " + line for line in lines]
    w("    workgroupBarrier();")
    w(f"    if (t < {rows}u && row0 + t < p.M) {{")
    w("      var total = 0.0;")
    w(f"      for (var kk = 0u; kk < {TK}u; kk++) {{ total += {arr_a}[kk * {sa}u + t / 4u][t % 4u]; }}")
    w("      G[wg.z * p.M + row0 + t] = total;")
    w("    }")
    w("  }")
    w("}")
    return "\n".join(out) + "\n"


def _merged(what_a: str, what_b: str, n: int, rows: int, cols: int, k: str) -> list[str]:
    return [f"for (var i = 0u; i < {n}u; i++) {{", "  let e = t + i * 256u;",
            f"  var m = e % {rows}u; var kk = e / {rows}u;", f"  if (!trans_a) {{ kk = e % {TK}u; m = e / {TK}u; }}",
            "  " + what_a.format(k=k),
            f"  var n = e % {cols}u; var kb = e / {cols}u;", f"  if (trans_b) {{ kb = e % {TK}u; n = e / {TK}u; }}",
            "  " + what_b.format(k=k), "}"]


def entries(tiles: dict) -> str:
    """Every tiling's entry point, in `tiles` order (entry name -> (rows, columns))."""
    return "\n".join(entry(name, rows, cols) for name, (rows, cols) in tiles.items())
