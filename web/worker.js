// The page's compute worker: Pyodide, py_core and the GPU live here, so the page never freezes.
// Messages in:  {type: "init", webgpu: bool} · {type: "run", id, job} · {type: "stop", id}
//               {type: "call", id, fn, args}: a function of py_core.browser, with hooks last
// Messages out: {type: "loading", stage, fraction} · {type: "ready", ...} · {type: "progress", id, info}
//               {type: "result", id, result} · {type: "failed", id, error}
// error: one shape, made by py_core.browser.error_of for what fails in Python and by fail() here
// for what fails in this glue: {kind: "stopped" | "data" | "job" | "gpu" | "error", message,
// line, column, field (where known), detail (the traceback)}; web/app.js reads it.
// A job's result comes from Python as JSON text plus its binary parts (py_core.jobs.results), which
// become typed arrays in the result, transferred to the page without a copy.
// Nothing a job does can end this worker or its queue: every failure (Python, this glue, the
// result's way to the page, a lost device) becomes that job's "failed" message, and the next job runs.
import { loadPyodide, version as pyodideVersion } from "/pyodide/pyodide.mjs";
import { GPUUnavailable, openGPU } from "./gpu.js";
import { parseNumericFromPython } from "./csvparse.js";
import { kernels as syntheticKernels } from "./synthetic.js";
import { columnStats } from "./colstats.js";
import { prefetch } from "./loader.js";

let pyodide = null;
let browserGlue = null;          // the py_core.browser module (a PyProxy)
let stopFlag = null;             // Int32Array over a SharedArrayBuffer when the page is isolated
let stopRequested = false;       // fallback flag, seen while Python awaits the GPU
let paused = false;             // Pause: the job waits at its next pause point
let queue = Promise.resolve();   // jobs run one at a time, in order
let runtime = null;              // the GPU runtime (gpu.js), reopened after a device loss
let current = null;              // the id of the job running now
const settled = new Set();       // ids already answered (a late error must not answer twice)

