// The Gradient boosting panel: scikit-learn's HistGradientBoosting parameters (the form derived
// from the kind's table, presets with scikit-learn's defaults first), Train and Stop, the
// training and validation losses by iteration drawn live, early stopping said and its best
// iteration marked, then metrics against the baseline, the decision surface and importances,
// the model to download (JSON; ONNX where the kind exports it) with the Python that loads it, and
// the server's runs of the same job.
// Trains on the Data tab's selection; every run is posted to the server.
import { getRecentRuns, getSnippet } from "../api.js";
import { download } from "../forest_model.js";
import { compared, KINDS, withDefaults } from "../kinds.js";
import { adapterId, initial, sameAdapter, save } from "../state.js";
import { el, fmtDuration, fmtNumber, fmtSeconds, progressBar, snippetBox } from "../ui.js";
import { LOSSES, NAMES, PRESETS, SMALL, START } from "./boosting_params.js";
import { showComparisons } from "./compare.js";
import { rowsText } from "./data.js";
import { drawPlots } from "./forest_plots.js";
import { liveCurve } from "./loss_curve.js";
import { paramsForm } from "./params_form.js";
import { beats, dataChanged, markStale as markStale_, metricsTable, onnxButton, selectionText, surfacePicker, trainJob,
  whereText } from "./tabular.js";

const KIND = "gradient_boosting";
// The model is stored with its run while its JSON is this small (a run's body is at most the
// server's max_json_kb, 1 MB by default, plots included): the server's ONNX file is then this
// model. A larger one the server fits again, on its backend, whose float sums may part from
// this adapter's in a near tie and grow other trees (R's Chile survey: 5% of labels differed).
const KEPT_MODEL_CHARS = 500_000;
const keepModel = (result) => (result.model && JSON.stringify(result.model).length < KEPT_MODEL_CHARS
  ? { model: result.model } : {});
// Seconds a unit of work (rows x features x iterations x trees an iteration) of the last boosted
// fit on this adapter, for the estimate of the next: a boosted fit's time is about linear in each.
// This browser's own, kept across reloads (localStorage), else the server's last boosted runs on
// the same adapter; with neither, no estimate until a first run.
const ratesKey = (info) => `playground.boosting-rates:${adapterId(info)}`;
function rateOf(run) {
  const m = run.metrics || {}, plots = run.result?.plots || run.extra?.plots;
  const classes = plots?.confusion?.classes?.length || 0;
  const work = m.n_train * m.n_features * m.n_iter * (classes > 2 ? classes : 1);
  return run.timings?.fit > 0 && work > 0 ? { rate: run.timings.fit / work, basis: "mine" } : null;
}
function remembered(info) {
  try {
    const got = JSON.parse(localStorage.getItem(ratesKey(info)) || "null");
    return got?.rate > 0 ? got : null;
  } catch (e) { return null; }
}

