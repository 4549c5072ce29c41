// The Random forest panel: parameters (presets, scikit-learn names), Train and Stop, progress by
// level and tree, the decision surface (and, for regression, predicted against actual) redrawn
// as each batch of trees finishes, then metrics against the baseline, plots, times with the
// adapter named, the model to download, and predictions on a new CSV. Trains on the Data tab's
// selection; every run is posted to the server.
import { getOnnx, getRecentRuns, getSnippet } from "../api.js";
import { bars, confusion, scatterChart, surface } from "../charts.js";
import { showComparisons } from "./compare.js";
import { download as download_, forestJSONParts } from "../forest_model.js";
import { forestJsonSnippet } from "../snippets.js";
import { rowsText } from "./data.js";
import { initial, save } from "../state.js";
import { el, filePicker, fmtNumber, fmtSeconds, progressBar, setProgress, snippetBox, table } from "../ui.js";

export const PRESETS = {
  quick: { label: "Quick look (50 trees, depth 8)", params: { n_estimators: 50, max_depth: 8 } },
  sklearn: { label: "scikit-learn defaults (100 trees, full depth)", params: { n_estimators: 100, max_depth: null } },
  large: { label: "Large (200 trees, depth 16)", params: { n_estimators: 200, max_depth: 16 } },
};

const FIELDS = [
  ["n_estimators", "Trees", "number", 100],
  ["max_depth", "Max depth (empty: none)", "number", 12],
  ["min_samples_split", "Min samples to split", "number", 2],
  ["min_samples_leaf", "Min samples per leaf", "number", 1],
  ["max_features", "Max features (sqrt, log2, fraction, count; empty: task default)", "text", ""],
  ["n_bins", "Bins per feature (≤ 256; a feature of ≤ 1,024 values gets one a value)", "number", 256],
  ["random_state", "Seed", "number", 0],
];

// Sized for a software adapter or the CPU path: a forest that trains in seconds there.
const SMALL = { n_estimators: 20, max_depth: 8 };
// Seconds a tree-level when no run on this adapter is stored yet: rough, by adapter class.
const CLASS_SECONDS = { gpu: 0.004, software: 0.08, cpu: 0.05 };
// "Retrain when a parameter changes" is offered when a forest is estimated to take at most this
// long here (small data on a GPU: under a second).
const RETRAIN_SECONDS = 5;
const NOT_METRICS = new Set(["n_train", "n_test", "n_features", "predict_all_rows"]);