const post = (msg, transfer = []) => self.postMessage(msg, transfer);
const loading = (stage, fraction, bytes) => post({ type: "loading", stage, fraction, bytes });
const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MB`;

// py_core's CSV reader hands plain numeric files to web/csvparse.js (py_core.browser.init).
self.pyCoreParseNumeric = parseNumericFromPython;
self.pyCoreSynthetic = syntheticKernels;  // and synthetic data sets' bulk kernels to web/synthetic.js
self.pyCoreColumnStats = columnStats;  // and big numeric columns' summaries to web/colstats.js

async function init({ webgpu, stopBuffer }) {
  const t0 = performance.now();
  if (stopBuffer) stopFlag = new Int32Array(stopBuffer);
  // The adapter and device open while Python loads (a failure is said once Python is up), and
  // the forest's pipelines start compiling then.
  const gpu = webgpu ? openGPU().then((rt) => ({ rt }), (e) => ({ e })) : null;
  if (gpu) warmEarly(gpu).catch(() => {});  // only sooner: Python warms the same once it is up
  // The versioned URL is cached for good by the browser (server/static.py).
  const indexURL = `/pyodide/v${pyodideVersion}/`;
  loading("Downloading Python (Pyodide)", 0.02);
  await prefetch(["pyodide.asm.wasm", "python_stdlib.zip", "pyodide.asm.mjs", "pyodide-lock.json"].map((f) => indexURL + f),
    (got, total) => loading(`Downloading Python (Pyodide): ${mib(got)} of ${mib(total)}`,
      0.02 + 0.48 * (total ? got / total : 0), [got, total]));
  loading("Starting Python (Pyodide)", 0.5);
  pyodide = await loadPyodide({ indexURL });
  const tPyodide = performance.now();
  loading("Loading py_core", 0.6);
  const manifest = await (await fetch("/wheels/manifest.json", { cache: "no-store" })).json();
  await pyodide.loadPackage(`/wheels/${manifest.wheel}`, { messageCallback: () => {}, checkIntegrity: false });
  browserGlue = pyodide.pyimport("py_core.browser");
  await loadOwnKinds();
  const tCore = performance.now();

  loading("Opening the GPU", 0.85);
  let problem = null;
  if (webgpu) {
    const { rt, e } = await gpu;
    runtime = rt ?? null;
    if (e) {
      problem = e instanceof GPUUnavailable ? { reason: e.reason, message: e.message }
        : { reason: "error", message: String(e.message || e) };
    }
  } else {
    problem = { reason: "no-webgpu", message:
      "This browser does not offer WebGPU (navigator.gpu is missing). Use a recent Chrome or Edge, " +
      "or Firefox or Safari with WebGPU enabled, and open the page on http://localhost or https." };
  }
  // JS null would arrive as JsNull; undefined arrives as None.
  const described = JSON.parse(browserGlue.init(runtime ?? undefined));
  await warmForest();
  loading("Ready", 1.0);
  post({ type: "ready", backend: described.backend, adapter: described.adapter, limits: described.limits,
         features: described.features, problem, pyodideVersion: pyodide.version, wheel: manifest.wheel,
         timings: { pyodide: (tPyodide - t0) / 1000, py_core: (tCore - tPyodide) / 1000,
                    total: (performance.now() - t0) / 1000 } });
}

// Kinds declared outside py_core (GET /api/kinds: `code`, py_core/jobs/kinds.py): each one's package
// unpacked beside py_core, then its registry line. One that does not load is left out (the page
// says so in the console); py_core's own kinds run regardless.
const OWN_KINDS_DIR = "/home/pyodide/kinds";
async function loadOwnKinds() {
  let own = [];
  try {
    const res = await fetch("/api/kinds");
    if (res.ok) own = (await res.json()).kinds.filter((k) => k.code);
  } catch (e) { /* no answer: py_core's kinds only */ }
  if (!own.length) return;
  pyodide.runPython(`import sys\nif ${JSON.stringify(OWN_KINDS_DIR)} not in sys.path: sys.path.append(${JSON.stringify(OWN_KINDS_DIR)})`);
  const kinds = pyodide.pyimport("py_core.jobs.kinds");
  try {
    for (const k of own) {
      try {
        const res = await fetch(k.code.zip);
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        pyodide.unpackArchive(await res.arrayBuffer(), "zip", { extractDir: OWN_KINDS_DIR });
        kinds.register(k.name, k.code.path);
      } catch (e) {
        console.error(`the kind ${k.name}'s package (${k.code.zip}) did not load: ${e.message}`);
      }
    }
  } finally {
    kinds.destroy();
  }
}

// The error a Python traceback ends with (a py_core.browser function that raised): from its last
// unindented "Name: message" (or bare "Name") line to the end, as one line (a WebGPU validation
// message runs over several), without the class's module path or JS's "Error: " wrapper.
function finalError(text) {
  const lines = text.trim().split("\n");
  let i = lines.length - 1;
  while (i > 0 && !/^[A-Za-z_][\w.]*(: |$)/.test(lines[i])) i--;
  return lines.slice(i).map((l) => l.trim()).filter(Boolean).join(" ")
    .replace(/^(?:[A-Za-z_]\w*\.)+(?=\w+: )/, "").replace(/^(\w+: )Error: /, "$1");
}

// Answers job `id` as failed, once; never throws. `error`: the shape above, or anything thrown here.
function fail(id, error) {
  if (settled.has(id)) return;
  settled.add(id);
  if (typeof error?.kind !== "string") {
    const text = String(error?.message ?? error ?? "unknown error");
    error = { kind: "error", message: finalError(text), detail: text };
  }
  try {
    post({ type: "failed", id, error });
  } catch (e) {
    self.postMessage({ type: "failed", id, error: { kind: "error", message: `the job failed (${e.message})` } });
  }
}

function answer(id, result, transfer) {
  if (settled.has(id)) return;
  post({ type: "result", id, result }, transfer);
  settled.add(id);
}

