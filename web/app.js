// The page: boots the compute worker, shows the adapter, and exposes `window.playground`, the
// automation API that tests and benchmarks use:
//   await playground.ready          -> {backend, adapter}
//   await playground.run(job, opts) -> the stored run (the job runs in the worker, its result is
//                                      posted to the server, and the server's copy comes back)
import { postRun } from "./api.js";
import { forestJSON } from "./forest_model.js";
import { $, el, scrollersTakeFocus } from "./ui.js";
import { initial, save } from "./state.js";
import { KINDS, kindsProblem } from "./kinds.js";
import { mountDataPanel } from "./panels/data.js";
import { mountGpuPanel } from "./panels/gpu.js";
import { mountRunsPanel } from "./panels/runs.js";

const params = new URLSearchParams(location.search);
const forced = params.get("backend");           // "reference" forces the CPU fallback

// --- the worker ----------------------------------------------------------------------------
const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const pending = new Map();                       // job id -> {resolve, reject, onProgress}
// [stop, pause] flags the worker's Python reads synchronously (cross-origin isolated pages only).
const stopBuffer = self.crossOriginIsolated ? new SharedArrayBuffer(8) : null;
let readyResolve, readyReject;
const ready = new Promise((res, rej) => { readyResolve = res; readyReject = rej; });
const state = { info: null, listeners: new Set() };

worker.onmessage = (ev) => {
  const m = ev.data;
  if (m.type === "loading") {
    const pct = Math.round(m.fraction * 100);
    $("#boot-bar").style.width = `${pct}%`;
    $("#boot-progress").setAttribute("aria-valuenow", String(pct));
    $("#boot-progress").setAttribute("aria-valuetext", m.stage);
    $("#boot-progress").dataset.bytes = m.bytes ? m.bytes.join("/") : "";
    $("#boot-stage").textContent = m.stage;
  } else if (m.type === "ready") {
    state.info = m;
    $("#boot").classList.add("done");
    showBackend(m);
    readyResolve({ backend: m.backend, adapter: m.adapter, limits: m.limits, features: m.features,
                   problem: m.problem, timings: m.timings });
  } else if (m.type === "init-failed") {
    $("#boot-stage").textContent = `Could not start Python in this tab: ${m.message}`;
    $("#boot").classList.add("error");
    readyReject(new Error(m.message));
  } else if (m.type === "progress") {
    pending.get(m.id)?.onProgress?.(m.info);
  } else if (m.type === "result" || m.type === "failed") {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (!p) return;
    if (m.type === "result") p.resolve(m.result);
    else {
      // The one place the page reads a worker's error (its shape: web/worker.js); Stop is its kind.
      const err = Object.assign(new Error(m.error.message), m.error);
      err.stopped = m.error.kind === "stopped";
      p.reject(err);
    }
  }
};
worker.onerror = (ev) => readyReject(new Error(`the worker failed: ${ev.message}`));
worker.postMessage({ type: "init", webgpu: forced !== "reference" && "gpu" in navigator && !!navigator.gpu,
                     stopBuffer });

function showBackend(info) {
  const chip = $("#backend-chip");
  const software = info.backend === "webgpu" && isSoftware(info.adapter);
  if (software) {
    // A CPU emulating a GPU (SwiftShader, llvmpipe, WARP): WebGPU works but slowly; say so.
    chip.textContent = `WebGPU · software adapter (${info.adapter.vendor || info.adapter.architecture || "CPU"})`;
    chip.className = "chip software";
    const banner = $("#gpu-problem");
    banner.hidden = false;
    banner.dataset.reason = "software";
    // The link opens this page as it is set up when it is used (the URL holds the set-up, and
    // changes as the person works: state.js), not as it was when the page loaded.
    const cpuPath = () => {
      const url = new URL(location.href);
      url.searchParams.set("backend", "reference");
      return url.pathname + url.search + url.hash;
    };
    const link = el("a", { href: cpuPath(), id: "use-cpu" }, "use the CPU path");
    for (const ev of ["pointerenter", "focus", "click", "auxclick", "contextmenu"]) link.addEventListener(ev, () => { link.href = cpuPath(); });
    banner.replaceChildren(el("strong", {}, "This WebGPU adapter is software: "),
      "a CPU emulates the GPU, so training is slow (small models are sized down and each Train shows its estimate). ",
      "For a small forest the plain-Python CPU path is often faster: ", link, ".");
  } else if (info.backend === "webgpu") {
    chip.textContent = `WebGPU · ${info.adapter.vendor || "GPU"}`;
    chip.className = "chip gpu";
  } else {
    chip.textContent = forced === "reference" ? "CPU (chosen)" : "CPU (no WebGPU)";
    chip.className = "chip cpu";
  }
  if (info.problem && forced !== "reference") {
    const banner = $("#gpu-problem");
    banner.hidden = false;
    banner.replaceChildren(el("strong", {}, "WebGPU is not available: "), info.problem.message,
      el("br"), "Jobs run on the CPU reference backend instead: same results, much slower.");
    banner.dataset.reason = info.problem.reason;
  }
}

