// The Random forest panel: parameters (presets, scikit-learn names), Train and Stop, progress by
// level and tree, the decision surface (and, for regression, predicted against actual) redrawn
// as each batch of trees finishes, then metrics against the baseline, plots, times with the
// adapter named, the model to download, and predictions on a new CSV. Trains on the Data tab's
// selection; every run is posted to the server.
import { getSnippet } from "../api.js";
import { showComparisons } from "./compare.js";
import { adapterClass, measured, NAMES, PRESETS, ratesKey, SAMPLES, SHOWN, SMALL, START } from "./forest_params.js";
import { drawPlots, sliceText } from "./forest_plots.js";
import { download as download_, forestJSONParts } from "../forest_model.js";
import { forestJsonSnippet } from "../snippets.js";
import { rowsText } from "./data.js";
import { beats, dataChanged, markStale as markStale_, metricsTable, onnxButton, selectionText, surfacePicker, trainJob, whereText } from "./tabular.js";
import { paramsForm } from "./params_form.js";
import { initial, save } from "../state.js";
import { el, filePicker, fmtDuration, fmtSeconds, progressBar, snippetBox } from "../ui.js";

// "Retrain when a parameter changes" is offered when a forest is estimated to take at most this
// long here (small data on a GPU: under a second).
const RETRAIN_SECONDS = 5;

