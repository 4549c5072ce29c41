// One stored run's page (/runs/<id>): what was trained on what, its parameters, metrics against
// the baseline, timings, its plots (kept with the run), the server's comparisons, the run as JSON,
// and a link that opens the same set-up in the playground.
import { getRun } from "./api.js";
import { lineChart } from "./charts.js";
import { compared, KINDS, withDefaults } from "./kinds.js";
import { showComparisons } from "./panels/compare.js";
import { drawPlots } from "./panels/forest_plots.js";
import { dataName, loadNames } from "./panels/runs.js";
import { $, el, fmtNumber, fmtTiming, scrollersTakeFocus, table } from "./ui.js";

const NOT_METRICS = new Set(["n_train", "n_test", "n_features", "predict_all_rows", "n_iter", "loss_curve", "val_curve"]);

// What each panel reads from the URL (state.js keys), from a run's config.
function tabular(c, q, prefix) {
  if (c.dataset) q.set("data", c.dataset);
  if (c.target) q.set("target", c.target);
  if (c.task) q.set("task", c.task);
  if (c.features) q.set("features", c.features.map(encodeURIComponent).join(","));
  if (c.split?.test_size !== undefined) q.set("test", c.split.test_size);
  if (c.split?.seed !== undefined) q.set("seed", c.split.seed);
  if (Array.isArray(c.surface)) q.set(`${prefix}surface`, c.surface.map(encodeURIComponent).join(","));
}
const SETUP = {
  forest(c, q) {
    tabular(c, q, "rf.");
    for (const [k, v] of Object.entries(c.params || {})) {
      if (k === "bootstrap") q.set("rf.bootstrap", v ? "1" : "0");
      // max_features null is every feature, which the form's empty box is not (the task's
      // default: sqrt for classes): its 1.0, which the form sends as null.
      else if (k === "max_features" && v === null) q.set("rf.max_features", "1.0");
      else if (typeof v !== "object" || v === null) q.set(`rf.${k}`, v === null ? "" : String(v));
    }
  },
  boosting(c, q) {   // its form's keys (panels/params_form.js): a switch "true"/"false", null ""
    tabular(c, q, "gb.");
    for (const [k, v] of Object.entries(c.params || {})) {
      if (typeof v !== "object" || v === null) q.set(`gb.${k}`, v === null ? "" : String(v));
    }
  },
  transformer(c, q) {
    if (c.text) q.set("tf.text", c.text);
    for (const [k, v] of Object.entries(c.params || {})) {
      if (k === "sample_chars") continue;
      q.set(`tf.${k}`, String(v));
    }
  },
};

// The playground URL that opens this run's set-up: its kind's panel (GET /api/kinds), filled in.
export function setupLink(run) {
  const q = new URLSearchParams();
  const tab = KINDS[run.kind]?.tab;
  if (tab) q.set("tab", tab);
  SETUP[tab]?.(run.config || {}, q);
  return `/?${q}`;
}