// --- jobs ----------------------------------------------------------------------------------
// Runs a job in the worker; `onProgress(info)` sees its progress. Resolves with the raw result.
function compute(job, { onProgress } = {}) {
  const id = crypto.randomUUID();
  return { id, done: new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ type: "run", id, job });
  }) };
}

// Calls a function of py_core.browser in the worker (after any queued job).
function call(fn, args = [], { onProgress, transfer = [] } = {}) {
  const id = crypto.randomUUID();
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ type: "call", id, fn, args }, transfer);
  });
}

function stop() {
  if (stopBuffer) Atomics.store(new Int32Array(stopBuffer), 0, 1);
  worker.postMessage({ type: "stop" });
}

function pause(on) {
  if (stopBuffer) Atomics.store(new Int32Array(stopBuffer), 1, on ? 1 : 0);
  worker.postMessage({ type: "pause", paused: on });
}

function environment() {
  return { user_agent: navigator.userAgent, hardware_concurrency: navigator.hardwareConcurrency,
           pyodide: state.info?.pyodideVersion, wheel: state.info?.wheel, startup: state.info?.timings,
           features: state.info?.features, limits: state.info?.limits };
}

// Runs the job, posts its result to the server and resolves with the stored run.
async function run(job, opts = {}) {
  await ready;
  const memBefore = opts.memory ? await window.playground.memory().catch(() => null) : null;
  const { id, done } = compute(job, opts);
  const result = await done;
  // opts.keep(result): more to keep with the run, from its result (a model small enough).
  const extra = { ...(result.extra || {}), ...(opts.extra || {}), ...(opts.keep ? opts.keep(result) : {}) };
  if (opts.memory) extra.memory = { before: memBefore, after: await window.playground.memory().catch(() => null) };
  // Kept with the run, for its own page (/runs/<id>): the baseline and the plots (when small).
  if (result.baseline) extra.baseline = result.baseline;
  if (result.plots) {
    const plots = compactPlots(result.plots);
    if (JSON.stringify(plots).length < 200_000) extra.plots = plots;
  }
  const stored = await postRun({
    id, kind: job.kind, config: job, backend: result.backend, adapter: result.adapter,
    metrics: result.metrics, timings: result.timings, env: environment(),
    ...(Object.keys(extra).length ? { extra } : {}),
  });
  for (const fn of state.listeners) fn(stored, result);
  return Object.assign(stored, { result });
}

// A software adapter: the browser says so (isFallbackAdapter), or its name gives it away.
export function isSoftware(adapter) {
  if (!adapter) return false;
  if (adapter.is_fallback_adapter) return true;
  const name = `${adapter.vendor || ""} ${adapter.architecture || ""} ${adapter.device || ""} ${adapter.description || ""}`.toLowerCase();
  return /swiftshader|llvmpipe|lavapipe|softpipe|warp|microsoft basic render/.test(name);
}

// Says a line to screen readers (the polite live region) without moving focus.
function announce(text) {
  const region = $("#announce");
  if (region) region.textContent = text;
}

