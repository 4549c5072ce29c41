// The tensor-core probe (run.sh opens probe.html?...): adapter, correctness of matmul_f16 against
// an f16-rounding reference, TFLOP/s of its tilings at large sizes and on the transformer's shapes
// next to transformer_matmul (f32). Every result is POSTed as one JSON line; the last has "done".
import { buffers, F, f16round, packF16, params, post, rand, reference, timeMs } from "./common.js";

const q = new URLSearchParams(location.search);
const VARIANTS = {
  v0: { BM: 128, BN: 128, BK: 32, WM: 2, WN: 4 },
  v1: { BM: 128, BN: 128, BK: 32, WM: 2, WN: 2 },
  v2: { BM: 128, BN: 128, BK: 64, WM: 2, WN: 4 },
  v3: { BM: 64, BN: 128, BK: 32, WM: 2, WN: 2 },
  v4: { BM: 128, BN: 256, BK: 32, WM: 2, WN: 4 },
  v5: { BM: 256, BN: 128, BK: 32, WM: 4, WN: 2 },
  v6: { BM: 64, BN: 64, BK: 32, WM: 2, WN: 2 },
  v7: { BM: 64, BN: 64, BK: 64, WM: 2, WN: 2 },
};
async function main() {
  if (!navigator.gpu) throw new Error("no navigator.gpu");
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) throw new Error("no adapter");
  const info = adapter.info;
  const configs = [...(info.subgroupMatrixConfigs ?? [])].map((c) => ({ component: c.componentType,
    result: c.resultComponentType, M: c.M, N: c.N, K: c.K }));
  const features = [...adapter.features];
  const want = ["shader-f16", "subgroups", "chromium-experimental-subgroup-matrix", "timestamp-query"]
    .filter((f) => adapter.features.has(f));
  const limits = {};
  for (const k of ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
    "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX"]) limits[k] = adapter.limits[k];
  const tc = want.includes("shader-f16") && want.includes("chromium-experimental-subgroup-matrix") &&
    configs.some((c) => c.component === "f16" && c.result === "f32" && c.M === 16 && c.N === 16 && c.K === 16);
  await post({ stage: "adapter", vendor: info.vendor, architecture: info.architecture, description: info.description,
    subgroupMinSize: info.subgroupMinSize, subgroupMaxSize: info.subgroupMaxSize, features, configs, limits,
    tensor_cores: tc, ua: navigator.userAgent });
  const dev = await adapter.requestDevice({ requiredFeatures: want, requiredLimits: limits });
  let lastError = null;
  dev.addEventListener("uncapturederror", (e) => { lastError = e.error.message; });
  const S = GPUBufferUsage;
  const { mk, put, read } = buffers(dev);
  async function pipeline(code, entry, constants, label) {
    const mod = dev.createShaderModule({ code, label });
    const ci = await mod.getCompilationInfo();
    const msgs = ci.messages.map((m) => `${m.type} ${m.lineNum}:${m.linePos} ${m.message}`);
    if (ci.messages.some((m) => m.type === "error")) return { error: msgs.join("; ") };
    dev.pushErrorScope("validation"); dev.pushErrorScope("internal");
    let pipe = null, err = null;
    try { pipe = await dev.createComputePipelineAsync({ layout: "auto", label, compute: { module: mod, entryPoint: entry, constants } }); }
    catch (e) { err = String(e.message ?? e); }
    const e1 = await dev.popErrorScope(), e2 = await dev.popErrorScope();
    err ??= e1?.message ?? e2?.message ?? null;
    return err ? { error: err, warnings: msgs } : { pipe, warnings: msgs };
  }
  const uni = () => dev.createBuffer({ size: 80, usage: S.UNIFORM | S.COPY_DST });
  const timeit = async (pipe, bufs, grid, iters) => await timeMs(dev, pipe, bufs, grid, iters, 1) / 1e3;  // s

  const src32 = await (await fetch("/gen/transformer_matmul.wgsl")).text();
  const srcs = {};
  const names = q.get("variants") ? q.get("variants").split(",") : Object.keys(VARIANTS);
  const pipeCache = {};
  // the pipeline of a tiling for (IN_F16, flags): the transposes are pipeline constants
  async function getPipe(name, h, flags = 0) {
    const ta = flags & F.TA ? 1 : 0, tb = flags & F.TB ? 1 : 0, key = `${name}-${h}-${ta}${tb}`;
    if (!(key in pipeCache)) {
      srcs[name] ??= await (await fetch(`/gen/matmul_f16_${name}.wgsl`)).text();
      const consts = VARIANTS[name].direct ? {} : { IN_F16: h, TRANS_A: ta, TRANS_B: tb };
      const r = await pipeline(srcs[name], "matmul", consts, key);
      pipeCache[key] = r.pipe ?? null;
      if (!r.pipe || (r.warnings ?? []).length) await post({ stage: "compile", key, ok: !!r.pipe, error: r.error ?? null, warnings: r.warnings ?? [] });
    }
    return pipeCache[key];
  }
  if (tc) for (const name of names) for (const h of (VARIANTS[name].direct ? [1] : [0, 1])) await getPipe(name, h);
  const p32 = {};
  for (const entry of ["matmul", "matmul_big"]) {
    const r = await pipeline(src32, entry, {}, entry);
    p32[entry] = r.pipe;
    if (!r.pipe) await post({ stage: "compile", variant: `f32 ${entry}`, error: r.error });
  }

  // ---- correctness ---------------------------------------------------------------------------
  const cases = [
    { M: 131, N: 97, K: 75, flags: 0, h: 0 },
    { M: 70, N: 129, K: 66, flags: F.TA, h: 0 },
    { M: 96, N: 64, K: 130, flags: F.TB, h: 1 },
    { M: 257, N: 200, K: 300, flags: F.TA | F.TB, h: 1 },
    { M: 300, N: 260, K: 70, flags: F.BIAS | F.RES | F.GELU, alpha: 0.5, h: 0 },
    { M: 200, N: 150, K: 90, flags: F.GG | F.ACC, h: 0 },
    { M: 260, N: 130, K: 100, flags: F.ROWSUM | F.TA, h: 0 },
    { M: 256, N: 256, K: 64, flags: F.SKIP | F.TB, alpha: 0.125, h: 0, batches: 3, lda: 192, ldb: 192, a_so: 256 * 192, a_si: 64, b_so: 256 * 192, b_si: 64, inner: 3, b_off: 0, c_so: 3 * 65536, c_si: 65536 },
    { M: 256, N: 64, K: 256, flags: F.UPTO, h: 0, batches: 2 , a_so: 65536, b_so: 256 * 64, c_so: 256 * 64 },
    { M: 512, N: 512, K: 512, flags: 0, h: 1 },
    { M: 512, N: 384, K: 1024, flags: F.TA, h: 0 },
  ];
  const doCases = tc && q.get("cases") !== "none" ? names : [];
  for (const name of doCases.filter((n) => !VARIANTS[n].direct)) {
    for (const [ci, cs] of cases.entries()) {
      if (name !== "v0" && ![0, 3, 4, 6, 9].includes(ci)) continue;
      const batches = cs.batches ?? 1;
      const [p, pbuf] = params(cs);
      const ext = (off, so, si, rows, ld, cols) => off + so * Math.floor((batches - 1) / p.inner) + si * (p.inner - 1) + (rows - 1) * ld + cols;
      const aN = p.flags & F.TA ? ext(p.a_off, p.a_so, p.a_si, p.K, p.lda, p.M) : ext(p.a_off, p.a_so, p.a_si, p.M, p.lda, p.K);
      const bN = p.flags & F.TB ? ext(p.b_off, p.b_so, p.b_si, p.N, p.ldb, p.K) : ext(p.b_off, p.b_so, p.b_si, p.K, p.ldb, p.N);
      const cN = ext(p.c_off, p.c_so, p.c_si, p.M, p.ldc, p.N);
      const a = rand(aN, 1 + ci), b = rand(bN, 101 + ci), c0 = rand(cN, 201 + ci), bias = rand(p.N, 301 + ci), res = rand(cN, 401 + ci);
      const ar = a.map(f16round), br = b.map(f16round);
      const A = mk(aN * 4), B = mk(bN * 4), Cb = mk(cN * 4), Bi = mk(p.N * 4), Rb = mk(cN * 4), G = mk(Math.max(cN, batches * p.M) * 4), U = uni();
      put(A, cs.h ? packF16(ar) : a); put(B, cs.h ? packF16(br) : b); put(Cb, c0); put(Bi, bias); put(Rb, res);
      dev.queue.writeBuffer(U, 0, pbuf);
      const pipe = await getPipe(name, cs.h, p.flags);
      if (!pipe) continue;
      const v = VARIANTS[name];
      const bg = dev.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [U, A, B, Cb, Bi, Rb, G].map((x, i) => ({ binding: i, resource: { buffer: x } })) });
      const e = dev.createCommandEncoder(); const pass = e.beginComputePass(); pass.setPipeline(pipe); pass.setBindGroup(0, bg);
      pass.dispatchWorkgroups(Math.ceil(p.N / v.BN), Math.ceil(p.M / v.BM), batches); pass.end(); dev.queue.submit([e.finish()]);
      const gotC = await read(Cb, cN), gotG = await read(G, Math.max(cN, batches * p.M));
      const [wantC, wantG] = reference(p, ar, br, c0, bias, res, batches, v.BM);
      const [exactC] = reference(p, a, b, c0, bias, res, batches, v.BM);
      let err = 0, errExact = 0, big = 0, errG = 0;
      for (let i = 0; i < cN; i++) { err = Math.max(err, Math.abs(gotC[i] - wantC[i])); errExact = Math.max(errExact, Math.abs(gotC[i] - exactC[i])); big = Math.max(big, Math.abs(wantC[i])); }
      if (p.flags & (F.GELU | F.ROWSUM)) for (let i = 0; i < wantG.length; i++) errG = Math.max(errG, Math.abs(gotG[i] - wantG[i]) / (1 + Math.abs(wantG[i])));
      const ok = Number.isFinite(err) && err <= 1e-3 * (1 + big) && errG <= 1e-3;
      await post({ stage: "check", variant: name, case: `${cs.M}x${cs.N}x${cs.K} flags ${cs.flags} in_f16 ${cs.h} batches ${batches}`,
        max_err_vs_f16_reference: err, max_err_vs_exact: errExact, max_abs_ref: big, g_rel_err: errG, ok, gpu_error: lastError });
      lastError = null;
      for (const x of [A, B, Cb, Bi, Rb, G, U]) x.destroy();
    }
  }

  // ---- speed at n^3 ----------------------------------------------------------------------------
  const sizes = (q.get("sizes") || "4096").split(",").map(Number);
  let warmed = false;
  for (const n of sizes) {
    const a = rand(n * n, 7), b = rand(n * n, 8);
    const A32 = mk(n * n * 4), B32 = mk(n * n * 4), A16 = mk(n * n * 2), B16 = mk(n * n * 2), Cb = mk(n * n * 4), D = mk(16), D2 = mk(16), U = uni(), U2 = uni();
    put(A32, a); put(B32, b); put(A16, packF16(a.map(f16round))); put(B16, packF16(b.map(f16round)));
    dev.queue.writeBuffer(U, 0, params({ M: n, N: n, K: n })[1]);
    dev.queue.writeBuffer(U2, 0, params({ M: n, N: n, K: n, alpha: 0.5 })[1]);
    const it = n >= 8192 ? 5 : 20;
    const rate = (s) => +(2 * n ** 3 / s / 1e12).toFixed(2);
    for (const name of tc ? names : []) {
      const v = VARIANTS[name];
      for (const h of v.direct ? [1] : [1, 0]) {
        const pipe = await getPipe(name, h);
        if (!pipe) continue;
        const bufs = v.direct ? [U, A16, B16, Cb] : [U, h ? A16 : A32, h ? B16 : B32, Cb, D, D, D2];
        if (!warmed) { await timeit(pipe, bufs, [n / v.BN, n / v.BM, 1], 3 * it); warmed = true; }  // clocks up
        const s = await timeit(pipe, bufs, [n / v.BN, n / v.BM, 1], it);
        const row = { stage: "speed", n, kernel: `matmul_f16 ${name}${v.direct ? " direct " + v.direct : ""}`, in_f16: h, ms: +(s * 1e3).toFixed(3), tflops: rate(s) };
        if (h === 1) {  // check a few entries against f64 sums of the f16 operands
          const got = await read(Cb, n * n); let worst = 0;
          for (const [i, j] of [[0, 0], [n - 1, n - 1], [17, 4000 % n], [n / 2, 3]]) {
            let r = 0; for (let k = 0; k < n; k++) r += f16round(a[i * n + k]) * f16round(b[k * n + j]);
            worst = Math.max(worst, Math.abs(r - got[i * n + j]));
          }
          row.sample_max_err = worst;
        }
        await post({ ...row, gpu_error: lastError });
      }
      if (name === "v0" && q.get("scratch") !== "0") {
        const s = await timeit(await getPipe("v0", 1), [U2, A16, B16, Cb, D, D, D2], [n / 128, n / 128, 1], it);
        await post({ stage: "speed", n, kernel: "matmul_f16 v0 alpha 0.5 (scratch epilogue)", in_f16: 1, ms: +(s * 1e3).toFixed(3), tflops: rate(s) });
      }
    }
    if (n <= 4096 || !tc) {
      for (const [entry, t] of [["matmul", 64], ["matmul_big", 128]]) {
        if (!p32[entry]) continue;
        const s = await timeit(p32[entry], [U, A32, B32, Cb, D, D, D2], [n / t, n / t, 1], n >= 4096 ? 5 : 20);
        await post({ stage: "speed", n, kernel: `transformer_matmul ${entry} (f32)`, ms: +(s * 1e3).toFixed(3), tflops: rate(s) });
      }
    }
    for (const x of [A32, B32, A16, B16, Cb, D, D2, U, U2]) x.destroy();
  }

  // ---- the transformer's matmuls: shakespeare_char (6 x 6 x 384, block 256, batch 64) -----------
  if (q.get("shapes") !== "0") {
    const T = +(q.get("rows") || 16384), Cm = 384, V = 65, H = 6, L = 256, hd = 64, Bt = T / L;
    const shapes = [
      ["qkv", { M: T, N: 3 * Cm, K: Cm, flags: F.BIAS }],
      ["attn proj", { M: T, N: Cm, K: Cm, flags: F.BIAS | F.RES }],
      ["fc", { M: T, N: 4 * Cm, K: Cm, flags: F.BIAS | F.GELU }],
      ["fc proj", { M: T, N: Cm, K: 4 * Cm, flags: F.BIAS | F.RES }],
      ["lm head", { M: T, N: V, K: Cm, flags: 0 }],
      ["dx qkv", { M: T, N: Cm, K: 3 * Cm, flags: F.TB }],
      ["dw qkv", { M: 3 * Cm, N: Cm, K: T, flags: F.TA | F.ROWSUM }],
      ["dx fc", { M: T, N: Cm, K: 4 * Cm, flags: F.TB | F.ACC }],
      ["dw fc", { M: 4 * Cm, N: Cm, K: T, flags: F.TA | F.ROWSUM }],
      ["dx fc proj", { M: T, N: 4 * Cm, K: Cm, flags: F.TB | F.GG }],
      ["dw fc proj", { M: Cm, N: 4 * Cm, K: T, flags: F.TA | F.ROWSUM }],
      ["scores", { M: L, N: L, K: hd, flags: F.TB | F.SKIP, alpha: 0.125, lda: 3 * Cm, ldb: 3 * Cm, inner: H, a_so: L * 3 * Cm, a_si: hd, b_off: Cm, b_so: L * 3 * Cm, b_si: hd, c_so: H * L * L, c_si: L * L, batches: Bt * H }],
      ["p v", { M: L, N: hd, K: L, flags: F.UPTO, ldb: 3 * Cm, ldc: Cm, inner: H, a_so: H * L * L, a_si: L * L, b_off: 2 * Cm, b_so: L * 3 * Cm, b_si: hd, c_so: L * Cm, c_si: hd, batches: Bt * H }],
    ];
    const big = 4 * Math.max(T * 4 * Cm, Bt * H * L * L, 4 * Cm * T);
    const X = mk(big), Y = mk(big), Z = mk(big), Bi = mk(4 * 4 * Cm), Rb = mk(big), G = mk(big), U = uni();
    put(X, rand(big / 4, 11, 0.5)); put(Y, rand(big / 4, 12, 0.5)); put(Rb, rand(big / 4, 13, 0.5)); put(Bi, rand(4 * Cm, 14));
    const sums = { f32: 0, f16: 0 };
    for (const [label, sh] of shapes) {
      const batches = sh.batches ?? 1;
      const [p, pbuf] = params(sh);
      dev.queue.writeBuffer(U, 0, pbuf);
      const flops = 2 * p.M * p.N * p.K * batches * ((p.flags & (F.SKIP | F.UPTO)) ? 0.5 : 1);
      const row = { stage: "shape", label, M: p.M, N: p.N, K: p.K, batches, flags: p.flags };
      for (const [entry, t] of [["matmul", 64], ["matmul_big", 128]]) {
        if (!p32[entry]) continue;
        const s = await timeit(p32[entry], [U, X, Y, Z, Bi, Rb, G], [Math.ceil(p.N / t), Math.ceil(p.M / t), batches], 20);
        row[`f32_${entry}_ms`] = +(s * 1e3).toFixed(4);
      }
      const best32 = Math.min(row.f32_matmul_ms ?? Infinity, row.f32_matmul_big_ms ?? Infinity);
      sums.f32 += best32;
      if (tc) {
        for (const name of names.filter((n) => !VARIANTS[n].direct)) {
          const pipe = await getPipe(name, 0, p.flags);
          if (!pipe) continue;
          const v = VARIANTS[name];
          const s = await timeit(pipe, [U, X, Y, Z, Bi, Rb, G], [Math.ceil(p.N / v.BN), Math.ceil(p.M / v.BM), batches], 20);
          row[`f16_${name}_ms`] = +(s * 1e3).toFixed(4);
        }
        const best16 = Math.min(...names.filter((n) => !VARIANTS[n].direct).map((n) => row[`f16_${n}_ms`] ?? Infinity));
        sums.f16 += best16;
        row.f16_best_tflops = +(flops / (best16 / 1e3) / 1e12).toFixed(2);
      }
      row.f32_best_tflops = +(flops / (best32 / 1e3) / 1e12).toFixed(2);
      await post({ ...row, gpu_error: lastError });
    }
    await post({ stage: "shapes total (one layer's matmuls + lm head, best tiling each)", f32_ms: +sums.f32.toFixed(3), f16_ms: +sums.f16.toFixed(3) });
    for (const x of [X, Y, Z, Bi, Rb, G, U]) x.destroy();
  }
}

try { await main(); } catch (e) { await post({ stage: "error", error: String(e?.stack ?? e) }); }
await post({ stage: "done" });
document.getElementById("o").textContent = "done";
