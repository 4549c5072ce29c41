// The page's compute worker: Pyodide, py_core and the GPU live here, so the page never freezes.
// Messages in:  {type: "init", webgpu: bool} · {type: "run", id, job} · {type: "stop", id}
//               {type: "call", id, fn, args}: a function of py_core.browser, with hooks last
// Messages out: {type: "loading", stage, fraction} · {type: "ready", ...} · {type: "progress", id, info}
//               {type: "result", id, result} · {type: "failed", id, error: {message, stopped}}
import { loadPyodide, version as pyodideVersion } from "/pyodide/pyodide.mjs";
import { GPUUnavailable, openGPU } from "./gpu.js";
import { parseNumericFromPython } from "./csvparse.js";
import { prefetch } from "./loader.js";

let pyodide = null;
let browserGlue = null;          // the py_core.browser module (a PyProxy)
let stopFlag = null;             // Int32Array over a SharedArrayBuffer when the page is isolated
let stopRequested = false;       // fallback flag, seen while Python awaits the GPU
let paused = false;             // Pause: the job waits at its next pause point
let queue = Promise.resolve();   // jobs run one at a time, in order

const post = (msg) => self.postMessage(msg);
const loading = (stage, fraction, bytes) => post({ type: "loading", stage, fraction, bytes });
const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MB`;

// py_core's CSV reader hands plain numeric files to web/csvparse.js (py_core.browser.init).
self.pyCoreParseNumeric = parseNumericFromPython;

async function init({ webgpu, stopBuffer }) {
  const t0 = performance.now();
  if (stopBuffer) stopFlag = new Int32Array(stopBuffer);
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
  const tCore = performance.now();

  loading("Opening the GPU", 0.85);
  let runtime = null;
  let problem = null;
  if (webgpu) {
    try {
      runtime = await openGPU();
    } catch (e) {
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
  loading("Ready", 1.0);
  post({ type: "ready", backend: described.backend, adapter: described.adapter, limits: described.limits,
         features: described.features, problem, pyodideVersion: pyodide.version, wheel: manifest.wheel,
         timings: { pyodide: (tPyodide - t0) / 1000, py_core: (tCore - tPyodide) / 1000,
                    total: (performance.now() - t0) / 1000 } });
}

// The error a Python traceback ends with: from its last unindented "Name: message" (or bare
// "Name") line to the end, as one line (a WebGPU validation message runs over several), without
// the class's module path or JS's "Error: " wrapper: "GPUError: the GPU device was lost (...)".
function finalError(text) {
  const lines = text.trim().split("\n");
  let i = lines.length - 1;
  while (i > 0 && !/^[A-Za-z_][\w.]*(: |$)/.test(lines[i])) i--;
  return lines.slice(i).map((l) => l.trim()).filter(Boolean).join(" ")
    .replace(/^(?:[A-Za-z_]\w*\.)+(?=\w+: )/, "").replace(/^(\w+: )Error: /, "$1");
}

function runJob(id, job) {
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
  };
  return browserGlue.run(JSON.stringify(job), hooks).then(
    (json) => post({ type: "result", id, result: JSON.parse(json) }),
    (err) => {
      const text = String(err.message || err);
      const stopped = text.includes("Stopped");
      post({ type: "failed", id, error: { message: stopped ? "stopped" : finalError(text), stopped, detail: text } });
    });
}

self.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.type === "init") {
    init(msg).catch((e) => post({ type: "init-failed", message: String(e.message || e) }));
  } else if (msg.type === "run") {
    queue = queue.then(() => runJob(msg.id, msg.job));
  } else if (msg.type === "call") {
    // A quick py_core.browser function (parse a file, describe a generator), queued like jobs.
    queue = queue.then(async () => {
      const hooks = { progress: (json) => post({ type: "progress", id: msg.id, info: JSON.parse(json) }) };
      try {
        const out = await browserGlue[msg.fn](...msg.args, hooks);
        post({ type: "result", id: msg.id, result: JSON.parse(out) });
      } catch (e) {
        post({ type: "failed", id: msg.id, error: { message: finalError(String(e.message || e)), detail: String(e) } });
      }
    });
  } else if (msg.type === "stop") {
    stopRequested = true;
    paused = false;
  } else if (msg.type === "pause") {
    paused = Boolean(msg.paused);
  }
};