// The plots as kept with a stored run: at most 300 points a scatter, 5 significant digits, the
// residuals left out (the run page derives them from predicted against actual).
const STORED_POINTS = 300;
function compactPlots(plots) {
  const round = (v) => (typeof v === "number" && Number.isFinite(v) ? Number(v.toPrecision(5)) : v);
  const thin = (points) => {
    const step = Math.max(1, Math.ceil(points.length / STORED_POINTS));
    return points.filter((_, i) => i % step === 0).map((p) => p.map(round));
  };
  const out = { ...plots };
  delete out.residuals;
  if (out.pred_vs_actual) out.pred_vs_actual = thin(out.pred_vs_actual);
  if (out.surface) {
    const g = out.surface.grid;
    out.surface = { ...out.surface, points: thin(out.surface.points), scale: out.surface.scale?.map(round),
                    held: out.surface.held?.map(([name, v]) => [name, round(v)]),
                    grid: { ...g, x: g.x.map(round), y: g.y.map(round), values: g.values.map(round) } };
  }
  if (out.importances) out.importances = out.importances.map((f) => ({ ...f, importance: round(f.importance) }));
  return out;
}

window.playground = {
  ready, run, compute, stop, pause, call,
  selection: null,   // the data set, target, features and split chosen in the Data tab
  events: new EventTarget(),   // "selection" when it changes
  post: (run) => postRun({ env: environment(), ...run }),
  onRun: (fn) => state.listeners.add(fn),
  showTab: (id) => select(id),   // a panel's "next step" opens another tab
  forestJSON: (model) => forestJSON(model.binary),   // a forest job's model as the JSON export
  get info() { return state.info; },
  announce,
  isSoftware: () => state.info?.backend === "webgpu" && isSoftware(state.info.adapter),
  // What the worker holds on the GPU now: {buffers, bytes, plans, peak_bytes, kept_model_bytes,
  // runtime: {buffers, bytes, plans, kernels} (WebGPU's own counts)}.
  memory: () => call("memory"),
  // Start compiling the kernels a `kind` job of these params will need (py_core.browser.warm):
  // {kernels: how many} once started, without waiting for the compiles.
  warm: (kind, params = {}, vocabSize = 65) => call("warm", [kind, JSON.stringify(params), vocabSize]),
};

// Every scrolling box a panel makes takes the keyboard focus (ui.js).
scrollersTakeFocus(document.body);

// --- share -------------------------------------------------------------------------------
// The URL holds the set-up (state.js); Share copies it, and shows it in case copying is refused.
$("#share").addEventListener("click", async () => {
  const link = location.href;
  let copied = false;
  try { await navigator.clipboard.writeText(link); copied = true; } catch (e) { /* not allowed here */ }
  let box = $("#share-box");
  if (!box) {
    box = el("div", { id: "share-box", class: "banner share" }, el("label", { for: "share-link" }, "Link to this set-up: "),
      el("input", { id: "share-link", readonly: true }),
      el("button", { class: "secondary", type: "button", onclick: () => box.remove() }, "Close"));
    $("#tabs").before(box);
  }
  $("#share-link").value = link;
  $("#share-link").select();
  announce(copied ? "Link copied." : "Link shown: copy it from the box.");
});

// --- panels --------------------------------------------------------------------------------
const panels = [];
export function addPanel(id, title, mount) {
  const section = el("section", { class: "panel", id: `panel-${id}`, role: "tabpanel", "aria-labelledby": `tab-${id}` });
  const button = el("button", { role: "tab", "aria-selected": "false", id: `tab-${id}`, "aria-controls": `panel-${id}`,
                                tabindex: "-1", onclick: () => select(id) }, title);
  $("#tabs").append(button);
  $("#panels").append(section);
  panels.push({ id, section, button });
  mount(section, window.playground);
  if (panels.length === 1 || initial("tab") === id) select(id, { keepUrl: true });
}

