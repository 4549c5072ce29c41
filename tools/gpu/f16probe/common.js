// Shared by the tensor-core probes (probe.js, direct.js): the result post, matmul_f16's flags and
// uniform layout, its plain reference in doubles, seeded operands and f16 packing.
export const post = async (o) => { await fetch("/result", { method: "POST", body: JSON.stringify(o) }); };
export const F = { TA: 1, TB: 2, ACC: 4, BIAS: 8, SKIP: 16, UPTO: 32, FROM: 64, RES: 128, GELU: 256, GG: 512, ROWSUM: 1024 };
export const FIELDS = ["M", "N", "K", "flags", "alpha", "inner", "lda", "ldb", "ldc", "a_off", "b_off", "c_off",
  "bias_off", "a_so", "a_si", "b_so", "b_si", "c_so", "c_si"];
export const f16round = Math.f16round ?? ((x) => new Float16Array([x])[0]);

export function params(o) {
  const p = { inner: 1, alpha: 1, a_off: 0, b_off: 0, c_off: 0, bias_off: 0, a_so: 0, a_si: 0, b_so: 0,
    b_si: 0, c_so: 0, c_si: 0, flags: 0, ...o };
  p.lda ??= (p.flags & F.TA) ? p.M : p.K;
  p.ldb ??= (p.flags & F.TB) ? p.K : p.N;
  p.ldc ??= p.N;
  const buf = new ArrayBuffer(80), u = new Uint32Array(buf), f = new Float32Array(buf);
  FIELDS.forEach((k, i) => { if (k === "alpha") f[i] = p[k]; else u[i] = p[k]; });
  return [p, buf];
}

// The plain reference (double sums) of the family's contract, over already-rounded operands.
export function reference(p, a, b, c0, bias, res, batches, tile) {
  const c = Float64Array.from(c0), g = new Float64Array(Math.max(c0.length, batches * p.M));
  const gel = (x) => 0.5 * x * (1 + Math.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)));
  const gelg = (x) => { const t = Math.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x); };
  for (let z = 0; z < batches; z++) {
    const outer = Math.floor(z / p.inner), inner = z % p.inner;
    const ab = p.a_off + outer * p.a_so + inner * p.a_si, bb = p.b_off + outer * p.b_so + inner * p.b_si;
    const cb = p.c_off + outer * p.c_so + inner * p.c_si;
    for (let i = 0; i < p.M; i++) {
      const row0 = Math.floor(i / tile) * tile;
      const kEnd = p.flags & F.UPTO ? Math.min(p.K, row0 + tile) : p.K;
      const kBegin = p.flags & F.FROM ? Math.min(row0, kEnd) : 0;
      const acc = new Float64Array(p.N); let rs = 0;
      for (let k = kBegin; k < kEnd; k++) {
        const aik = p.flags & F.TA ? a[ab + k * p.lda + i] : a[ab + i * p.lda + k];
        rs += aik;
        if (!aik) continue;
        for (let j = 0; j < p.N; j++) acc[j] += aik * (p.flags & F.TB ? b[bb + j * p.ldb + k] : b[bb + k * p.ldb + j]);
      }
      if (p.flags & F.ROWSUM) g[z * p.M + i] = rs;
      for (let j = 0; j < p.N; j++) {
        if (p.flags & F.SKIP && Math.floor(j / tile) * tile > row0 + tile - 1) continue;
        let v = p.alpha * acc[j];
        if (p.flags & F.BIAS) v += bias[p.bias_off + j];
        const at = cb + i * p.ldc + j;
        if (p.flags & F.RES) v += res[at];
        if (p.flags & F.GG) v *= gelg(res[at]);
        c[at] = p.flags & F.ACC ? c[at] + v : v;
        if (p.flags & F.GELU) g[at] = gel(c[at]);
      }
    }
  }
  return [c, g];
}

export function rand(n, seed, scale = 1) {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; out[i] = (s / 4294967296 * 2 - 1) * scale; }
  return out;
}

export function packF16(vals) {  // rounded values as f16 pairs in 32-bit words
  const h = new Float16Array(vals.length + (vals.length & 1));
  h.set(vals);
  return new Uint32Array(h.buffer);
}

// A bind group of `bufs` at bindings 0, 1, ... of group 0 of pipeline `pipe`.
export const bindAll = (dev, pipe, bufs) => dev.createBindGroup({ layout: pipe.getBindGroupLayout(0),
  entries: bufs.map((b, i) => ({ binding: i, resource: { buffer: b } })) });

// Milliseconds a dispatch of `grid` takes, the mean of `iters` in one submission, after `warm`
// untimed ones (pipeline and clocks up).
export async function timeMs(dev, pipe, bufs, grid, iters, warm) {
  const bg = bindAll(dev, pipe, bufs);
  const go = async (n) => {
    const e = dev.createCommandEncoder(); const c = e.beginComputePass();
    c.setPipeline(pipe); c.setBindGroup(0, bg);
    for (let i = 0; i < n; i++) c.dispatchWorkgroups(...grid);
    c.end(); dev.queue.submit([e.finish()]); await dev.queue.onSubmittedWorkDone();
  };
  await go(warm);
  const t0 = performance.now(); await go(iters);
  return (performance.now() - t0) / iters;
}

// Storage buffers of `dev`: mk(bytes) (rounded up to 16), put(buf, typed array) at offset 0, and
// read(buf, n), the first n f32 of buf through a staging copy.
export function buffers(dev) {
  const S = GPUBufferUsage;
  const mk = (bytes) => dev.createBuffer({ size: Math.max(16, Math.ceil(bytes / 16) * 16), usage: S.STORAGE | S.COPY_DST | S.COPY_SRC });
  const put = (buf, arr) => dev.queue.writeBuffer(buf, 0, arr.buffer, arr.byteOffset, arr.byteLength);
  async function read(buf, n) {
    const st = dev.createBuffer({ size: n * 4, usage: S.MAP_READ | S.COPY_DST });
    const e = dev.createCommandEncoder(); e.copyBufferToBuffer(buf, 0, st, 0, n * 4); dev.queue.submit([e.finish()]);
    await st.mapAsync(GPUMapMode.READ); const out = new Float32Array(st.getMappedRange().slice(0)); st.unmap(); st.destroy();
    return out;
  }
  return { mk, put, read };
}