export function mountForestPanel(root, playground) {
  const inputs = {};
  const preset = el("select", { id: "forest-preset" }, el("option", { value: "" }, "Custom"),
    Object.entries(PRESETS).map(([k, p]) => el("option", { value: k }, p.label)));
  const criterion = el("select", { id: "forest-criterion" }, ["gini", "entropy"].map((c) => el("option", { value: c }, c)));
  const bootstrap = el("input", { type: "checkbox", id: "forest-bootstrap", checked: initial("rf.bootstrap") !== "0" });
  const form = el("div", { class: "form" }, FIELDS.map(([name, labelText, type, value]) => {
    const asked = initial(`rf.${name}`);
    inputs[name] = el("input", { type, id: `forest-${name}`, value: asked ?? value ?? "", step: type === "number" ? "1" : null });
    return el("label", { class: "field" }, labelText, inputs[name]);
  }), el("label", { class: "field" }, "Criterion (classification)", criterion),
  el("label", { class: "field" }, el("span", {}, bootstrap, " bootstrap samples")));
  if (initial("rf.criterion")) criterion.value = initial("rf.criterion");
  if (initial("rf.preset") && PRESETS[initial("rf.preset")]) preset.value = initial("rf.preset");
  const train = el("button", { class: "primary", id: "forest-train" }, "Train");
  const stop = el("button", { class: "secondary", id: "forest-stop", disabled: true }, "Stop");
  const auto = el("input", { type: "checkbox", id: "forest-auto", disabled: true });
  const autoLabel = el("label", { class: "muted", id: "forest-auto-label",
                                  title: `Offered when a forest takes at most ${RETRAIN_SECONDS} s here (small data on a GPU: under a second)` },
  auto, " retrain when a parameter changes");
  // The decision surface's two features: the person's, else the two most important.
  const surfaceX = el("select", { id: "forest-surface-x", "aria-label": "Decision surface: horizontal feature" });
  const surfaceY = el("select", { id: "forest-surface-y", "aria-label": "Decision surface: vertical feature" });
  const surfaceRow = el("div", { class: "row", id: "forest-surface" }, el("span", { class: "muted" }, "Decision surface over"),
    surfaceX, el("span", { class: "muted" }, "and"), surfaceY);
  const selection = el("p", { class: "muted", id: "forest-selection" }, "Pick a data set in the Data tab.");
  const estimate = el("p", { class: "estimate", id: "forest-estimate" });
  const bar = progressBar("Training progress");
  const status = el("div", { class: "status", id: "forest-status", role: "status", "aria-live": "polite" });
  const paramsCard = el("div", { class: "card" }, el("h2", {}, "Random forest"), selection,
    el("div", { class: "row" }, el("label", {}, "Preset ", preset)), form, surfaceRow,
    el("div", { class: "row" }, train, stop, autoLabel), estimate, bar, status);
  const resultCard = el("div", { class: "card", id: "forest-results" }, el("h2", {}, "Results"),
    el("p", { class: "muted" }, "Train a forest to see how good it is."));
  const plots = el("div", { class: "cards", id: "forest-plots" });
  const compare = el("div", { id: "forest-compare" });
  // Your own results and plots first; the server's runs of the same job below, filling in.
  root.append(el("div", { class: "cards" }, paramsCard, resultCard), plots,
    el("h2", { class: "section-note" }, "The same job on the server"), compare);

  let lastModel = null;
  let training = false;
  const charts = [];

  function saveParams() {
    const u = new URL(location.href);
    const set = (k, v, dflt) => (v === dflt ? u.searchParams.delete(k) : u.searchParams.set(k, v));
    set("rf.preset", preset.value, "");
    set("rf.criterion", criterion.value, "gini");
    set("rf.bootstrap", bootstrap.checked ? "1" : "0", "1");
    set("rf.surface", surfacePair()?.map(encodeURIComponent).join(",") ?? "", "");
    for (const [name, , , value] of FIELDS) set(`rf.${name}`, inputs[name].value.trim(), String(value ?? ""));
    window.history.replaceState(window.history.state, "", u);
  }

  preset.addEventListener("change", () => {
    const p = PRESETS[preset.value]?.params;
    if (!p) return;
    for (const [k, v] of Object.entries(p)) inputs[k].value = v ?? "";
    changed();
  });
  for (const i of Object.values(inputs)) i.addEventListener("input", () => { preset.value = ""; changed(); });
  for (const i of [criterion, bootstrap]) i.addEventListener("change", changed);
  for (const i of [surfaceX, surfaceY]) i.addEventListener("change", () => { saveParams(); if (auto.checked && !training) changed(); });

  // The features of the selection as the surface's choices; the URL's pair once, when they fit.
  let askedSurface = initial("rf.surface")?.split(",").map(decodeURIComponent) || null;
  function surfaceChoices(features) {
    const keep = askedSurface || [surfaceX.value, surfaceY.value];
    for (const [select, label] of [[surfaceX, "the most important"], [surfaceY, "the next most important"]]) {
      select.replaceChildren(el("option", { value: "" }, label), ...features.map((f) => el("option", { value: f }, f)));
    }
    if (keep.length === 2 && keep.every((f) => features.includes(f)) && keep[0] !== keep[1]) [surfaceX.value, surfaceY.value] = keep;
    askedSurface = null;
    surfaceRow.hidden = features.length < 2;
    if (!surfacePair()) save({ "rf.surface": null });   // a pair this data set lacks leaves the URL
  }
  // [x, y] when the person chose two different features, else null (the job picks).
  function surfacePair() {
    return surfaceX.value && surfaceY.value && surfaceX.value !== surfaceY.value ? [surfaceX.value, surfaceY.value] : null;
  }

  let autoTimer = null;
  function changed() {
    delete estimate.dataset.sized;
    saveParams();
    updateEstimate();
    if (auto.checked && !training) {
      clearTimeout(autoTimer);
      autoTimer = setTimeout(() => { if (!training && !validate()) train.click(); }, 500);
    }
  }

  playground.events.addEventListener("selection", (ev) => {
    const s = ev.detail;
    selection.textContent = `${s.name}: predict ${s.target} (${s.task}) from ${s.features.length} features, ` +
      `${Math.round(s.split.test_size * 100)}% held out (seed ${s.split.seed}).` +
      (s.rowsUsed?.no_target ? ` ${rowsText(s.rowsUsed, s.target)}` : "");
    criterion.disabled = s.task !== "classification";
    surfaceChoices(s.features);
    updateEstimate();
  });

  // Defaults sized to the adapter: a software adapter or the CPU path gets a small forest
  // (unless the link asked for something else).
  playground.ready.then(() => {
    const slow = playground.isSoftware() || playground.info?.backend !== "webgpu";
    if (slow && !FIELDS.some(([name]) => initial(`rf.${name}`) !== null) && !initial("rf.preset")) {
      for (const [k, v] of Object.entries(SMALL)) inputs[k].value = v;
      preset.value = "";
      estimate.dataset.sized = "small";
    }
    updateEstimate();
  }).catch(() => {});

  // An estimate before Train: from the last forest stored for this adapter (seconds a
  // tree-level, scaled), else a rough figure for the adapter's class.
  let pastRuns = null;
  async function updateEstimate() {
    const s = playground.selection, info = playground.info;
    if (!s || !info) return;
    const p = params();
    if (p.error) { estimate.textContent = ""; return; }
    const trainRows = Math.round(s.rows * (1 - s.split.test_size));
    const levels = (d) => Math.max(1, Math.min(d ?? Math.ceil(Math.log2(Math.max(2, trainRows))) + 4, 40));
    const work = (p.n_estimators ?? 100) * levels(p.max_depth);
    if (pastRuns === null) {
      pastRuns = [];
      try { pastRuns = await getRecentRuns("random_forest", 10); } catch (e) { /* no history */ }
    }
    const same = pastRuns.find((r) => r.backend === info.backend && r.adapter?.vendor === info.adapter?.vendor
      && r.adapter?.architecture === info.adapter?.architecture && r.timings?.fit > 0);
    const cls = info.backend !== "webgpu" ? "cpu" : playground.isSoftware() ? "software" : "gpu";
    let seconds, basis;
    if (same) {
      // The kernels are compiled once a tab: the last fit's time without it.
      const w = (same.config?.params?.n_estimators ?? 100) * levels(same.config?.params?.max_depth);
      const fit = same.timings.fit - (same.timings.compile || 0);
      seconds = (fit / w) * work;
      basis = `from your last forest on this adapter (${fmtSeconds(fit)}${same.timings.compile ? " without compiling the kernels" : ""})`;
    } else {
      seconds = CLASS_SECONDS[cls] * work;
      basis = `a rough figure for a ${cls === "gpu" ? "GPU" : cls === "software" ? "software adapter" : "CPU"}; it improves after one run`;
    }
    estimate.dataset.seconds = String(seconds);
    estimate.textContent = `Estimated time: ${fmtDuration(seconds)} (${basis}).`
      + (estimate.dataset.sized === "small" ? " Parameters sized down for this adapter." : "");
    auto.disabled = !(seconds <= RETRAIN_SECONDS);
    if (auto.disabled) auto.checked = false;
  }

  function validate() {
    const p = params();
    return p.error || null;
  }

  function params() {
    const out = {};
    for (const [name, , type] of FIELDS) {
      const raw = inputs[name].value.trim();
      if (raw === "") { if (name === "max_depth") out[name] = null; continue; }
      if (name === "max_features") {
        if (["sqrt", "log2"].includes(raw)) out[name] = raw;
        else if (/^\d+$/.test(raw) && Number(raw) >= 1) out[name] = Number.parseInt(raw, 10);
        // A fraction of 1 is every feature: sent as null (scikit-learn's None), since JSON
        // writes the number 1.0 as 1, which Python reads as one feature.
        else if (/^(0?\.\d+|1\.0*)$/.test(raw)) out[name] = Number(raw) === 1 ? null : Number(raw);
        else return { error: `Max features "${raw}" is not one of: sqrt, log2, a fraction in (0, 1], or a whole count ≥ 1.` };
      } else out[name] = type === "number" ? Number(raw) : raw;
    }
    out.bootstrap = bootstrap.checked;
    if (playground.selection?.task === "classification") out.criterion = criterion.value;
    return out;
  }

  train.addEventListener("click", async () => {
    const s = playground.selection;
    if (!s) { status.textContent = "Pick a data set in the Data tab first."; return; }
    const p = params();
    if (p.error) { status.className = "status error"; status.textContent = p.error; inputs.max_features.focus(); return; }
    // live: the surface (and predicted against actual) redrawn after each batch of trees.
    const job = { kind: "random_forest", dataset: s.dataset, target: s.target, task: s.task,
                  features: s.features, params: p, split: s.split, live: true,
                  ...(surfacePair() ? { surface: surfacePair() } : {}) };
    train.disabled = true; stop.disabled = false; training = true;
    status.className = "status"; status.textContent = "Training…";
    setProgress(bar, 0);
    try {
      live = null;
      const run = await playground.run(job, { onProgress: (p) => {
        if (p.live) { drawLive(p.live); return; }
        const text = p.stage + (p.eta_s !== undefined && p.eta_s !== null ? ` · about ${fmtSeconds(p.eta_s)} left` : "");
        setProgress(bar, p.fraction, text);
        status.textContent = text;
      } });
      setProgress(bar, 1);
      status.textContent = `Trained and stored as run ${run.id.slice(0, 8)}.`;
      playground.announce?.(`Forest trained: ${headline(run.metrics)}.`);
      lastModel = run.result.model || null;
      pastRuns = null;
      showResults(run);
      showComparisons(compare, run);
      updateEstimate();
    } catch (e) {
      status.className = e.stopped ? "status" : "status error";
      // A stopped forest is discarded (its trees so far are not stored): the message says where it was.
      const where = e.stopped && /stopped at level \d+ of trees [\d-]+, with \d+ of \d+ trees finished/.exec(e.detail || "");
      status.textContent = where ? `Stopped ${where[0].replace(/^stopped /, "")}: the forest is discarded, nothing was posted.`
        : e.stopped ? "Stopped: nothing was posted." : `Training failed: ${e.message}`;
    } finally {
      train.disabled = false; stop.disabled = true; training = false;
    }
  });
  stop.addEventListener("click", () => { playground.stop(); status.textContent = "Stopping…"; });

  // The plots as the trees grown so far draw them: made on the first batch, updated after each.
  let live = null;
  function drawLive({ trees: [grown, total], plots: p }) {
    const note = `after ${grown} of ${total} trees`;
    if (!live) {
      drawPlots(p, plots, charts, { live: true });
      live = { surface: charts.find((c) => c.kind === "surface"), scatter: charts.find((c) => c.kind === "pred_vs_actual") };
      plots.prepend(el("p", { class: "muted live-note", id: "forest-live", role: "status" }));
    } else {
      live.surface?.update(p.surface.grid, p.surface.points);
      if (p.pred_vs_actual) live.scatter?.update(p.pred_vs_actual);
    }
    plots.querySelector("#forest-live").textContent = `Drawn by the trees grown so far: ${note}.`;
  }

  function showResults(run) {
    const m = run.metrics, t = run.timings, a = run.adapter || {};
    const base = run.result?.baseline || run.extra?.baseline || null;
    const metricRows = Object.entries(m).filter(([k, v]) => typeof v === "number" && !NOT_METRICS.has(k))
      .map(([k, v]) => [k, fmtNumber(v, 5), base && typeof base[k] === "number" ? fmtNumber(base[k], 5) : "–"]);
    const where = run.backend === "webgpu" ? `WebGPU on ${a.vendor || "GPU"} ${a.architecture || ""}${a.is_fallback_adapter ? " (software)" : ""}`
      : "the CPU (reference backend)";
    const name = `forest-${run.id.slice(0, 8)}`;
    const download = el("span", { class: "row" },
      el("button", { class: "secondary", id: "forest-download", onclick: () => {
        download_(forestJSONParts(lastModel.binary), "application/json", `${name}.json`);
      } }, "Download model (JSON)"),
      el("button", { class: "secondary", id: "forest-download-binary", onclick: () => {
        download_([lastModel.binary], "application/octet-stream", `${name}.pcforest`);
      } }, "Download model (binary)"));
    // ONNX is written by the server from the stored run (it may fit the same forest again first).
    const onnxStatus = el("div", { class: "status", id: "forest-onnx-status", role: "status", "aria-live": "polite" });
    const onnxButton = el("button", { class: "secondary", id: "forest-download-onnx", onclick: async () => {
      onnxButton.disabled = true;
      onnxStatus.className = "status"; onnxStatus.textContent = "The server is writing the ONNX file…";
      try {
        download_([await getOnnx(run.id)], "application/octet-stream", `${name}.onnx`);
        onnxStatus.textContent = `Downloaded ${name}.onnx.`;
      } catch (e) {
        onnxStatus.className = "status error"; onnxStatus.textContent = `No ONNX file: ${e.message}`;
      } finally { onnxButton.disabled = false; }
    } }, "Download model (ONNX)");
    const predictInput = el("input", { type: "file", accept: ".csv,text/csv", id: "forest-predict-file", "aria-label": "CSV to predict" });
    const predictStatus = el("div", { class: "status", role: "status", "aria-live": "polite" });
    predictInput.addEventListener("change", async () => {
      const file = predictInput.files[0];
      predictInput.value = "";   // the same (edited) file chosen again is a change again
      if (!file) return;
      predictStatus.className = "status"; predictStatus.textContent = `Predicting ${file.name}…`;
      try {
        const out = await playground.call("predict_csv", [lastModel.binary, new Uint8Array(await file.arrayBuffer()), file.name]);
        if (out.error) throw new Error(out.error.message);
        const blob = new Blob([out.csv], { type: "text/csv" });
        el("a", { href: URL.createObjectURL(blob), download: file.name.replace(/\.csv$/i, "") + "-predictions.csv" }).click();
        predictStatus.textContent = `${out.rows} predictions downloaded (${fmtSeconds(out.seconds)}).`;
      } catch (e) {
        predictStatus.className = "status error"; predictStatus.textContent = e.message;
      }
    });
    const metricsTable = table(["Metric", "This forest", "Baseline"], metricRows, { id: "forest-metrics" });
    resultCard.replaceChildren(el("h2", {}, "Results"),
      el("p", { class: "muted", id: "forest-data-sizes" }, `On the ${m.n_test} test rows (trained on ${m.n_train} rows, ${m.n_features} features).`),
      run.result?.rows ? el("p", { class: "muted", id: "forest-rows" }, rowsText(run.result.rows, run.config.target)) : null,
      metricsTable,
      base ? el("p", { class: "muted", id: "forest-baseline-note" }, `Baseline: ${base.predictor}, the same test rows. ` +
        beats(m, base)) : null,
      el("h3", {}, "Time"),
      el("dl", { class: "kv" }, el("dt", {}, "Fit"), el("dd", { id: "forest-fit-time" }, fmtSeconds(t.fit)),
        el("dt", {}, "Predict"), el("dd", {}, fmtSeconds(t.predict)),
        el("dt", {}, "On"), el("dd", {}, where)),
      el("h3", {}, "Keep it"),
      el("div", { class: "row" }, lastModel ? download : el("span", { class: "muted" }, "no model exported"),
        onnxButton, filePicker(predictInput, "Predict on a new CSV…", { id: "forest-predict" })), onnxStatus, predictStatus,
      lastModel ? snippet(run, lastModel) : null,
      snippetBox("forest-onnx-snippet", "Use the ONNX model elsewhere (Python, onnxruntime)", getSnippet(run.id)));
    const baseRow = metricsTable.querySelectorAll("tbody tr");
    baseRow.forEach((tr) => tr.lastChild.classList.add("muted"));
    live = null;
    drawPlots(run.result?.plots || run.extra?.plots || {}, plots, charts);
  }
}