export function mountForestPanel(root, playground) {
  // Shown, the tab has its kernels compiled (py_core.browser.warm), once: a GPU adapter's worker
  // has them compiling from its start already, a CPU adapter's waits for this (web/worker.js).
  let warmed = false;
  playground.events.addEventListener("tab", (ev) => {
    if (ev.detail !== "forest" || warmed) return;
    warmed = true;
    playground.ready.then(() => playground.warm("random_forest")).catch(() => {});
  });
  // Every value the form holds is sent: a run records its trees even at scikit-learn's 100.
  const form = paramsForm("random_forest", NAMES, { prefix: "rf.", idPrefix: "forest", start: START, shown: SHOWN,
                                                    sendDefaults: true });
  const preset = el("select", { id: "forest-preset" }, el("option", { value: "" }, "Custom"),
    Object.entries(PRESETS).map(([k, p]) => el("option", { value: k }, p.label)));
  if (PRESETS[initial("rf.preset")]) preset.value = initial("rf.preset");
  const train = el("button", { class: "primary", id: "forest-train" }, "Train");
  const stop = el("button", { class: "secondary", id: "forest-stop", disabled: true }, "Stop");
  const auto = el("input", { type: "checkbox", id: "forest-auto", disabled: true });
  const autoLabel = el("label", { class: "muted", id: "forest-auto-label",
                                  title: `Offered when a forest takes at most ${RETRAIN_SECONDS} s here (small data on a GPU: under a second)` },
  auto, " retrain when a parameter changes");
  const picker = surfacePicker("forest", "rf.surface", () => { if (auto.checked && !training) changed(); });
  const selection = el("p", { class: "muted", id: "forest-selection" }, "Pick a data set in the Data tab.");
  const estimate = el("p", { class: "estimate", id: "forest-estimate" });
  const bar = progressBar("Training progress");
  const status = el("div", { class: "status", id: "forest-status", role: "status", "aria-live": "polite" });
  const paramsCard = el("div", { class: "card" }, el("h2", {}, "Random forest"), selection,
    el("div", { class: "row" }, el("label", {}, "Preset ", preset)), form.element, picker.row,
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

  preset.addEventListener("change", () => {
    if (!PRESETS[preset.value]) return;
    form.set(PRESETS[preset.value].params);
    changed();
  });
  // A number typed makes the preset Custom; the criterion and bootstrap are beside the presets.
  for (const f of Object.values(form.fields)) {
    f.control.addEventListener(f.event, () => { if (f.event === "input") preset.value = ""; changed(); });
  }

  let autoTimer = null;
  function changed() {
    delete estimate.dataset.sized;
    form.values();   // each field's problem under it, as it is typed
    form.save();
    save({ "rf.preset": preset.value || null });
    updateEstimate();
    if (auto.checked && !training) {
      clearTimeout(autoTimer);
      autoTimer = setTimeout(() => { if (!training && !form.values().error) train.click(); }, 500);
    }
  }

  playground.events.addEventListener("selection", (ev) => {
    const s = ev.detail;
    selection.textContent = selectionText(s);
    form.fields.criterion.control.disabled = s.task !== "classification";   // left out of the params
    form.fields.max_features.most = s.features.length;
    picker.choices(s.features);
    updateEstimate();
    if (shown && !training) markStale(dataChanged(shown, s));
  });

  // The run whose results and plots are shown, and a line over them when they are no longer what
  // the form would train: a new forest training, one stopped or failed, the data changed.
  let shown = null;
  const markStale = (text) => markStale_(resultCard, [plots, compare], "forest-stale", text);

  // Defaults sized to the adapter: a software adapter or the CPU path gets a small forest
  // (unless the link asked for something else).
  playground.ready.then(() => {
    const slow = playground.isSoftware() || playground.info?.backend !== "webgpu";
    if (slow && !NAMES.some((n) => initial(`rf.${n}`) !== null) && !initial("rf.preset")) {
      form.set(SMALL);
      preset.value = "";
      estimate.dataset.sized = "small";
    }
    updateEstimate();
  }).catch(() => {});

  // An estimate before Train (py_core.jobs.estimate): the work counted from the rows, features,
  // trees and depth, at this adapter's rates as learned from the forests this tab (this browser)
  // measured, else an adapter class's; and a warning when it would take minutes or cannot fit.
  let asked = 0;
  async function updateEstimate() {
    const s = playground.selection, info = playground.info;
    if (!s || !info) return;
    const p = form.values();
    if (p.error) { estimate.textContent = ""; return; }
    const mine = ++asked;
    const cls = adapterClass(playground);
    const samples = measured(info);
    let out;
    try {
      out = await playground.call("forest_estimate", [JSON.stringify({
        rows: Math.round(s.rows * (1 - s.split.test_size)), features: s.features.length, params: p.params,
        n_classes: s.task === "classification" ? Math.max(2, s.classes || 2) : 0, adapter_class: cls, samples,
        limits: info.backend === "webgpu" ? info.limits : null })]);
    } catch (e) { return; }
    if (mine !== asked) return;   // a later change asked again
    if (out.error) { estimate.textContent = ""; return; }
    const basis = out.learned ? `at the rates of your last ${out.learned === 1 ? "forest" : `${out.learned} forests`} on this adapter`
      : `at a ${cls === "gpu" ? "GPU" : cls === "software" ? "software adapter" : "CPU"}'s usual rates; it learns from each forest you train here`;
    estimate.dataset.seconds = String(out.seconds);
    estimate.className = out.refused || out.minutes ? "estimate warn" : "estimate";
    estimate.textContent = out.refused ? `This forest cannot fit this adapter: ${out.refused}.`
      : `Estimated time: ${fmtDuration(out.seconds)} (${basis}).`
        + (out.minutes ? " That is minutes: fewer trees, a max_depth or fewer rows would be quicker." : "")
        + (estimate.dataset.sized === "small" ? " Parameters sized down for this adapter." : "");
    auto.disabled = !(out.seconds <= RETRAIN_SECONDS) || Boolean(out.refused);
    if (auto.disabled) auto.checked = false;
  }

  // A finished forest's measured fit (less compiling the kernels: once a tab) joins this
  // adapter's samples, with its work as the estimate counts it.
  async function learn(run) {
    const info = playground.info, m = run.metrics, t = run.timings;
    const fit = t.fit - (t.compile || 0);
    if (!info || !(fit > 0)) return;
    const out = await playground.call("forest_estimate", [JSON.stringify({
      rows: m.n_train, features: m.n_features, params: run.config.params,
      n_classes: m.accuracy !== undefined ? Math.max(2, run.plots?.confusion?.classes?.length || 2) : 0,
      adapter_class: adapterClass(playground) })]).catch(() => null);
    if (!out || out.error) return;
    const key = ratesKey(info);
    localStorage.setItem(key, JSON.stringify([...measured(info), { ...out.work, seconds: fit }].slice(-SAMPLES)));
  }

  train.addEventListener("click", async () => {
    const s = playground.selection;
    if (!s) { status.textContent = "Pick a data set in the Data tab first."; return; }
    const p = form.values();
    if (p.error) { status.className = "status error"; status.textContent = `Not trained: ${p.error}`; form.fields[p.field].control.focus(); return; }
    // live: the surface (and predicted against actual) redrawn after each batch of trees.
    const job = { kind: "random_forest", dataset: s.dataset, target: s.target, task: s.task,
                  features: s.features, params: p.params, split: s.split, live: true,
                  ...(picker.pair() ? { surface: picker.pair() } : {}) };
    train.disabled = true; stop.disabled = false; training = true;
    if (shown) markStale(`A new forest is training: these are the results of run ${shown.id.slice(0, 8)}.`);
    live = null;
    try {
      const { run, error } = await trainJob(playground, job, { bar, status, onLive: drawLive, what: "Forest", stopped: (e) => {
        // A stopped forest is discarded (its trees so far are not stored): the message says where it was.
        const where = /stopped at level \d+ of trees [\d-]+, with \d+ of \d+ trees finished/.exec(e.detail || "");
        return where && `Stopped ${where[0].replace(/^stopped /, "")}: the forest is discarded, nothing was posted.`;
      } });
      if (run) {
        lastModel = run.result.model || null;
        showResults(run, s.name);
        showComparisons(compare, run);
        await learn(run);
        updateEstimate();
      } else {
        // The discarded forest's live plots go; the last finished run's come back, marked as such.
        if (live) drawPlots(shown ? shown.plots : {}, plots, charts);
        live = null;
        if (shown) markStale(`${error.stopped ? "Stopped" : "Failed"}: that forest is discarded; these are the results of run ${shown.id.slice(0, 8)}, trained before.`);
      }
    } finally {  // whatever showing the results throws, Train comes back
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
      const card = plots.querySelector("[data-plot=surface]");
      if (card && p.surface) {
        card.querySelector(".surface-slice").textContent = sliceText(p.surface);
        Object.assign(card.querySelector(".surface-note"), { textContent: p.surface.note || "", hidden: !p.surface.note });
      }
      if (p.pred_vs_actual) live.scatter?.update(p.pred_vs_actual);
    }
    plots.querySelector("#forest-live").textContent = `Drawn by the trees grown so far: ${note}.`;
  }

  function showResults(run, dataName) {
    const m = run.metrics, t = run.timings;
    const base = run.result?.baseline || run.extra?.baseline || null;
    const name = `forest-${run.id.slice(0, 8)}`;
    const download = el("span", { class: "row" },
      el("button", { class: "secondary", id: "forest-download", onclick: () => {
        download_(forestJSONParts(lastModel.binary), "application/json", `${name}.json`);
      } }, "Download model (JSON)"),
      el("button", { class: "secondary", id: "forest-download-binary", onclick: () => {
        download_([lastModel.binary], "application/octet-stream", `${name}.pcforest`);
      } }, "Download model (binary)"));
    const [onnx, onnxStatus] = onnxButton(run, "forest", name);
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
    resultCard.replaceChildren(el("h2", {}, "Results"),
      el("p", { class: "muted", id: "forest-data-sizes" }, `On the ${m.n_test} test rows (trained on ${m.n_train} rows, ${m.n_features} features).`),
      run.result?.rows ? el("p", { class: "muted", id: "forest-rows" }, rowsText(run.result.rows, run.config.target)) : null,
      metricsTable(m, base, { id: "forest-metrics", model: "This forest" }),
      base ? el("p", { class: "muted", id: "forest-baseline-note" }, `Baseline: ${base.predictor}, the same test rows. ` +
        beats(m, base, "The forest")) : null,
      el("h3", {}, "Time"),
      el("dl", { class: "kv" }, el("dt", {}, "Fit"), el("dd", { id: "forest-fit-time" }, fmtSeconds(t.fit)),
        // the seconds the job waited on kernels still compiling (a tab compiles them once, ahead)
        ...(t.compile >= 0.05 ? [el("dt", {}, "Waiting on compiles"),
          el("dd", { id: "forest-compile-time" }, `${fmtSeconds(t.compile)} (kernels compile once a tab)`)] : []),
        el("dt", {}, "Predict"), el("dd", {}, fmtSeconds(t.predict)),
        el("dt", {}, "On"), el("dd", {}, whereText(run))),
      el("h3", {}, "Keep it"),
      el("div", { class: "row" }, lastModel ? download : el("span", { class: "muted" }, "no model exported"),
        onnx, filePicker(predictInput, "Predict on a new CSV…", { id: "forest-predict" })), onnxStatus, predictStatus,
      lastModel ? snippet(run, lastModel) : null,
      snippetBox("forest-onnx-snippet", "Use the ONNX model elsewhere (Python, onnxruntime)", getSnippet(run.id)));
    live = null;
    drawPlots(run.result?.plots || run.extra?.plots || {}, plots, charts);
    shown = { id: run.id, config: run.config, name: dataName ?? run.config.dataset,
              plots: run.result?.plots || run.extra?.plots || {} };
    markStale(dataChanged(shown, playground.selection));   // the selection may have moved on while it trained
  }
}

// How to load the JSON download elsewhere (plain Python with py_core): web/snippets.js builds it.
function snippet(run, model) {
  return snippetBox("forest-snippet", "Use the JSON model elsewhere (Python, py_core)", forestJsonSnippet(run, model.binary));
}
export { mountForestPanel as mount };  // what the page calls for the forest kind (its Kind.panel)
