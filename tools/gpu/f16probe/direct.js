// The direct-load probe (run.sh with PROBE_PAGE=direct.html): matmul_f16's direct entries and
// cast_f16, compiled from the family's own WGSL (gen/matmul_f16_family.wgsl, prepare.py): each
// entry checked against a double-precision reference over f16-rounded operands (flags, transposes,
// batches, padded strides and offsets), then timed on the GPT's products (forward, dX, split-K dW)
// next to the staged `matmul` on f32 operands, and at 4096^3. One JSON line a result; last "done".
import { bindAll, buffers, F, f16round, packF16, params, post, rand, reference, timeMs } from "./common.js";

const q = new URLSearchParams(location.search);
const DIRECT = JSON.parse(q.get("direct") || "{}");  // name -> [bm, bn, bk], from prepare.py's query
async function main() {
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  const want = ["shader-f16", "subgroups", "chromium-experimental-subgroup-matrix"].filter((f) => adapter.features.has(f));
  const limits = {};
  for (const k of ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize"]) limits[k] = adapter.limits[k];
  await post({ stage: "adapter", vendor: adapter.info.vendor, description: adapter.info.description, features: want, ua: navigator.userAgent });
  if (want.length < 3) return;
  const dev = await adapter.requestDevice({ requiredFeatures: want, requiredLimits: limits });
  let lastError = null;
  dev.addEventListener("uncapturederror", (e) => { lastError = e.error.message; });
  const S = GPUBufferUsage;
  const { mk, put, read } = buffers(dev);
  const uni = (bytes) => { const u = dev.createBuffer({ size: 80, usage: S.UNIFORM | S.COPY_DST }); dev.queue.writeBuffer(u, 0, bytes); return u; };
  const code = await (await fetch("/gen/matmul_f16_family.wgsl")).text();
  const mod = dev.createShaderModule({ code });
  const ci = await mod.getCompilationInfo();
  const msgs = ci.messages.map((m) => `${m.type} ${m.lineNum}:${m.linePos} ${m.message}`);
  await post({ stage: "compile", messages: msgs.slice(0, 20) });
  if (ci.messages.some((m) => m.type === "error")) return;
  const pipes = {};
  async function pipe(entry, flags, inF16) {
    const key = `${entry}-${flags & 3}-${inF16}`;
    if (!(key in pipes)) {
      const constants = entry === "cast_f16" ? {} : { IN_F16: inF16, TRANSPOSE_A: flags & F.TA ? 1 : 0, TRANSPOSE_B: flags & F.TB ? 1 : 0 };
      dev.pushErrorScope("validation");
      let p = null, err = null;
      try { p = await dev.createComputePipelineAsync({ layout: "auto", compute: { module: mod, entryPoint: entry, constants } }); }
      catch (e) { err = String(e.message ?? e); }
      const ve = await dev.popErrorScope();
      if (err || ve) await post({ stage: "pipeline", key, error: err ?? ve.message });
      pipes[key] = err || ve ? null : p;
    }
    return pipes[key];
  }
  const bind = (p, bufs) => bindAll(dev, p, bufs);
  const timeit = (p, bufs, grid) => timeMs(dev, p, bufs, grid, 20, 2);  // ms

  // ---- correctness: every direct entry on padded, offset, batched cases, and the cast ------------
  {
    const n = 1000, src = rand(n + 8, 5, 3), S32 = mk((n + 8) * 4), D = mk(4 * 600);
    put(S32, src);
    const p = await pipe("cast_f16", 0, 0);
    const u = uni(new Uint32Array([n - 1, 8, 2, 0]));
    const e = dev.createCommandEncoder(); const c = e.beginComputePass(); c.setPipeline(p); c.setBindGroup(0, bind(p, [u, S32, D]));
    c.dispatchWorkgroups(2, 1, 1); c.end(); dev.queue.submit([e.finish()]);
    const got = new Float16Array((await read(D, 600)).buffer);
    let bad = 0; for (let i = 0; i < n - 1; i++) if (got[2 + i] !== f16round(src[8 + i])) bad++;
    await post({ stage: "check", entry: "cast_f16", mismatches: bad, last_high_half_zero: got[2 + n - 1] === 0, ok: bad === 0 && got[2 + n - 1] === 0 });
  }
  const cases = [
    { flags: 0 }, { flags: F.TA }, { flags: F.TB | F.BIAS | F.RES | F.GELU, alpha: 0.5 },
    { flags: F.TA | F.TB | F.GG | F.ACC }, { flags: F.TA | F.ROWSUM, batches: 2 },
  ];
  for (const [name, [bm, bn, bk]] of Object.entries(DIRECT)) {
    for (const [ci, cs] of cases.entries()) {
      const M = 2 * bm, N = bn * (bn > 64 ? 1 : 2), K = 3 * bk * (bk > 16 ? 1 : 2), batches = cs.batches ?? 1;
      const ta = cs.flags & F.TA, tb = cs.flags & F.TB;
      const lda = (ta ? M : K) + 8, ldb = (tb ? K : N) + 16, ldc = N + 4;
      const aRows = ta ? K : M, bRows = tb ? N : K;
      const [p, pbuf] = params({ M, N, K, flags: cs.flags, alpha: cs.alpha ?? 1, lda, ldb, ldc, a_off: 8, b_off: 16, c_off: 4,
        a_so: aRows * lda, b_so: bRows * ldb, c_so: M * ldc });
      const aN = 8 + batches * aRows * lda, bN = 16 + batches * bRows * ldb, cN = 4 + batches * M * ldc;
      const a = rand(aN, 1 + ci).map(f16round), b = rand(bN, 101 + ci).map(f16round), c0 = rand(cN, 201 + ci), bias = rand(N, 301 + ci), res = rand(cN, 401 + ci);
      const A = mk(aN * 2), B = mk(bN * 2), Cb = mk(cN * 4), Bi = mk(N * 4), Rb = mk(cN * 4), G = mk(Math.max(cN, batches * M) * 4);
      put(A, packF16(a)); put(B, packF16(b)); put(Cb, c0); put(Bi, bias); put(Rb, res);
      const pp = await pipe(name, cs.flags, 1);
      if (!pp) continue;
      const e = dev.createCommandEncoder(); const c = e.beginComputePass(); c.setPipeline(pp);
      c.setBindGroup(0, bind(pp, [uni(pbuf), A, B, Cb, Bi, Rb, G])); c.dispatchWorkgroups(N / bn, M / bm, batches); c.end(); dev.queue.submit([e.finish()]);
      const gotC = await read(Cb, cN), gotG = await read(G, Math.max(cN, batches * M));
      const [wantC, wantG] = reference(p, a, b, c0, bias, res, batches, M);
      let err = 0, big = 0, errG = 0;
      for (let i = 0; i < cN; i++) { err = Math.max(err, Math.abs(gotC[i] - wantC[i])); big = Math.max(big, Math.abs(wantC[i])); }
      if (cs.flags & (F.GELU | F.ROWSUM)) for (let i = 0; i < (cs.flags & F.GELU ? cN : batches * M); i++) errG = Math.max(errG, Math.abs(gotG[i] - wantG[i]) / (1 + Math.abs(wantG[i])));
      const ok = Number.isFinite(err) && err <= 1e-3 * (1 + big) && errG <= 1e-3;
      await post({ stage: "check", entry: name, case: `${M}x${N}x${K} flags ${cs.flags} batches ${batches}`, err, big, errG, ok, gpu_error: lastError });
      lastError = null;
      for (const x of [A, B, Cb, Bi, Rb, G]) x.destroy();
    }
  }

  // ---- speed on the GPT's products ----------------------------------------------------------------
  const shapes = [];
  for (const [tag, T, C] of [["sc", 16384, 384], ["8x512", 4096, 512]]) {
    const Fm = 4 * C;
    shapes.push([`${tag} qkv fwd`, { M: T, N: 3 * C, K: C, flags: F.TB | F.BIAS }],
      [`${tag} proj fwd`, { M: T, N: C, K: C, flags: F.TB | F.BIAS | F.RES }],
      [`${tag} fc fwd`, { M: T, N: Fm, K: C, flags: F.TB | F.BIAS | F.GELU }],
      [`${tag} fcproj fwd`, { M: T, N: C, K: Fm, flags: F.TB | F.BIAS | F.RES }],
      [`${tag} fcproj dx`, { M: T, N: Fm, K: C, flags: F.GG }],
      [`${tag} fc dx`, { M: T, N: C, K: Fm, flags: 0 }],
      [`${tag} qkv dx`, { M: T, N: C, K: 3 * C, flags: 0 }]);
    for (const [w, n, k] of [["fcproj", C, Fm], ["fc", Fm, C], ["qkv", 3 * C, C], ["proj", C, C]])
      for (const s of [1, 4, 8, 16, 32]) shapes.push([`${tag} ${w} dW split ${s}`, { M: n, N: k, K: T / s, flags: F.TA | F.ROWSUM, batches: s, lda: n, ldb: k, a_so: T / s * n, b_so: T / s * k, c_so: n * k }]);
  }
  shapes.push(["4096^3", { M: 4096, N: 4096, K: 4096, flags: 0 }]);
  const big = 4 * 16384 * 1536 * 2;
  const X16 = mk(big / 2), Y16 = mk(big / 2), X32 = mk(big), Y32 = mk(big), Z = mk(big), Bi = mk(4 * 4096), Rb = mk(big), G = mk(big);
  const r1 = rand(big / 4, 11, 0.5), r2 = rand(big / 4, 12, 0.5);
  put(X32, r1); put(Y32, r2); put(X16, packF16(r1.subarray(0, big / 4))); put(Y16, packF16(r2.subarray(0, big / 4))); put(Rb, rand(big / 4, 13, 0.5)); put(Bi, rand(4096, 14));
  const only = q.get("only");
  for (const [label, sh] of shapes) {
    if (only && !only.split(",").some((w) => label.includes(w))) continue;
    const batches = sh.batches ?? 1;
    const [p, pbuf] = params(sh);
    const U = uni(pbuf);
    const flops = 2 * p.M * p.N * p.K * batches;
    const row = { stage: "shape", label, M: p.M, N: p.N, K: p.K, batches };
    if (batches <= 1 || label.includes("split 1") || true) {
      const sp = await pipe("matmul", p.flags, 0);
      if (sp && (batches === 1)) row.staged_f32 = +(flops / (await timeit(sp, [U, X32, Y32, Z, Bi, Rb, G], [Math.ceil(p.N / 128), Math.ceil(p.M / 128), batches])) / 1e9).toFixed(1);
    }
    for (const [name, [bm, bn, bk]] of Object.entries(DIRECT)) {
      if (p.M % bm || p.N % bn || p.K % bk) continue;
      const pp = await pipe(name, p.flags, 1);
      if (!pp) continue;
      row[name] = +(flops / (await timeit(pp, [U, X16, Y16, Z, Bi, Rb, G], [p.N / bn, p.M / bm, batches])) / 1e9).toFixed(1);
    }
    row.gpu_error = lastError; lastError = null;
    await post(row);  // TFLOP/s by kernel (the dW rows: the split-K products alone, slabs not summed)
  }
  {  // the cast's bandwidth on the largest activation
    const n = 16384 * 1536, p = await pipe("cast_f16", 0, 0), U = uni(new Uint32Array([n, 0, 0, 0]));
    const groups = Math.ceil(n / 512);
    const ms = await timeit(p, [U, X32, X16], [Math.min(groups, 65535), Math.ceil(groups / 65535), 1]);
    await post({ stage: "cast", n, ms: +ms.toFixed(4), GBps: +(n * 6 / ms / 1e6).toFixed(0) });
  }
}

try { await main(); } catch (e) { await post({ stage: "error", error: String(e?.stack ?? e) }); }
await post({ stage: "done" });
document.getElementById("o").textContent = "done";