function headline(m) {
  const k = ["accuracy", "r2", "mse"].find((x) => typeof m[x] === "number");
  return k ? `${k} ${fmtNumber(m[k], 4)}` : "done";
}

// Whether the forest beat the baseline, in words, on the headline metric.
function beats(m, base) {
  if (typeof m.accuracy === "number" && typeof base.accuracy === "number") {
    const d = m.accuracy - base.accuracy;
    return d > 0 ? `The forest is ${fmtNumber(d * 100, 3)} points of accuracy better.`
      : "The forest is no better than always guessing that class.";
  }
  if (typeof m.mse === "number" && typeof base.mse === "number") {
    return m.mse < base.mse ? `The forest's error (mse) is ${fmtNumber((1 - m.mse / base.mse) * 100, 3)}% lower.`
      : "The forest is no better than predicting the mean.";
  }
  return "";
}

// A time ahead, as a person says it: "under a second", "about 40 s", "about 3 min", "about 1.5 h".
function fmtDuration(s) {
  if (s < 1) return "under a second";
  if (s < 90) return `about ${Math.round(s)} s`;
  if (s < 5400) return `about ${Math.round(s / 60)} min`;
  return `about ${(s / 3600).toFixed(1)} h`;
}
export { fmtDuration };

// How to load the JSON download elsewhere (plain Python with py_core): web/snippets.js builds it.
function snippet(run, model) {
  return snippetBox("forest-snippet", "Use the JSON model elsewhere (Python, py_core)", forestJsonSnippet(run, model.binary));
}