function select(id, { keepUrl = false, focus = false } = {}) {
  for (const p of panels) {
    const on = p.id === id;
    p.section.classList.toggle("active", on);
    p.button.setAttribute("aria-selected", String(on));
    p.button.tabIndex = on ? 0 : -1;
    if (on && focus) p.button.focus();
  }
  if (!keepUrl) save({ tab: id === panels[0]?.id ? null : id });
  window.playground.events.dispatchEvent(new CustomEvent("tab", { detail: id }));   // a panel warms its kernels
  window.dispatchEvent(new Event("resize"));   // charts in a panel that was hidden take its width
}

// Arrow keys, Home and End move between tabs (the ARIA tabs pattern).
$("#tabs").addEventListener("keydown", (ev) => {
  const i = panels.findIndex((p) => p.button === document.activeElement);
  if (i < 0) return;
  const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: panels.length - 1 }[ev.key];
  if (to === undefined) return;
  ev.preventDefault();
  select(panels[(to + panels.length) % panels.length].id, { focus: true });
});

// The kinds' panels sit between Data and GPU, in the registry's order: each kind with a panel
// names its module (GET /api/kinds: py_core/jobs/kinds.py), which exports mount(root, playground).
// One that fails to load costs its own tab only.
async function kindPanels() {
  const loaded = await Promise.all(Object.values(KINDS).filter((k) => k.panel).map((k) => import(k.panel).then(
    (module) => [k, module.mount],
    (e) => { console.error(`the ${k.name} panel (${k.panel}) did not load: ${e.message}`); return null; })));
  return loaded.filter(Boolean);
}

// A self-driven suite (`?suite=`) needs no panels; it is also what runs on the lent GPU machine,
// whose headless shell has no fontconfig and aborts when form controls and canvas text lay out.
if (!params.get("suite")) {
  if (kindsProblem) {
    $("#tabs").before(el("div", { id: "kinds-problem", class: "banner warn", role: "alert" },
      el("strong", {}, "The models' tabs are missing: "),
      `the page asked the server which models it trains (GET /api/kinds) and got ${kindsProblem}. `,
      el("button", { type: "button", class: "secondary", onclick: () => location.reload() }, "Reload")));
  }
  addPanel("data", "Data", mountDataPanel);
  for (const [k, mount] of await kindPanels()) addPanel(k.tab, k.label, mount);
  addPanel("gpu", "GPU", mountGpuPanel);
  addPanel("runs", "Runs", mountRunsPanel);
}

// A link alone never starts a suite (another site could navigate this tab to `/?suite=full`): it
// runs at once only with the server's per-start key (the benchmark harness passes it, see
// server/suite.py), else after the person clicks "Run it".
async function suiteAuthorized(key) {
  if (!key) return false;
  try {
    const res = await fetch("/api/suite/authorize", { method: "POST", headers: { "Content-Type": "application/json" },
                                                      body: JSON.stringify({ key }) });
    return res.ok;
  } catch (e) { return false; }
}

if (params.get("suite")) {
  const name = params.get("suite");
  const only = params.get("only");
  const key = params.get("suite_key");
  if (key) {  // keep the key out of the address bar and the history
    params.delete("suite_key");
    history.replaceState(null, "", `${location.pathname}?${params}`);
  }
  const status = el("div", { id: "suite-status", class: "banner warn", role: "status" }, "Benchmark suite starting…");
  $("#panels").before(status);
  const start = () => {
    status.replaceChildren("Benchmark suite starting…");
    import("./suite.js").then(({ runSuite }) => runSuite(name, window.playground,
      (line) => { status.textContent = line; console.log(`[suite] ${line}`); }, only))
      .catch((e) => { status.textContent = `Suite failed: ${e.message}`; console.error(e); });
  };
  suiteAuthorized(key).then((ok) => {
    if (ok) { start(); return; }
    const run = el("button", { id: "suite-confirm", onclick: start }, "Run it");
    const cancel = el("button", { id: "suite-cancel", class: "secondary",
                                  onclick: () => { location.search = ""; } }, "Cancel");
    status.replaceChildren(el("p", {}, `This link asks to run the benchmark suite "${name}"${only ? ` (jobs: ${only})` : ""}: `
      + "minutes of GPU work in this tab, every run stored on this server, and jobs queued on it. "
      + "Run it only if you opened this link yourself."), el("div", { class: "row" }, run, cancel));
  });
}
