// The WebGPU runtime that py_core's webgpu backend drives (py_core/gpu/webgpu.py).
// Python hands over buffers, kernels and whole recorded plans once; each later call runs a plan by
// id, so a training step or a tree level costs O(1) Python-to-JS calls however many dispatches it
// holds. Every create call is checked, and errors name the kernel or operation that failed.

// The limits that decide what fits; requested at the adapter's maximum.
export const LIMITS = [
  "maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupsPerDimension", "maxStorageBuffersPerShaderStage",
];
// Optional features used behind checks when the adapter has them.
export const FEATURES = ["subgroups", "shader-f16", "timestamp-query",
  "chromium-experimental-subgroup-matrix"];

// What the mixed-precision path (py_core/kernels/matmul_f16: f16 operands on tensor cores)
// needs; py_core.transformer.model.mixed_unavailable checks the same from the adapter below.
export const TENSOR_CORE_FEATURES = ["shader-f16", "subgroups", "chromium-experimental-subgroup-matrix"];
const TENSOR_CORE_WORKGROUP_BYTES = 28672;  // matmul_f16.WORKGROUP_BYTES
export const NVIDIA_F16_FLAG = "--enable-dawn-features=vulkan_enable_f16_on_nvidia";

// {available, why}: whether this adapter runs the mixed-precision (tensor core) path, and why.
export function tensorCores(features, adapter, limits) {
  const missing = TENSOR_CORE_FEATURES.filter((f) => !features.includes(f));
  const nvidia = /nvidia/i.test(`${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
  if (missing.length) {
    const hint = nvidia && missing.includes("shader-f16")
      ? ` (Chrome on NVIDIA offers shader-f16 only when started with ${NVIDIA_F16_FLAG})` : "";
    return { available: false, why: `this adapter lacks ${missing.join(", ")}${hint}` };
  }
  const configs = adapter.subgroup_matrix_configs || [];
  if (!configs.some((c) => c.component === "f16" && c.result === "f32" && c.M === 16 && c.N === 16 && c.K === 16)) {
    return { available: false, why: "this adapter has no f16 x f16 -> f32 16x16x16 subgroup-matrix configuration" };
  }
  if (adapter.subgroup_min_size !== 32 || adapter.subgroup_max_size !== 32) {
    return { available: false, why: `the f16 kernels are written for subgroups of 32, this adapter's are ` +
      `${adapter.subgroup_min_size}-${adapter.subgroup_max_size}` };
  }
  if ((limits.maxComputeWorkgroupStorageSize || 0) < TENSOR_CORE_WORKGROUP_BYTES) {
    return { available: false, why: `the f16 kernels need ${TENSOR_CORE_WORKGROUP_BYTES} bytes of workgroup memory` };
  }
  return { available: true, why: "f16 x f16 -> f32 16x16x16 subgroup matrices (tensor cores)" };
}

const QUERIES_PER_SET = 2048;  // dispatches a query set stamps (WebGPU allows 4096 queries a set)
// Pipelines compiling at once (GPURuntime.pump): as many as the machine has cores, at least two.
const COMPILES = Math.max(2, globalThis.navigator?.hardwareConcurrency ?? 2);

export class GPUUnavailable extends Error {
  constructor(reason, message) { super(message); this.reason = reason; }
}

// Opens an adapter and a device, or throws GPUUnavailable with the reason and what to do.
export async function openGPU() {
  if (!("gpu" in navigator) || !navigator.gpu) {
    throw new GPUUnavailable("no-webgpu",
      "This browser does not offer WebGPU (navigator.gpu is missing). Use a recent Chrome or Edge, " +
      "or Firefox or Safari with WebGPU enabled, and open the page on http://localhost or https.");
  }
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (e) { /* treated as no adapter */ }
  if (!adapter) {
    throw new GPUUnavailable("no-adapter",
      "WebGPU is present but no GPU adapter was offered: the GPU may be blocklisted or disabled. " +
      "chrome://gpu says why; updating the GPU driver or enabling hardware acceleration may help.");
  }
  const requiredLimits = {};
  for (const name of LIMITS) if (adapter.limits[name] !== undefined) requiredLimits[name] = adapter.limits[name];
  const requiredFeatures = FEATURES.filter((f) => adapter.features.has(f));
  let device;
  try {
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
  } catch (e) {
    throw new GPUUnavailable("device-refused",
      `The GPU adapter refused to open a device (${e.message}). Close other GPU-heavy tabs and reload.`);
  }
  return new GPURuntime(device, describeAdapter(adapter, device, requiredFeatures));
}