export function mountBoostingPanel(root, playground) {
  // Shown, the tab has its kernels compiled (py_core.browser.warm), once, so Train waits on none.
  let warmed = false;
  playground.events.addEventListener("tab", (ev) => {
    if (ev.detail !== "boosting" || warmed) return;
    warmed = true;
    playground.ready.then(() => playground.warm("gradient_boosting")).catch(() => {});
  });
  const form = paramsForm(KIND, NAMES, { prefix: "gb.", idPrefix: "gb", start: START });
  const preset = el("select", { id: "gb-preset" }, el("option", { value: "" }, "Custom"),
    Object.entries(PRESETS).map(([k, p]) => el("option", { value: k }, p.label)));
  if (PRESETS[initial("gb.preset")]) preset.value = initial("gb.preset");
  const picker = surfacePicker("gb", "gb.surface");
  const train = el("button", { class: "primary", id: "gb-train" }, "Train");
  const stop = el("button", { class: "secondary", id: "gb-stop", disabled: true }, "Stop");
  const selection = el("p", { class: "muted", id: "gb-selection" }, "Pick a data set in the Data tab.");
  const estimate = el("p", { class: "estimate", id: "gb-estimate" });
  const bar = progressBar("Training progress");
  const status = el("div", { class: "status", id: "gb-status", role: "status", "aria-live": "polite" });
  const paramsCard = el("div", { class: "card" }, el("h2", {}, "Gradient boosting"), selection,
    el("div", { class: "row" }, el("label", {}, "Preset ", preset)), form.element, picker.row,
    el("div", { class: "row" }, train, stop), estimate, bar, status);
  const resultCard = el("div", { class: "card", id: "gb-results" }, el("h2", {}, "Results"),
    el("p", { class: "muted" }, "Train a boosted model to see how good it is."));
  const plots = el("div", { class: "cards", id: "gb-plots" });
  const compare = el("div", { id: "gb-compare" });
  root.append(el("div", { class: "cards" }, paramsCard, resultCard), plots,
    el("h2", { class: "section-note" }, "The same job on the server"), compare);

  const charts = [];
  let shown = null;   // the run whose results and plots are shown
  let training = false;
  const markStale = (text) => markStale_(resultCard, [plots, compare], "gb-stale", text);

  let slow = false;   // a software adapter or the CPU path: a link without iterations is sized down
  function changed() {
    form.values();   // each field's problem under it, as it is typed
    form.save();
    // There the link names the iterations even at the default (100), or a reload sizes them down.
    save({ "gb.preset": preset.value || null, ...(slow ? { "gb.max_iter": form.fields.max_iter.control.value.trim() } : {}) });
    updateEstimate();
  }
  preset.addEventListener("change", () => {
    sized = "";   // the iterations are the preset's now, not the page's sizing
    if (PRESETS[preset.value]) form.set(PRESETS[preset.value].params);
    changed();
  });
  for (const f of Object.values(form.fields)) {
    f.control.addEventListener(f.control.tagName === "INPUT" ? "input" : "change", () => { preset.value = ""; changed(); });
  }

  // The losses the selection's task takes; a loss of the other task goes back to the default.
  function lossesFor(task) {
    const loss = form.fields.loss.control;
    for (const o of loss.options) o.disabled = o.value !== "" && !LOSSES[task]?.includes(o.value);
    if (loss.selectedOptions[0]?.disabled) loss.value = "";
  }

  playground.events.addEventListener("selection", (ev) => {
    const s = ev.detail;
    selection.textContent = selectionText(s);
    lossesFor(s.task);
    picker.choices(s.features);
    updateEstimate();
    if (shown && !training) markStale(dataChanged(shown, s));
  });

  // An estimate before Train, from this tab's last boosted fit (its seconds a unit of work), and
  // a warning when it would take minutes.
  let rate = null, pastRuns = null, sized = "";
  async function updateEstimate() {
    const info = playground.info;
    if (!info) return;
    if (!rate) rate = remembered(info);
    if (!rate && pastRuns === null) {
      pastRuns = [];
      try { pastRuns = await getRecentRuns(KIND, 10); } catch (e) { /* none */ }
      const same = pastRuns.find((r) => sameAdapter(r, info) && rateOf(r));
      if (same && !rate) rate = { rate: rateOf(same).rate, basis: "server" };
    }
    const s = playground.selection, got = form.values();
    if (!s) return;
    const p = got.error ? null : withDefaults(KIND, got.params);
    const note = p?.max_iter === SMALL.max_iter ? sized : "";   // while the sized-down count stands
    if (rate === null || !p) {   // before a first run, the line says only what was sized
      estimate.className = "estimate"; delete estimate.dataset.seconds;
      estimate.textContent = p ? note.trim() : "";
      return;
    }
    const trees = s.task === "classification" && (s.classes || 2) > 2 ? s.classes : 1;
    const seconds = rate.rate * s.rows * (1 - s.split.test_size) * s.features.length * p.max_iter * trees;
    estimate.dataset.seconds = String(seconds);
    estimate.className = seconds > 60 ? "estimate warn" : "estimate";
    estimate.textContent = `Estimated time: ${fmtDuration(seconds)} at most (at the rate of ` +
      `${rate.basis === "mine" ? "your last boosted model" : "the last boosted model stored"} on this adapter` +
      `${p.early_stopping === false ? "" : "; early stopping may end it sooner"}).` +
      (seconds > 60 ? " That is minutes: fewer iterations or rows would be quicker." : "") +
      note;
  }

  // Sized for a software adapter or the CPU path (unless the link asked for something else):
  // fewer iterations, said under Train.
  playground.ready.then(() => {
    slow = playground.isSoftware() || playground.info?.backend !== "webgpu";
    if (slow && !NAMES.some((n) => initial(`gb.${n}`) !== null) && !initial("gb.preset")) {
      form.set(SMALL);
      sized = ` Iterations sized down to ${SMALL.max_iter} for this adapter (scikit-learn's default: 100).`;
      estimate.textContent = sized.trim();
    }
    updateEstimate();
  }).catch(() => {});

  function learn(run) {
    const got = rateOf(run);
    if (!got) return;
    rate = got;
    try { localStorage.setItem(ratesKey({ backend: run.backend, adapter: run.adapter }), JSON.stringify(got)); } catch (e) { /* storage refused */ }
  }

  train.addEventListener("click", async () => {
    const s = playground.selection;
    if (!s) { status.textContent = "Pick a data set in the Data tab first."; return; }
    const got = form.values();
    if (got.error) {
      status.className = "status error"; status.textContent = `Not trained: ${got.error}`;
      form.fields[got.field].control.focus();
      return;
    }
    const job = { kind: KIND, dataset: s.dataset, target: s.target, task: s.task, features: s.features,
                  params: got.params, split: s.split, ...(picker.pair() ? { surface: picker.pair() } : {}) };
    train.disabled = true; stop.disabled = false; training = true;
    if (shown) markStale(`A new model is training: these are the results of run ${shown.id.slice(0, 8)}.`);
    live = null;
    liveLoss = got.params.loss || (s.task === "classification" ? "log_loss" : "squared_error");  // the default's
    try {
      const { run, error } = await trainJob(playground, job, { bar, status, onLive: drawLive, what: "Boosted model", keep: keepModel, stopped: (e) => {
        // A stopped model is discarded: the message says after how many iterations.
        const where = /^stopped after (\d+ of \d+ iterations)/.exec(e.message || "");
        return where && `Stopped after ${where[1]}: the model is discarded, nothing was posted.`;
      } });
      if (run) {
        showResults(run, s.name);
        if (compared(KIND)) showComparisons(compare, run);
        else compare.replaceChildren(el("p", { class: "muted" }, "The server runs no comparison for this kind of run."));
        learn(run);
        updateEstimate();
      } else {
        if (live) drawPlots(shown ? shown.plots : {}, plots, charts, { params: shown?.params });
        live = null;
        if (shown) markStale(`${error.stopped ? "Stopped" : "Failed"}: that model is discarded; these are the results of run ${shown.id.slice(0, 8)}, trained before.`);
      }
    } finally {  // whatever showing the results throws, Train comes back
      train.disabled = false; stop.disabled = true; training = false;
    }
  });
  stop.addEventListener("click", () => { playground.stop(); status.textContent = "Stopping…"; });

  // The losses so far, drawn on the first message and lengthened by each.
  let live = null, liveLoss = null;
  function drawLive({ iteration, max_iter: total, train_loss: tl, validation_loss: vl, points }) {
    if (!live) {
      live = { points: [] };
      drawPlots({ loss_curve: liveCurve(points, liveLoss) }, plots, charts, { live: true });
      live.chart = charts.find((c) => c.kind === "loss_curve");
      live.note = plots.querySelector("[data-plot=loss_curve] .loss-stopping");
      live.note.id = "gb-live";
    }
    live.points.push(...points);
    live.chart.show(liveCurve(live.points, liveLoss));
    live.note.textContent = `Iteration ${iteration} of ${total}: training loss ${fmtNumber(tl, 4)}` +
      (vl !== null && vl !== undefined ? `, validation loss ${fmtNumber(vl, 4)}.` : ".");
  }

  function showResults(run, dataName) {
    const m = run.metrics, t = run.timings, model = run.result?.model || null;
    const base = run.result?.baseline || run.extra?.baseline || null;
    const name = `boosting-${run.id.slice(0, 8)}`;
    const kind = KINDS[KIND] || { exports: [], snippet: null };
    const downloads = el("div", { class: "row" },
      model ? el("button", { class: "secondary", id: "gb-download", onclick: () => {
        download([JSON.stringify(model)], "application/json", `${name}.json`);
      } }, "Download model (JSON)") : el("span", { class: "muted" }, "no model exported"));
    let onnxStatus = null;
    if (kind.exports.includes("onnx")) {
      const [button, line] = onnxButton(run, "gb", name);
      downloads.append(button);
      onnxStatus = line;
    }
    const params = run.result?.params || run.config.params;
    resultCard.replaceChildren(...[el("h2", {}, "Results"),
      el("p", { class: "muted", id: "gb-data-sizes" }, `On the ${m.n_test} test rows (trained on ${m.n_train} rows, ${m.n_features} features).`),
      run.result?.rows ? el("p", { class: "muted", id: "gb-rows" }, rowsText(run.result.rows, run.config.target)) : null,
      metricsTable(m, base, { id: "gb-metrics", model: "This model" }),
      base ? el("p", { class: "muted", id: "gb-baseline-note" }, `Baseline: ${base.predictor}, the same test rows. ` +
        beats(m, base, "The boosted model")) : null,
      el("h3", {}, "Time"),
      el("dl", { class: "kv" }, el("dt", {}, "Fit"), el("dd", { id: "gb-fit-time" }, fmtSeconds(t.fit)),
        el("dt", {}, "Predict"), el("dd", {}, fmtSeconds(t.predict)),
        el("dt", {}, "Iterations"), el("dd", { id: "gb-iterations" }, `${m.n_iter} of ${params.max_iter}`),
        el("dt", {}, "On"), el("dd", {}, whereText(run))),
      el("h3", {}, "Keep it"), downloads, onnxStatus,
      // The server writes it from the stored run (server/snippets.py: the JSON download in numpy).
      kind.snippet ? snippetBox("gb-snippet", "Use the JSON model elsewhere (Python, numpy)", getSnippet(run.id)) : null,
      onnxStatus ? snippetBox("gb-onnx-snippet", "Use the ONNX model elsewhere (Python, onnxruntime)", getSnippet(run.id, "onnx")) : null]
      .filter(Boolean));
    live = null;
    const p = run.result?.plots || run.extra?.plots || {};
    drawPlots(p, plots, charts, { params });
    shown = { id: run.id, config: run.config, name: dataName ?? run.config.dataset, plots: p, params };
    markStale(dataChanged(shown, playground.selection));   // the selection may have moved on while it trained
  }
}
export { mountBoostingPanel as mount };  // what the page calls for the boosting kind (its Kind.panel)
