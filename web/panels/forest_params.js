import { param } from "../kinds.js";
import { adapterId } from "../state.js";

// The forest's parameters as the form shows them: the fields (scikit-learn's names), the presets,
// each field's problem in words as it is typed, and the measured forests the estimate learns from.

export const PRESETS = {
  quick: { label: "Quick look (50 trees, depth 8)", params: { n_estimators: 50, max_depth: 8 } },
  sklearn: { label: "scikit-learn defaults (100 trees, full depth)", params: { n_estimators: 100, max_depth: null } },
  large: { label: "Large (200 trees, depth 16)", params: { n_estimators: 200, max_depth: 16 } },
};

// The form's fields: labels, help and ranges are the forest's table's (GET /api/kinds:
// py_core/forest/params.py); the form adds what its empty box means and where it starts (a quick
// depth and a fixed seed, not the estimator's unlimited depth and fresh seed).
const P = (name) => param("random_forest", name);
const range = (name, type) => P(name).types.find((t) => t.type === type) || {};
const FORM = {
  n_estimators: {},
  max_depth: { hint: "empty: none", initial: 12 },
  min_samples_split: {},
  min_samples_leaf: {},
  max_features: { hint: "sqrt, log2, fraction, count; empty: task default", type: "text", initial: "" },
  n_bins: { hint: `≤ ${range("n_bins", "integer").max}; a feature of ≤ ${P("exact_bins").default?.toLocaleString("en-US")} values gets one a value` },
  random_state: { initial: 0 },
};
export const FIELDS = Object.entries(FORM).map(([name, f]) => [name, f.hint ? `${P(name).label} (${f.hint})` : P(name).label,
  f.type || "number", "initial" in f ? f.initial : P(name).default]);

// Measured forests kept per adapter for the estimate (py_core.jobs.estimate.SAMPLES), in this
// browser's localStorage under ratesKey: the tab's own rates, across reloads.
export const SAMPLES = 8;
export const ratesKey = (info) => `playground.forest-rates:${adapterId(info)}`;
export function measured(info) {
  try {
    const got = JSON.parse(localStorage.getItem(ratesKey(info)) || "[]");
    return Array.isArray(got) ? got.filter((s) => s && s.seconds > 0 && s.levels >= 0 && s.cells >= 0) : [];
  } catch (e) { return []; }
}
export const adapterClass = (playground) => (playground.info?.backend !== "webgpu" ? "cpu" : playground.isSoftware() ? "software" : "gpu");

// What is wrong with a parameter's text, in the words of its label, or null (empty: the
// default). The rules are the forest's (py_core.forest's _spec checks the same when it fits).
// bad: the number field holds what is not a number; features: how many the forest is given.
export function fieldProblem(name, raw, { bad = false, features = null } = {}) {
  const label = P(name).label;
  if (bad) return `${label}: type a number.`;
  if (raw === "") return null;
  const v = Number(raw), whole = /^\d+$/.test(raw), fraction = Number.isFinite(v) && !whole && v > 0;
  const { min: lo, max: hi } = range(name, "integer");
  const share = range(name, "fraction");
  const shareText = `a fraction of the rows (above 0, ${share.max_open ? "below" : "at most"} ${share.max})`;
  const inShare = fraction && (share.max_open ? v < share.max : v <= share.max);
  switch (name) {
    case "n_estimators": return whole && v >= lo ? null : `${label}: a whole number, ${lo} or more.`;
    case "max_depth": return whole && v >= lo ? null : `${label}: a whole number, ${lo} or more, or empty for no limit.`;
    case "min_samples_split":
    case "min_samples_leaf": return (whole && v >= lo) || inShare ? null : `${label}: a whole number, ${lo} or more, or ${shareText}.`;
    case "n_bins": return whole && v >= lo && v <= hi ? null : `${label}: a whole number from ${lo} to ${hi}.`;
    case "random_state": return /^-?\d+$/.test(raw) ? null : `${label}: a whole number.`;
    case "max_features":
      if (["sqrt", "log2"].includes(raw) || (fraction && v <= 1 && /^(0?\.\d+|1(\.0*)?)$/.test(raw))) return null;
      if (whole && v >= 1 && (features === null || v <= features)) return null;
      return whole && v >= 1 ? `${label}: at most ${features}, the features chosen in the Data tab.`
        : `${label}: sqrt, log2, a fraction (above 0, at most 1) or a count of features${features ? ` from 1 to ${features}` : ""}.`;
    default: return null;
  }
}