function describeAdapter(adapter, device, features) {
  const info = adapter.info || {};
  const limits = {};
  for (const name of LIMITS) limits[name] = device.limits[name];
  const described = {
    vendor: info.vendor || "", architecture: info.architecture || "", device: info.device || "",
    description: info.description || "",
    is_fallback_adapter: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false),
    subgroup_min_size: info.subgroupMinSize ?? null, subgroup_max_size: info.subgroupMaxSize ?? null,
    // chromium-experimental-subgroup-matrix: the matrix shapes and types the adapter multiplies
    subgroup_matrix_configs: [...(info.subgroupMatrixConfigs ?? [])].map((c) => ({
      component: c.componentType, result: c.resultComponentType, M: c.M, N: c.N, K: c.K })),
  };
  described.tensor_cores = tensorCores(features, described, limits);
  return { adapter: described, limits, features };
}

export class GPURuntime {
  constructor(device, description) {
    this.device = device;
    this.description = description;
    this.buffers = new Map();
    this.kernels = new Map();
    this.plans = new Map();
    this.modules = new Map();      // family -> {source, serial, module: promise}
    this.pipelines = new Map();    // "serial/entry/constants" -> promise of a kernel id
    this.urgent = [];              // compiles a job waits for, first asked first
    this.ahead = [];               // compiles ahead (warm), the newest list first
    this.compiling = 0;
    this.pipelinesStarted = 0;
    this.pipelinesDone = 0;
    this.compileWaitMs = 0;
    this.bufferBytes = 0;   // sizes of the live buffers in `buffers`
    this.nextId = 1;
    this.error = null;   // the first uncaptured error, reported at the next call
    this.lostInfo = null;
    device.lost.then((info) => { this.lostInfo = info; });
    device.addEventListener("uncapturederror", (ev) => { this.error ??= ev.error.message; });
  }

  describeJSON() { return JSON.stringify(this.description); }

  check() {
    if (this.lostInfo) {
      throw new Error(`the GPU device was lost (${this.lostInfo.reason || "unknown"}: ${this.lostInfo.message}). ` +
        "Reload the page to start again.");
    }
    if (this.error) {
      const msg = this.error; this.error = null;
      throw new Error(`WebGPU validation error: ${msg}`);
    }
  }

  createBuffer(nbytes, uniform) {
    this.check();
    const U = GPUBufferUsage;
    const usage = (uniform ? U.UNIFORM : U.STORAGE) | U.COPY_DST | U.COPY_SRC;
    const size = Math.max(16, Math.ceil(nbytes / 16) * 16);
    const buffer = this.device.createBuffer({ size, usage });
    this.bufferBytes += size;
    const id = this.nextId++;
    this.buffers.set(id, buffer);
    return id;
  }

  // `data` is a Python array.array (a PyProxy, viewed without a copy) or a typed array.
  writeBuffer(id, byteOffset, data) {
    const view = typeof data.getBuffer === "function" ? data.getBuffer() : null;
    const arr = view ? view.data : data;
    try {
      this.device.queue.writeBuffer(this.buffers.get(id), byteOffset, arr.buffer, arr.byteOffset, arr.byteLength);
    } finally {
      if (view) view.release();
    }
  }

  // A forest's host arrays in JavaScript (py_core.forest.trees.JSTrees): Pyodide passes no Python
  // buffer above 2 GiB of its heap to JavaScript, so a large forest stays out of Python's memory.
  hostArray(dtype, n) {
    return new ({ i32: Int32Array, f32: Float32Array }[dtype])(n);
  }

  // Nodes at..at + m - 1 from their device form (src: bytes of u32 (m, 3), a readback), de-interleaved.
  putNodes(src, at, feature, threshold, left) {
    const w = new Uint32Array(src.buffer, src.byteOffset, src.byteLength / 4);
    const f = new Uint32Array(feature.buffer), t = new Uint32Array(threshold.buffer), l = new Uint32Array(left.buffer);
    for (let i = 0, j = 0; j < w.length; i++, j += 3) {
      f[at + i] = w[j];
      t[at + i] = w[j + 1];
      l[at + i] = w[j + 2];
    }
  }

  // Values from value[at] on (src: bytes of f32, a readback).
  putValues(src, at, value) {
    new Uint8Array(value.buffer).set(src, 4 * at);
  }

