// What the panels of tabular models (random forest, gradient boosting) share: the decision
// surface's feature pair (kept in the URL), the selection in a sentence, one Train's progress and
// ending, the metrics against the baseline and in words, where the run ran, and the server's
// ONNX download.
import { getOnnx } from "../api.js";
import { download } from "../forest_model.js";
import { save, initial } from "../state.js";
import { el, fmtNumber, leftText, setProgress, table } from "../ui.js";
import { rowsText } from "./data.js";

const NOT_METRICS = new Set(["n_train", "n_test", "n_features", "predict_all_rows", "n_iter"]);

// The decision surface's two features: the person's, else (empty) the job's two most important.
// `key`: its URL key ("rf.surface"); onChange(): a feature was picked.
export function surfacePicker(idPrefix, key, onChange) {
  const x = el("select", { id: `${idPrefix}-surface-x`, "aria-label": "Decision surface: horizontal feature" });
  const y = el("select", { id: `${idPrefix}-surface-y`, "aria-label": "Decision surface: vertical feature" });
  const row = el("div", { class: "row", id: `${idPrefix}-surface` }, el("span", { class: "muted" }, "Decision surface over"),
    x, el("span", { class: "muted" }, "and"), y);
  // [x, y] when the person chose two different features, else null (the job picks).
  const pair = () => (x.value && y.value && x.value !== y.value ? [x.value, y.value] : null);
  const saveIt = () => save({ [key]: pair()?.map(encodeURIComponent).join(",") ?? null });
  for (const s of [x, y]) s.addEventListener("change", () => { saveIt(); onChange?.(); });
  // The features of the selection as the choices; the URL's pair once, when they fit.
  let asked = initial(key)?.split(",").map(decodeURIComponent) || null;
  function choices(features) {
    const keep = asked || [x.value, y.value];
    for (const [select, label] of [[x, "the most important"], [y, "the next most important"]]) {
      select.replaceChildren(el("option", { value: "" }, label), ...features.map((f) => el("option", { value: f }, f)));
    }
    if (keep.length === 2 && keep.every((f) => features.includes(f)) && keep[0] !== keep[1]) [x.value, y.value] = keep;
    asked = null;
    row.hidden = features.length < 2;
    if (!pair()) save({ [key]: null });   // a pair this data set lacks leaves the URL
  }
  return { row, x, y, pair, choices, save: saveIt };
}

// The Data tab's selection in a sentence.
export function selectionText(s) {
  return `${s.name}: predict ${s.target} (${s.task}) from ${s.features.length} features, ` +
    `${Math.round(s.split.test_size * 100)}% held out (seed ${s.split.seed}).` +
    (s.rowsUsed?.no_target ? ` ${rowsText(s.rowsUsed, s.target)}` : "");
}

// Whether a run's config trained on the selection `s`.
export const sameData = (c, s) => c.dataset === s.dataset && c.target === s.target && c.task === s.task
  && c.features.join("\u0000") === s.features.join("\u0000");

// The line over results shown (`shown`: {id, config, name}, the run's and its data set's name)
// while the selection `s` is another data set, target or set of features; null while it is theirs.
export function dataChanged(shown, s) {
  if (!s || sameData(shown.config, s)) return null;
  return `The data or target changed: these are the results of run ${shown.id.slice(0, 8)} (${shown.config.target} from ` +
    `${shown.config.features.length} features of ${shown.name}). Train to see this selection's.`;
}

