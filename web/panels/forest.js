// The Random forest panel: parameters (presets, scikit-learn names), Train and Stop, progress by
// level and tree, then metrics, plots, times with the adapter named, the model to download, and
// predictions on a new CSV. Trains on the Data tab's selection; every run is posted to the server.
import { bars, confusion, scatter, surface } from "../charts.js";
import { showComparisons } from "./compare.js";
import { download as download_, forestJSONParts } from "../forest_model.js";
import { el, fmtNumber, fmtSeconds, table } from "../ui.js";

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
  ["n_bins", "Bins per feature (≤ 256)", "number", 256],
  ["random_state", "Seed", "number", 0],
];

export function mountForestPanel(root, playground) {
  const inputs = {};
  const preset = el("select", { id: "forest-preset" }, el("option", { value: "" }, "Custom"),
    Object.entries(PRESETS).map(([k, p]) => el("option", { value: k }, p.label)));
  const criterion = el("select", { id: "forest-criterion" }, ["gini", "entropy"].map((c) => el("option", { value: c }, c)));
  const bootstrap = el("input", { type: "checkbox", id: "forest-bootstrap", checked: true });
  const form = el("div", { class: "form" }, FIELDS.map(([name, labelText, type, value]) => {
    inputs[name] = el("input", { type, id: `forest-${name}`, value: value ?? "", step: type === "number" ? "1" : null });
    return el("label", { class: "field" }, labelText, inputs[name]);
  }), el("label", { class: "field" }, "Criterion (classification)", criterion),
  el("label", { class: "field" }, el("span", {}, bootstrap, " bootstrap samples")));
  const train = el("button", { class: "primary", id: "forest-train" }, "Train");
  const stop = el("button", { class: "secondary", id: "forest-stop", disabled: true }, "Stop");
  const selection = el("p", { class: "muted", id: "forest-selection" }, "Pick a data set in the Data tab.");
  const bar = el("div", { class: "bar wide" }, el("div", { class: "fill" }));
  const status = el("div", { class: "status", id: "forest-status" });
  const paramsCard = el("div", { class: "card" }, el("h2", {}, "Random forest"), selection,
    el("div", { class: "row" }, el("label", {}, "Preset ", preset)), form,
    el("div", { class: "row" }, train, stop), bar, status);
  const resultCard = el("div", { class: "card", id: "forest-results" }, el("h2", {}, "Results"),
    el("p", { class: "muted" }, "Train a forest to see how good it is."));
  const plots = el("div", { class: "cards", id: "forest-plots" });
  const compare = el("div", { id: "forest-compare" });
  root.append(el("div", { class: "cards" }, paramsCard, resultCard), compare, plots);

  let lastModel = null;

  preset.addEventListener("change", () => {
    const p = PRESETS[preset.value]?.params;
    if (!p) return;
    for (const [k, v] of Object.entries(p)) inputs[k].value = v ?? "";
  });
  for (const i of Object.values(inputs)) i.addEventListener("input", () => { preset.value = ""; });

  playground.events.addEventListener("selection", (ev) => {
    const s = ev.detail;
    selection.textContent = `${s.name}: predict ${s.target} (${s.task}) from ${s.features.length} features, ` +
      `${Math.round(s.split.test_size * 100)}% held out (seed ${s.split.seed}).`;
    criterion.disabled = s.task !== "classification";
  });

  function params() {
    const out = {};
    for (const [name, , type] of FIELDS) {
      const raw = inputs[name].value.trim();
      if (raw === "") { if (name === "max_depth") out[name] = null; continue; }
      if (name === "max_features") out[name] = ["sqrt", "log2"].includes(raw) ? raw : (raw.includes(".") ? Number(raw) : Number.parseInt(raw, 10));
      else out[name] = type === "number" ? Number(raw) : raw;
    }
    out.bootstrap = bootstrap.checked;
    if (playground.selection?.task === "classification") out.criterion = criterion.value;
    return out;
  }

  train.addEventListener("click", async () => {
    const s = playground.selection;
    if (!s) { status.textContent = "Pick a data set in the Data tab first."; return; }
    const job = { kind: "random_forest", dataset: s.dataset, target: s.target, task: s.task,
                  features: s.features, params: params(), split: s.split };
    train.disabled = true; stop.disabled = false;
    status.className = "status"; status.textContent = "Training…";
    bar.firstChild.style.width = "0%";
    try {
      const run = await playground.run(job, { onProgress: (p) => {
        bar.firstChild.style.width = `${Math.round((p.fraction ?? 0) * 100)}%`;
        status.textContent = p.stage + (p.trees ? ` · trees ${p.trees[0]}/${p.trees[1]}` : "");
      } });
      bar.firstChild.style.width = "100%";
      status.textContent = `Trained and stored as run ${run.id.slice(0, 8)}.`;
      lastModel = run.result.model || null;
      showResults(run);
      showComparisons(compare, run);
    } catch (e) {
      status.className = e.stopped ? "status" : "status error";
      status.textContent = e.stopped ? "Stopped: nothing was posted." : `Training failed: ${e.message}`;
    } finally {
      train.disabled = false; stop.disabled = true;
    }
  });
  stop.addEventListener("click", () => { playground.stop(); status.textContent = "Stopping…"; });

  function showResults(run) {
    const m = run.metrics, t = run.timings, a = run.adapter || {};
    const metricRows = Object.entries(m).filter(([, v]) => typeof v === "number")
      .map(([k, v]) => [k, fmtNumber(v, 5)]);
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
    const predictInput = el("input", { type: "file", accept: ".csv,text/csv", id: "forest-predict-file" });
    const predictStatus = el("div", { class: "status" });
    predictInput.addEventListener("change", async () => {
      const file = predictInput.files[0];
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
      table(["Metric", "Test set"], metricRows, { id: "forest-metrics" }),
      el("h3", {}, "Time"),
      el("dl", { class: "kv" }, el("dt", {}, "Fit"), el("dd", { id: "forest-fit-time" }, fmtSeconds(t.fit)),
        el("dt", {}, "Predict"), el("dd", {}, fmtSeconds(t.predict)),
        el("dt", {}, "On"), el("dd", {}, where)),
      el("h3", {}, "Keep it"),
      el("div", { class: "row" }, lastModel ? download : el("span", { class: "muted" }, "no model exported"),
        el("label", { class: "secondary link" }, "Predict on a new CSV…", predictInput)), predictStatus);
    drawPlots(run.result.plots || {});
  }

  function drawPlots(p) {
    plots.replaceChildren();
    const add = (title, draw) => {
      const canvas = el("canvas", { class: "chart" });
      plots.append(el("div", { class: "card" }, el("h2", {}, title), canvas));
      requestAnimationFrame(() => draw(canvas));
    };
    if (p.pred_vs_actual) add("Predicted against actual", (c) => scatter(c, p.pred_vs_actual, { xName: "actual", yName: "predicted", diagonal: true }));
    if (p.residuals) add("Residuals", (c) => scatter(c, p.residuals, { xName: "predicted", yName: "actual − predicted", zero: true }));
    if (p.importances) add("Feature importances", (c) => bars(c, p.importances.map((f) => [f.name ?? f[0], f.importance ?? f[1]])));
    if (p.confusion) add("Confusion matrix (test set)", (c) => confusion(c, p.confusion.matrix, p.confusion.classes));
    if (p.surface) add("Decision surface", (c) => surface(c, p.surface.grid, p.surface.points, { xName: p.surface.x_name, yName: p.surface.y_name }));
  }
}