  // Every readback: parts [[buffer id, byte offset, bytes], ...] (JSON; multiples of 4) copied
  // end to end into one mappable buffer and mapped now. The promise (a Uint8Array of their bytes)
  // waits on the work submitted so far, not on what is submitted after it, so a forest's finished
  // trees come back while later ones grow. The mappable buffer goes either way.
  readPieces(partsJSON) {
    this.check();
    const parts = JSON.parse(partsJSON);
    let size = 0;
    for (const [, , n] of parts) size += n;
    const staging = this.device.createBuffer({ size: Math.max(4, size), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = this.device.createCommandEncoder();
    let at = 0;
    for (const [id, offset, n] of parts) {
      enc.copyBufferToBuffer(this.buffers.get(id), offset, staging, at, n);
      at += n;
    }
    this.device.queue.submit([enc.finish()]);
    return staging.mapAsync(GPUMapMode.READ).then(() => {
      const out = new Uint8Array(staging.getMappedRange().slice(0, size));
      staging.unmap();
      staging.destroy();
      return out;
    }, (e) => {
      staging.destroy();
      this.check();
      throw e;
    });
  }

  // Pipelines are compiled once a tab and shared by every job: keyed by (family's WGSL, entry,
  // override constants), each entry the promise of its kernel id from the moment it is asked for,
  // so a job that asks for a kernel compiled ahead (warm) awaits that compile rather than
  // starting its own. `constantsJSON`: the constants' JSON, keys sorted (py_core sends them so:
  // the key is their JSON as JavaScript writes it). Resolves with the kernel's id; the time it
  // waited counts in compileStats.
  async createKernel(family, source, entry, constantsJSON) {
    this.check();
    const t0 = performance.now();
    try {
      return await this.pipeline(family, source, entry, JSON.parse(constantsJSON), true);
    } finally {
      this.compileWaitMs += performance.now() - t0;
    }
  }

  // Queues kernels to compile ahead, without waiting (py_core's Backend.warm): `specJSON` is
  // {"sources": {family: WGSL}, "kernels": [[family, entry, constants], ...]}. The newest list
  // goes first (the config a panel shows now, before the forest's set of the page's start). A
  // failed compile stays in the cache and is the error of the job that asks for it (createKernel).
  warm(specJSON) {
    this.check();
    const { sources, kernels } = JSON.parse(specJSON);
    const batch = [];
    for (const [family, entry, constants] of kernels) {
      this.pipeline(family, sources[family], entry, constants, false, batch).catch(() => {});
    }
    this.ahead.unshift(...batch);
    this.pump();
  }

  // {started: pipelines asked for in this tab (compiled, compiling or queued), waited_s: seconds
  // createKernel waited on compiles, in_flight: those not yet done}: a job's share is the change.
  compileStats() {
    return JSON.stringify({ started: this.pipelinesStarted, waited_s: this.compileWaitMs / 1000,
                            in_flight: this.pipelinesStarted - this.pipelinesDone });
  }

  // The promise of a pipeline's kernel id, made and queued on first ask: a job's ask (now) goes
  // before every compile ahead, and takes a queued one of these forward; a warm's joins `batch`.
  pipeline(family, source, entry, constants, now, batch = null) {
    const mod = this.shaderModule(family, source);
    const key = `${mod.serial}/${entry}/${JSON.stringify(constants)}`;
    let got = this.pipelines.get(key);
    if (!got) {
      this.pipelinesStarted++;
      let settle;
      got = new Promise((resolve, reject) => { settle = { resolve, reject }; });
      // its place in the queues (pump): what starts its compile and settles the promise
      got.job = { start: () => this.compilePipeline(family, mod.module, entry, constants).then(settle.resolve, settle.reject) };
      this.pipelines.set(key, got);
      if (now) this.urgent.push(got.job);
      else batch.push(got.job);
    } else if (this.ahead.includes(got.job)) {  // queued ahead, not yet compiling: forward
      this.ahead.splice(this.ahead.indexOf(got.job), 1);
      (now ? this.urgent : batch).push(got.job);
    }
    if (now) this.pump();
    return got;
  }

  // Compiles side by side, at most COMPILES at once, so that a later ask (a job's, a newer warm)
  // is not queued in the browser behind a whole set compiling ahead (on a CPU adapter compiling
  // takes the cores the job needs).
  pump() {
    while (this.compiling < COMPILES && (this.urgent.length || this.ahead.length)) {
      const job = this.urgent.shift() ?? this.ahead.shift();
      this.compiling++;
      job.start().finally(() => { this.compiling--; this.pipelinesDone++; this.pump(); });
    }
  }

  // A family's shader module (its compilation messages checked once), made once per WGSL text.
  shaderModule(family, source) {
    let mod = this.modules.get(family);
    if (!mod || mod.source !== source) {
      const module = this.device.createShaderModule({ code: source, label: family });
      mod = { source, serial: this.nextId++, module: module.getCompilationInfo().then((info) => {
        const errors = info.messages.filter((m) => m.type === "error");
        if (errors.length) {
          throw new Error(`${family}.wgsl: ` + errors.map((m) => `line ${m.lineNum}:${m.linePos} ${m.message}`).join("; "));
        }
        return module;
      }) };
      this.modules.set(family, mod);
    }
    return mod;
  }

  async compilePipeline(family, modulePromise, entry, constants) {
    const module = await modulePromise;
    // The error scope wraps the call alone: compiles run side by side, and scopes are a stack.
    this.device.pushErrorScope("validation");
    const made = this.device.createComputePipelineAsync({
      label: `${family}.${entry}`, layout: "auto", compute: { module, entryPoint: entry, constants },
    });
    const scope = this.device.popErrorScope();
    let pipeline, failure = null;
    try {
      pipeline = await made;
    } catch (e) {
      failure = e;
    }
    const err = await scope;  // the validation message says more, when any
    if (err) throw new Error(`${family}.${entry}: ${err.message}`);
    if (failure) throw failure;
    const id = this.nextId++;
    this.kernels.set(id, pipeline);
    return id;
  }

  // ops (py_core/gpu/webgpu.py): {kind: "dispatch", kernel, buffers, grid: [x, y, z], name} |
  // {kind: "clear", buffer} | {kind: "copy", src, srcOffset, dst, dstOffset, bytes}, ids and bytes.
  // A dispatch's bind group is made here, once; clears and copies keep their buffer ids.
  createPlan(opsJSON) {
    this.check();
    const steps = JSON.parse(opsJSON).map((op) => {
      if (op.kind !== "dispatch") return op;
      const pipeline = this.kernels.get(op.kernel);
      this.device.pushErrorScope("validation");
      const group = this.device.createBindGroup({
        label: op.name, layout: pipeline.getBindGroupLayout(0),
        entries: op.buffers.map((b, i) => ({ binding: i, resource: { buffer: this.buffers.get(b) } })),
      });
      this.device.popErrorScope().then((err) => { if (err) this.error ??= `${op.name}: ${err.message}`; });
      return { kind: "dispatch", pipeline, group, grid: op.grid, name: op.name };
    });
    const id = this.nextId++;
    this.plans.set(id, steps);
    return id;
  }

  // The one encoder of plan steps: consecutive dispatches share a compute pass, except those for
  // which stamp(step, i) gives timestampWrites (a pass of their own, stamped at start and end).
  encode(enc, steps, stamp = null) {
    let pass = null;
    steps.forEach((s, i) => {
      if (s.kind === "dispatch") {
        const timestampWrites = stamp && stamp(s, i);
        if (timestampWrites && pass) { pass.end(); pass = null; }
        const p = timestampWrites ? enc.beginComputePass({ timestampWrites }) : (pass ??= enc.beginComputePass());
        p.setPipeline(s.pipeline);
        p.setBindGroup(0, s.group);
        p.dispatchWorkgroups(...s.grid);
        if (timestampWrites) p.end();
        return;
      }
      if (pass) { pass.end(); pass = null; }
      if (s.kind === "clear") enc.clearBuffer(this.buffers.get(s.buffer));
      else enc.copyBufferToBuffer(this.buffers.get(s.src), s.srcOffset, this.buffers.get(s.dst), s.dstOffset, s.bytes);
    });
    if (pass) pass.end();
  }

  runPlan(id, repeat = 1) { this.runPlans([id], repeat); }

  // Several plans, `repeat` times, in one command encoder and one submission. `ids`: an array,
  // or its JSON (from Python).
  runPlans(ids, repeat = 1) {
    this.check();
    if (typeof ids === "string") ids = JSON.parse(ids);
    const enc = this.device.createCommandEncoder();
    const prof = this.prof;
    const first = prof ? prof.names.length : 0;
    // Profiling (profileStart): each dispatch stamped, while the query sets have room.
    const stamp = prof && ((s) => {
      if (prof.names.length >= prof.capacity) return null;
      const q = prof.names.length;
      const set = prof.sets[Math.floor(q / QUERIES_PER_SET)] ?? this.addQuerySet(prof);
      const at = 2 * (q % QUERIES_PER_SET);
      prof.names.push(s.name);
      return { querySet: set.qs, beginningOfPassWriteIndex: at, endOfPassWriteIndex: at + 1 };
    });
    for (let r = 0; r < repeat; r++) {
      for (const id of ids) {
        const steps = this.plans.get(id);
        if (!steps) throw new Error(`plan ${id} was freed or never made`);
        this.encode(enc, steps, stamp);
      }
    }
    if (prof && prof.names.length > first) prof.submits.push([first, prof.names.length]);
    this.device.queue.submit([enc.finish()]);
  }

  // The one profiling mechanism (py_core's Backend.profile_start/profile_stop/profile): while a
  // profile is open, every dispatch runPlans encodes gets a compute pass of its own with
  // timestamps at its start and end ("timestamp-query"). Chromium quantises timestamps (100 µs
  // unless its WebGPU developer features are on): sums over many dispatches are fair, single
  // values are not.
  profileStart(capacity = 65536) {
    this.check();
    if (!this.device.features.has("timestamp-query")) throw new Error("this device has no timestamp-query");
    this.prof = { capacity, names: [], sets: [], submits: [] };
  }

  addQuerySet(prof) {
    const set = {
      qs: this.device.createQuerySet({ type: "timestamp", count: 2 * QUERIES_PER_SET }),
      resolved: this.device.createBuffer({ size: 16 * QUERIES_PER_SET,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }),
    };
    prof.sets.push(set);
    return set;
  }

  // JSON {"ops": [[label, ns], ...] a dispatch at a time in submission order, "span": ns from
  // each submission's first dispatch start to its last's end, summed}.
  async profileStop() {
    const prof = this.prof;
    this.prof = null;
    const stamps = new Array(2 * prof.names.length);
    try {
      for (const [i, set] of prof.sets.entries()) {
        const count = Math.min(QUERIES_PER_SET, prof.names.length - i * QUERIES_PER_SET);
        if (count <= 0) break;
        const staging = this.device.createBuffer({ size: 16 * count, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        const enc = this.device.createCommandEncoder();
        enc.resolveQuerySet(set.qs, 0, 2 * count, set.resolved, 0);
        enc.copyBufferToBuffer(set.resolved, 0, staging, 0, 16 * count);
        this.device.queue.submit([enc.finish()]);
        await staging.mapAsync(GPUMapMode.READ);
        const got = new BigUint64Array(staging.getMappedRange());
        for (let q = 0; q < 2 * count; q++) stamps[2 * i * QUERIES_PER_SET + q] = got[q];
        staging.unmap();
        staging.destroy();
      }
    } finally {
      for (const set of prof.sets) { set.qs.destroy(); set.resolved.destroy(); }
    }
    this.check();
    const ops = prof.names.map((name, q) => {
      const a = stamps[2 * q], b = stamps[2 * q + 1];
      return [name, b > a ? Number(b - a) : 0];
    });
    let span = 0;
    for (const [lo, hi] of prof.submits) {
      let first = null, last = null;
      for (let q = lo; q < hi; q++) {
        const a = stamps[2 * q], b = stamps[2 * q + 1];
        if (first === null || a < first) first = a;
        if (last === null || b > last) last = b;
      }
      if (first !== null && last > first) span += Number(last - first);
    }
    return JSON.stringify({ ops, span });
  }

  // The queue's promise for the work submitted so far, taken now (py_core's finish and
  // finish_soon): it does not wait on what is submitted after it, and it does not reject (py_core
  // calls check() once it is done).
  workDone() {
    return this.device.queue.onSubmittedWorkDone();
  }

  destroyBuffer(id) {
    const b = this.buffers.get(id);
    if (b) { this.bufferBytes -= b.size; b.destroy(); this.buffers.delete(id); }
  }

  // A plan's bind groups go with it (WebGPU frees them once unreferenced).
  destroyPlan(id) { this.plans.delete(id); }

  // What this runtime holds: buffers and their bytes (16-byte padded sizes), plans, kernels.
  memory() {
    return { buffers: this.buffers.size, bytes: this.bufferBytes, plans: this.plans.size,
             kernels: this.kernels.size };
  }

  memoryJSON() { return JSON.stringify(this.memory()); }
}
