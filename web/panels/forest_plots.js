// A tabular model's plots (the random forest's, gradient boosting's), in its tab (live as it
// grows, then final) and on a run's own page: a boosted model's loss by iteration, the decision
// surface with its slice in words and its note, predicted against actual, residuals, the
// confusion matrix and the importances.
import { bars, confusion, scatterChart, surface } from "../charts.js";
import { el, fmtNumber } from "../ui.js";
import { lossChart, stoppingText } from "./loss_curve.js";

// The slice a surface shows, in words: "Over bmi and s5; the other 8 features held at their
// training medians: age 0.0054, sex -0.045, … and 2 more."
export function sliceText(s) {
  const over = `Over ${s.x_name} (across) and ${s.y_name} (up)`;
  if (!s.others) return `${over}: the forest's only two features.`;
  const held = (s.held || []).map(([name, v]) => `${name} ${typeof v === "number" ? fmtNumber(v, 4) : v}`);
  const rest = s.others - held.length;
  // A category is held at its most frequent in training (py_core.data.prepare), named as such.
  const category = (s.held || []).some(([, v]) => typeof v !== "number") ? " (a category: its most frequent)" : "";
  return `${over}; ${s.others === 1 ? "the other feature held at its training median" : `the other ${s.others} features held at their training medians`}` +
    `${category}${held.length ? `: ${held.join(", ")}${rest > 0 ? `, and ${rest} more` : ""}.` : "."}`;
}

// A surface as the page draws it; a run stored before the surface had its legend (class ids with
// no names, a regression binned into "levels") gets the confusion matrix's names, or each level's
// middle value on the scale.
function surfaceOf(s, confusion) {
  if (s.classes || s.scale) return s;
  if (!s.levels) return { ...s, classes: confusion?.classes || [...new Set(s.grid.values)].sort().map(String) };
  const mid = (k) => (s.levels[k] + s.levels[k + 1]) / 2;
  return { ...s, scale: [s.levels[0], s.levels.at(-1)], grid: { ...s.grid, values: s.grid.values.map(mid) },
           points: s.points.map(([x, y, k]) => [x, y, mid(k)]) };
}

// The forest's plots in `plots` (a .cards box); `charts` holds their handles (destroyed on redraw),
// each with its `kind` (the plot's key). `live`: the plots of the trees so far (no residuals).
// `params`: the run's (the loss curve's early stopping says them).
export function drawPlots(p, plots, charts = [], { live = false, params = {} } = {}) {
  for (const c of charts.splice(0)) c.destroy();
  plots.replaceChildren();
  const add = (kind, title, draw) => {
    const box = el("div");
    plots.append(el("div", { class: "card", dataset: { plot: kind } }, el("h2", {}, title), box));
    charts.push(Object.assign(draw(box), { kind }));
  };
  if (p.loss_curve) {
    add("loss_curve", "Loss by iteration", (c) => lossChart(c, p.loss_curve, { final: !live }));
    plots.querySelector("[data-plot=loss_curve] h2").after(el("p", { class: "muted loss-stopping", role: "status" },
      live ? "" : stoppingText(p.loss_curve, params)));
  }
  const s = p.surface && surfaceOf(p.surface, p.confusion);
  if (s) {
    add("surface", "Decision surface", (c) => surface(c, s.grid, s.points, { xName: s.x_name, yName: s.y_name,
      classes: s.classes, scale: s.scale }));
    const card = plots.querySelector("[data-plot=surface]");
    card.querySelector("h2").after(el("p", { class: "muted surface-slice" }, sliceText(s)),
      el("p", { class: "surface-note", role: "note", hidden: !s.note }, s.note || ""));
  }
  if (p.pred_vs_actual) add("pred_vs_actual", "Predicted against actual", (c) => scatterChart(c, p.pred_vs_actual, { title: "Predicted against actual (test rows)", xName: "actual", yName: "predicted", diagonal: true }));
  if (p.confusion) add("confusion", "Confusion matrix (test set)", (c) => confusion(c, p.confusion.matrix, p.confusion.classes));
  const residuals = live ? null : p.residuals || p.pred_vs_actual?.map(([t, y]) => [y, t - y]);
  if (residuals) add("residuals", "Residuals", (c) => scatterChart(c, residuals, { title: "Residuals (test rows)", xName: "predicted", yName: "actual − predicted", zero: true }));
  if (p.importances) add("importances", "Feature importances", (c) => bars(c, p.importances.map((f) => [f.name ?? f[0], f.importance ?? f[1]]), { title: "Feature importances" }));
  return charts;
}