// One Train: the job run in the tab and stored, its progress on `bar` and in `status`, its live
// messages to onLive. Resolves with {run}, or {error} when it was stopped or failed, `status`
// saying so (`stopped(error)`: where a stopped job was, in words, or null). keep(result): more
// of the result to store with the run (its extra).
export async function trainJob(playground, job, { bar, status, onLive, what, stopped, keep }) {
  status.className = "status"; status.textContent = "Training…";
  setProgress(bar, 0);
  try {
    const run = await playground.run(job, { keep, onProgress: (p) => {
      if (p.live) { onLive(p.live); return; }
      const text = p.stage + leftText(p.eta_s);
      setProgress(bar, p.fraction, text);
      status.textContent = text;
    } });
    setProgress(bar, 1);
    status.textContent = `Trained and stored as run ${run.id.slice(0, 8)}.`;
    playground.announce?.(`${what} trained: ${headline(run.metrics)}.`);
    return { run };
  } catch (error) {
    status.className = error.stopped ? "status" : "status error";
    status.textContent = (error.stopped && stopped(error)) || (error.stopped ? "Stopped: nothing was posted." : `Training failed: ${error.message}`);
    return { error };
  }
}

// A line over the shown results when they are no longer what the form would train (a new model
// training, one stopped or failed, the data changed): `text`, or null to take it away.
export function markStale(resultCard, boxes, id, text) {
  resultCard.querySelector(`#${id}`)?.remove();
  for (const box of [resultCard, ...boxes]) box.classList.toggle("stale", Boolean(text));
  if (text) resultCard.querySelector("h2").after(el("p", { class: "surface-note", id, role: "note" }, text));
}

// The metrics beside the baseline's, a table (the baseline's column muted).
export function metricsTable(m, base, { id, model }) {
  const rows = Object.entries(m).filter(([k, v]) => typeof v === "number" && !NOT_METRICS.has(k))
    .map(([k, v]) => [k, fmtNumber(v, 5), base && typeof base[k] === "number" ? fmtNumber(base[k], 5) : "–"]);
  const t = table(["Metric", model, "Baseline"], rows, { id });
  t.querySelectorAll("tbody tr").forEach((tr) => tr.lastChild.classList.add("muted"));
  return t;
}

// The headline metric, short: "accuracy 0.9667".
export function headline(m) {
  const k = ["accuracy", "r2", "mse"].find((x) => typeof m[x] === "number");
  return k ? `${k} ${fmtNumber(m[k], 4)}` : "done";
}

// Whether the model (`noun`: "The forest") beat the baseline, in words, on the headline metric.
export function beats(m, base, noun) {
  if (typeof m.accuracy === "number" && typeof base.accuracy === "number") {
    const d = m.accuracy - base.accuracy;
    return d > 0 ? `${noun} is ${fmtNumber(d * 100, 3)} points of accuracy better.`
      : `${noun} is no better than always guessing that class.`;
  }
  if (typeof m.mse === "number" && typeof base.mse === "number") {
    return m.mse < base.mse ? `${noun}'s error (mse) is ${fmtNumber((1 - m.mse / base.mse) * 100, 3)}% lower.`
      : `${noun} is no better than predicting the mean.`;
  }
  return "";
}

// Where a run ran, in words.
export function whereText(run) {
  const a = run.adapter || {};
  return run.backend === "webgpu" ? `WebGPU on ${a.vendor || "GPU"} ${a.architecture || ""}${a.is_fallback_adapter ? " (software)" : ""}`
    : "the CPU (reference backend)";
}

// "Download model (ONNX)": the server writes it from the stored run (it may fit the model again
// first); [button, its status line].
export function onnxButton(run, idPrefix, name) {
  const status = el("div", { class: "status", id: `${idPrefix}-onnx-status`, role: "status", "aria-live": "polite" });
  const button = el("button", { class: "secondary", id: `${idPrefix}-download-onnx`, onclick: async () => {
    button.disabled = true;
    status.className = "status"; status.textContent = "The server is writing the ONNX file…";
    try {
      download([await getOnnx(run.id)], "application/octet-stream", `${name}.onnx`);
      status.textContent = `Downloaded ${name}.onnx.`;
    } catch (e) {
      status.className = "status error"; status.textContent = `No ONNX file: ${e.message}`;
    } finally { button.disabled = false; }
  } }, "Download model (ONNX)");
  return [button, status];
}
