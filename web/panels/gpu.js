// The GPU panel: what the adapter is, its limits, and "Check my GPU" (the self-test job).
import { el, fmtBytes, fmtNumber, fmtSeconds, table } from "../ui.js";

const LIMIT_LABELS = {
  maxStorageBufferBindingSize: ["Largest storage binding", fmtBytes],
  maxBufferSize: ["Largest buffer", fmtBytes],
  maxComputeWorkgroupStorageSize: ["Workgroup memory", fmtBytes],
  maxComputeInvocationsPerWorkgroup: ["Invocations per workgroup", String],
  maxComputeWorkgroupsPerDimension: ["Workgroups per dimension", String],
};

export function mountGpuPanel(root, playground) {
  const adapterCard = el("div", { class: "card", id: "adapter-panel" }, el("h2", {}, "Adapter"),
    el("p", { class: "muted" }, "Waiting for the worker…"));
  const status = el("div", { class: "status", id: "selftest-status" });
  const results = el("div", { id: "selftest-results" });
  const button = el("button", { class: "primary", id: "check-gpu", disabled: true }, "Check my GPU");
  const bench = el("input", { type: "checkbox", id: "selftest-benchmark" });
  const testCard = el("div", { class: "card" }, el("h2", {}, "Check my GPU"),
    el("p", { class: "muted" }, "Runs every kernel on fresh random inputs and compares it with the " +
      "plain-Python reference: the largest error, whether it is within tolerance, and the time."),
    el("div", { class: "row" }, button, el("label", {}, bench, " and measure matmul TFLOP/s at 4096³ (f32; tensor cores where the adapter has them)")),
    status, results);
  // What this tab holds on the GPU now: every run frees what it made when it ends (finished,
  // stopped or failed) but for the last transformer, kept for sampling and saving.
  const memory = el("dl", { class: "kv", id: "gpu-memory" });
  const memoryCard = el("div", { class: "card" }, el("h2", {}, "GPU memory held by this tab"), memory,
    el("p", { class: "muted" }, "Buffers and recorded plans alive now. A run frees all it made when it ends, " +
      "stops or fails; the last trained transformer stays (for sampling and saving) until the next one starts."));
  async function showMemory() {
    const m = await playground.memory().catch(() => null);
    if (!m) return;
    const rows = [["Buffers", `${m.buffers} (${fmtBytes(m.bytes)})`], ["Recorded plans", String(m.plans)],
      ["Kept transformer", fmtBytes(m.kept_model_bytes)], ["Peak this session", fmtBytes(m.peak_bytes)]];
    memory.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }
  playground.onRun(() => showMemory());
  root.append(el("div", { class: "cards" }, adapterCard, testCard, memoryCard));

  playground.ready.then((info) => {
    const a = info.adapter;
    const rows = [
      ["Backend", info.backend === "webgpu" ? "WebGPU" : "CPU reference (plain Python)"],
      ["Vendor", a.vendor || "–"], ["Architecture", a.architecture || "–"],
      ["Device", a.device || a.description || "–"],
      ["Software fallback", a.is_fallback_adapter ? "yes (a CPU emulates the GPU)" : "no"],
    ];
    if (info.backend === "webgpu") {
      for (const [k, [label, f]] of Object.entries(LIMIT_LABELS)) rows.push([label, f(info.limits[k])]);
      rows.push(["Features", info.features.length ? info.features.join(", ") : "none beyond core"]);
    }
    rows.push(["Start-up", `Pyodide ${fmtSeconds(info.timings.pyodide)}, py_core ${fmtSeconds(info.timings.py_core)}`]);
    adapterCard.replaceChildren(el("h2", {}, "Adapter"),
      el("dl", { class: "kv" }, rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
    button.disabled = false;
    showMemory();
  }, (err) => adapterCard.append(el("p", { class: "status error" }, err.message)));

  button.addEventListener("click", async () => {
    button.disabled = true;
    status.className = "status";
    status.textContent = "Running the self-test…";
    try {
      const run = await playground.run({ kind: "selftest", ...(bench.checked ? { benchmark: true } : {}) }, {
        onProgress: (p) => { status.textContent = p.stage; },
      });
      const m = run.metrics;
      const ran = m.kernels.filter((k) => !k.skipped).length;
      status.textContent = m.all_ok ? `All ${ran} kernels run here agree with the reference` +
        (ran < m.kernels.length ? ` (${m.kernels.length - ran} need features this adapter lacks).` : ".")
        : "Some kernels disagree with the reference: see the table.";
      status.className = m.all_ok ? "status" : "status error";
      results.replaceChildren(table(["Kernel", "Largest error", "Within tolerance", "Time", "Rate"],
        m.kernels.map((k) => k.skipped ? [k.name, "–", `skipped: ${k.skipped}`, "–", "–"] :
          [k.name, fmtNumber(k.max_abs_err, 3), k.ok ? "yes" : "NO", fmtSeconds(k.time_s),
          k.rate ? `${fmtNumber(k.rate, 3)} ${k.unit}` : "–"]), { id: "selftest-table" }));
      if (m.benchmark) {
        results.append(el("h3", {}, "Matmul benchmark"), table(["Kernel", "Size", "Time", "TFLOP/s", "Checked entries"],
          m.benchmark.map((b) => [b.kernel, `${b.n}³`, fmtSeconds(b.seconds), fmtNumber(b.tflops, 3),
            b.ok ? `agree (largest error ${fmtNumber(b.max_err, 2)})` : `DIFFER by ${fmtNumber(b.max_err, 3)}`]),
          { id: "benchmark-table" }));
      }
    } catch (e) {
      status.className = "status error";
      status.textContent = `Self-test failed: ${e.message}`;
    } finally {
      button.disabled = false;
    }
  });
}