async function main() {
  const id = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
  const root = $("#run-page");
  let run;
  try {
    [run] = await Promise.all([getRun(id), loadNames()]);
  } catch (e) {
    $("#run-status").className = "status error";
    $("#run-status").textContent = e.status === 404 ? `There is no run ${id} on this server.` : `Could not load run ${id}: ${e.message}`;
    return;
  }
  const kindName = KINDS[run.kind]?.label || run.kind;   // "Gradient boosting", as its tab says it
  document.title = `${kindName} run ${id.slice(0, 8)} · WebGPU ML Playground`;
  const data = run.config?.dataset || run.config?.text;
  const a = run.adapter || {};
  const device = run.backend === "webgpu" ? `WebGPU · ${[a.vendor, a.architecture].filter(Boolean).join(" ")}${a.is_fallback_adapter ? " (software)" : ""}` : run.backend;
  const json = new Blob([JSON.stringify(run, null, 1)], { type: "application/json" });
  const about = el("div", { class: "card" }, el("h2", { id: "run-title" }, `${kindName} run ${id.slice(0, 8)}`),
    el("dl", { class: "kv", id: "run-about" },
      el("dt", {}, "When"), el("dd", {}, new Date(run.created_at).toLocaleString()),
      el("dt", {}, "Data"), el("dd", {}, data ? dataName(data) : "–"),
      run.config?.target ? [el("dt", {}, "Target"), el("dd", {}, `${run.config.target}${run.config.task ? ` (${run.config.task})` : ""}`)] : null,
      el("dt", {}, "Device"), el("dd", {}, device),
      el("dt", {}, "Id"), el("dd", {}, run.id)),
    el("div", { class: "row", style: "margin-top:10px" },
      el("a", { class: "button secondary", id: "run-download", href: URL.createObjectURL(json), download: `run-${id.slice(0, 8)}.json` }, "Download the run (JSON)"),
      el("a", { class: "button secondary", id: "run-open", href: setupLink(run) }, "Open this set-up in the playground")));
  const params = Object.entries(run.config?.params || {});
  const paramsCard = el("div", { class: "card" }, el("h2", {}, "Parameters"),
    params.length ? table(["Parameter", "Value"], params.map(([k, v]) => [k, v === null ? "none" : typeof v === "object" ? JSON.stringify(v) : String(v)]), { id: "run-params" })
      : el("p", { class: "muted" }, "No parameters."),
    // A run stores the parameters it was given: the table's others were at their defaults.
    KINDS[run.kind]?.params.length ? el("p", { class: "muted", id: "run-params-note" }, "The others were left at their defaults.") : null);
  const m = run.metrics || {};
  const base = run.extra?.baseline;
  const metricRows = Object.entries(m).filter(([k, v]) => typeof v === "number" && !NOT_METRICS.has(k))
    .map(([k, v]) => [k, fmtNumber(v, 5), base && typeof base[k] === "number" ? fmtNumber(base[k], 5) : "–"]);
  const timingRows = Object.entries(run.timings || {}).filter(([, v]) => typeof v === "number").map(([k, v]) => [k, fmtTiming(k, v)]);
  const resultsCard = el("div", { class: "card" }, el("h2", {}, "Results"),
    m.n_test ? el("p", { class: "muted" }, `On the ${m.n_test} test rows (trained on ${m.n_train} rows).`) : null,
    metricRows.length ? table(["Metric", "This run", "Baseline"], metricRows, { id: "run-metrics" }) : null,
    base ? el("p", { class: "muted" }, `Baseline: ${base.predictor}.`) : null,
    el("h3", {}, "Time"), table(["Phase", "Time"], timingRows, { id: "run-timings" }));
  const plots = el("div", { class: "cards", id: "run-plots", style: "margin-top:16px" });
  const compare = el("div", { id: "run-compare" });
  root.replaceChildren(el("div", { class: "cards" }, about, paramsCard, resultsCard), plots,
    el("h2", { class: "section-note" }, "The same job on the server"), compare);
  if (run.extra?.plots) drawPlots(run.extra.plots, plots, [], { params: withDefaults(run.kind, run.config?.params) });
  if (Array.isArray(m.loss_curve) && m.loss_curve.length) {
    const box = el("div");
    plots.append(el("div", { class: "card" }, el("h2", {}, "Loss"), box));
    lineChart(box, [{ name: "train", points: m.loss_curve }, ...(m.val_curve?.length ? [{ name: "validation", points: m.val_curve }] : [])],
      { title: "Loss by step", xName: "step", yName: "loss", integerX: true });
  }
  if (!plots.children.length) plots.remove();
  if (compared(run.kind)) showComparisons(compare, run);
  else compare.replaceChildren(el("p", { class: "muted" }, "The server runs no comparison for this kind of run."));
}

scrollersTakeFocus(document.body);
main();
