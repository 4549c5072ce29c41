import { param } from "../kinds.js";
import { adapterId } from "../state.js";

// The forest's parameters as the form shows them: the fields (scikit-learn's names), where they
// start and the form's words beside the table's, the presets, the sized-down forest of a slow
// adapter, and the measured forests the estimate learns from.

// What every preset sets as scikit-learn does, so that a preset is the whole of the numbers (the
// seed aside; the criterion and bootstrap are beside the presets): min samples, max features or
// bins typed before stayed under "scikit-learn defaults".
const DEFAULTS = { min_samples_split: 2, min_samples_leaf: 1, max_features: "", n_bins: param("random_forest", "n_bins").default };
export const PRESETS = {
  quick: { label: "Quick look (50 trees, depth 8)", params: { ...DEFAULTS, n_estimators: 50, max_depth: 8 } },
  sklearn: { label: "scikit-learn defaults (100 trees, full depth)", params: { ...DEFAULTS, n_estimators: 100, max_depth: null } },
  large: { label: "Large (200 trees, depth 16)", params: { ...DEFAULTS, n_estimators: 200, max_depth: 16 } },
};

// The form (web/panels/params_form.js): labels, help, ranges and checks are the forest's table's
// (GET /api/kinds: py_core/forest/params.py); here is what the form adds: which fields, in the
// order a person tunes them, where they start (a quick depth, a fixed seed and gini, not the
// estimator's unlimited depth, fresh seed and the task's criterion), and the form's words.
export const NAMES = ["n_estimators", "max_depth", "min_samples_split", "min_samples_leaf", "max_features", "n_bins",
  "random_state", "criterion", "bootstrap"];
export const START = { max_depth: 12, max_features: "", random_state: 0, criterion: "gini" };
const P = (name) => param("random_forest", name);
export const SHOWN = {
  max_depth: { hint: "empty: none", empty: "no limit" },
  min_samples_split: { of: "the rows" },
  min_samples_leaf: { of: "the rows" },
  // The count's bound is the features chosen in the Data tab (the panel keeps it); a fraction of
  // 1, every feature, is sent as null (scikit-learn's None), since JSON writes 1.0 as 1: one.
  max_features: { hint: "sqrt, log2, fraction, count; empty: task default", most: "the features chosen in the Data tab", one: null },
  n_bins: { hint: `≤ ${P("n_bins").types.find((t) => t.type === "integer")?.max}; a feature of ≤ ${
    P("exact_bins").default?.toLocaleString("en-US")} values gets one a value` },
  // Sent for classes only: a regression's is squared_error (the panel disables it there).
  criterion: { hint: "classification", options: ["gini", "entropy"] },
};

// Sized for a software adapter or the CPU path: a forest that trains in seconds there.
export const SMALL = { n_estimators: 20, max_depth: 8 };

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