// The result of py_core.browser.run, a PyProxy of (JSON text, [buffers]) (py_core.jobs.results):
// where the JSON says {"$binary": i, "dtype": ...} the part becomes a typed array, and where it
// says {"$binary": [i, j, ...], "dtype": "u8"} those parts one after another become one Uint8Array
// (a forest's binary export, made whole here rather than in Python's memory). Each is copied once
// out of Python's memory into an ArrayBuffer of its own, so that it can be transferred.
const TYPED = { u8: Uint8Array, u32: Uint32Array, i32: Int32Array, f32: Float32Array, f64: Float64Array };
function unpackResult(out) {
  const items = [];
  const views = [];  // views into Python's memory: valid until released (nothing allocates there meanwhile)
  try {
    const text = out.get(0);
    const list = out.get(1);
    try {
      for (let i = 0; i < list.length; i++) {
        items.push(list.get(i));
        // a Python buffer (a PyProxy), or a typed array already in JavaScript (a JSTrees array)
        views.push(typeof items[i].getBuffer === "function" ? items[i].getBuffer("u8")
          : { data: new Uint8Array(items[i].buffer, items[i].byteOffset, items[i].byteLength), release() {} });
      }
    } finally {
      list.destroy();
    }
    const transfer = [];
    const own = (indices) => {
      const parts = indices.map((i) => views[i].data);
      const u8 = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
      let at = 0;
      for (const p of parts) { u8.set(p, at); at += p.byteLength; }
      transfer.push(u8.buffer);
      return u8;
    };
    const result = JSON.parse(text, (key, v) => {
      if (v === null || typeof v !== "object" || !("$binary" in v)) return v;
      const u8 = own(Array.isArray(v.$binary) ? v.$binary : [v.$binary]);
      const Type = TYPED[v.dtype] || Uint8Array;
      return Type === Uint8Array ? u8 : new Type(u8.buffer, 0, u8.byteLength / Type.BYTES_PER_ELEMENT);
    });
    return { result, transfer };
  } finally {
    for (const view of views) view.release();
    for (const item of items) item.destroy?.();
    out.destroy();
  }
}

// A CPU adapter (SwiftShader, llvmpipe: forest.builder.parallel_bins names them in the wheel's
// warm.json, py_core.browser.warm_manifest): there compiling takes the cores that Python's
// start and the next job need, so nothing compiles before the page asks (the Random forest tab
// shown: playground.warm) or a job does.
let cpuAdapter = null;
async function softwareAdapter(rt) {
  if (cpuAdapter === null) {
    const res = await fetch("/wheels/warm.json", { cache: "no-cache" });
    const manifest = res.ok ? await res.json() : { cpu_adapters: [] };
    const a = rt.description.adapter;
    const named = `${a.vendor} ${a.architecture} ${a.device} ${a.description}`.toLowerCase();
    cpuAdapter = { manifest, cpu: a.is_fallback_adapter || manifest.cpu_adapters.some((name) => named.includes(name)) };
  }
  return cpuAdapter;
}

// Before Python is up, on a GPU adapter: the forest's kernels as the wheel's build listed them.
async function warmEarly(gpu) {
  const { rt } = await gpu;
  if (!rt) return;
  const { manifest, cpu } = await softwareAdapter(rt);
  if (!cpu && manifest.kernels) rt.warm(JSON.stringify({ sources: manifest.sources, kernels: manifest.kernels }));
}

// Once Python is up, on a GPU adapter: the forest's pipelines (py_core.browser.warm: the set this
// adapter's forests use) keep compiling side by side while the person picks a data set (those
// started early are found in flight); its first job awaits what is still compiling rather than
// compiling it on the click. Only the start is awaited here.
async function warmForest() {
  if (!runtime || (await softwareAdapter(runtime).catch(() => ({ cpu: false }))).cpu) return;
  await browserGlue.warm("random_forest").catch(() => {});  // the job will say what fails
}

// After a failure: if the GPU device was lost, open a new one for the next jobs.
async function recoverDevice() {
  if (!runtime?.lostInfo) return "";
  const why = runtime.lostInfo.message || runtime.lostInfo.reason || "lost";
  try {
    runtime = await openGPU();
    browserGlue.init(runtime);
    await warmForest();
    return ` (the GPU device was lost: ${why}; a new one is open for the next job)`;
  } catch (e) {
    runtime = null;
    browserGlue.init(undefined);
    return ` (the GPU device was lost: ${why}; no new one could be opened, so jobs now run on the CPU)`;
  }
}

// A job's failure, after opening a new device if it lost its own (the message says so).
async function failed(id, error) {
  let note;
  try { note = await recoverDevice(); } catch (e) { note = ` (${e.message})`; }
  fail(id, note ? { ...error, message: error.message + note } : error);
}