// The forest's plots in `plots` (a .cards box); `charts` holds their handles (destroyed on redraw),
// each with its `kind` (the plot's key). `live`: the plots of the trees so far (no residuals).
export function drawPlots(p, plots, charts = [], { live = false } = {}) {
  for (const c of charts.splice(0)) c.destroy();
  plots.replaceChildren();
  const add = (kind, title, draw, note) => {
    const box = el("div");
    plots.append(el("div", { class: "card", dataset: { plot: kind } }, el("h2", {}, title),
      note ? el("p", { class: "muted" }, note) : null, box));
    charts.push(Object.assign(draw(box), { kind }));
  };
  const s = p.surface;
  if (s) {
    add("surface", "Decision surface", (c) => surface(c, s.grid, s.points, { xName: s.x_name, yName: s.y_name, others: s.others,
      legend: s.levels ? s.levels.map((v) => fmtNumber(v, 3)) : null }),
    s.others ? (s.others === 1 ? "The other feature at its training median." : `The other ${s.others} features at their training medians.`) : null);
  }
  if (p.pred_vs_actual) add("pred_vs_actual", "Predicted against actual", (c) => scatterChart(c, p.pred_vs_actual, { title: "Predicted against actual (test rows)", xName: "actual", yName: "predicted", diagonal: true }));
  if (p.confusion) add("confusion", "Confusion matrix (test set)", (c) => confusion(c, p.confusion.matrix, p.confusion.classes));
  const residuals = live ? null : p.residuals || p.pred_vs_actual?.map(([t, y]) => [y, t - y]);
  if (residuals) add("residuals", "Residuals", (c) => scatterChart(c, residuals, { title: "Residuals (test rows)", xName: "predicted", yName: "actual − predicted", zero: true }));
  if (p.importances) add("importances", "Feature importances", (c) => bars(c, p.importances.map((f) => [f.name ?? f[0], f.importance ?? f[1]]), { title: "Feature importances" }));
  return charts;
}