async function runJob(id, job) {
  current = id;
  try {
    const out = await startJob(id, job);
    const { result, transfer } = unpackResult(out);
    if (!result.error) answer(id, result, transfer);
    else await failed(id, result.error);  // the job failed in Python: its error, as error_of made it
  } catch (err) {
    const text = String(err?.message ?? err);
    await failed(id, { kind: "error", message: finalError(text), detail: text });
  } finally {
    current = null;
  }
}

function startJob(id, job) {
  stopRequested = false;
  paused = false;
  if (stopFlag) { Atomics.store(stopFlag, 0, 0); Atomics.store(stopFlag, 1, 0); }
  const hooks = {
    progress: (json) => post({ type: "progress", id, info: JSON.parse(json) }),
    shouldStop: () => stopRequested || (stopFlag !== null && Atomics.load(stopFlag, 0) === 1),
    isPaused: () => paused || (stopFlag !== null && Atomics.load(stopFlag, 1) === 1),
    fetchBytes: async (url) => {
      const res = await fetch(url);
      if (!res.ok) {
        let msg = `${res.status} ${res.statusText}`;
        try { msg = (await res.json()).error.message; } catch (e) { /* keep the status */ }
        throw new Error(`could not load ${url}: ${msg}`);
      }
      return new Uint8Array(await res.arrayBuffer());
    },
    // A data set's file streamed into a Python bytearray made by `alloc(size)`, so that no
    // whole copy of it lives in JavaScript (py_core.browser); a Uint8Array when its size is
    // not known in advance (no Content-Length, or a compressed response).
    fetchInto: async (url, alloc) => {
      const res = await fetch(url);
      if (!res.ok) {
        let msg = `${res.status} ${res.statusText}`;
        try { msg = (await res.json()).error.message; } catch (e) { /* keep the status */ }
        throw new Error(`could not load ${url}: ${msg}`);
      }
      const size = Number(res.headers.get("content-length") ?? NaN);
      if (!res.body || res.headers.get("content-encoding") || !Number.isSafeInteger(size)) {
        return new Uint8Array(await res.arrayBuffer());
      }
      const target = alloc(size);
      let offset = 0;
      try {
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (offset + value.length > size) throw new Error(`could not load ${url}: more bytes than its Content-Length`);
          const view = target.getBuffer("u8");  // each time: Python's memory may have grown
          try { view.data.set(value, offset); } finally { view.release(); }
          offset += value.length;
        }
      } finally {
        target.destroy();
      }
      if (offset !== size) throw new Error(`could not load ${url}: ${offset} of ${size} bytes`);
      return size;
    },
  };
  return browserGlue.run(JSON.stringify(job), hooks);
}

// Anything that escapes (a rejected promise nobody awaited, an error thrown in a callback) fails
// the job running now rather than leaving the page waiting.
self.addEventListener("unhandledrejection", (ev) => {
  ev.preventDefault();
  if (current) fail(current, ev.reason);
});
self.addEventListener("error", (ev) => {
  ev.preventDefault();
  if (current) fail(current, ev.error ?? ev.message);
});

self.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.type === "init") {
    init(msg).catch((e) => post({ type: "init-failed", message: String(e.message || e) }));
  } else if (msg.type === "run") {
    queue = queue.then(() => runJob(msg.id, msg.job)).catch((e) => fail(msg.id, e));
  } else if (msg.type === "call") {
    // A quick py_core.browser function (parse a file, describe a generator), queued like jobs.
    queue = queue.then(async () => {
      current = msg.id;
      const hooks = { progress: (json) => post({ type: "progress", id: msg.id, info: JSON.parse(json) }) };
      try {
        const out = await browserGlue[msg.fn](...msg.args, hooks);
        answer(msg.id, JSON.parse(out), []);
      } catch (e) {
        fail(msg.id, e);
      } finally {
        current = null;
      }
    }).catch((e) => fail(msg.id, e));
  } else if (msg.type === "stop") {
    stopRequested = true;
    paused = false;
  } else if (msg.type === "pause") {
    paused = Boolean(msg.paused);
  }
};
