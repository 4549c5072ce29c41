// The forest's parameters as the form shows them: the fields (scikit-learn's names), the presets,
// each field's problem in words as it is typed, and the measured forests the estimate learns from.

export const PRESETS = {
  quick: { label: "Quick look (50 trees, depth 8)", params: { n_estimators: 50, max_depth: 8 } },
  sklearn: { label: "scikit-learn defaults (100 trees, full depth)", params: { n_estimators: 100, max_depth: null } },
  large: { label: "Large (200 trees, depth 16)", params: { n_estimators: 200, max_depth: 16 } },
};

export const FIELDS = [
  ["n_estimators", "Trees", "number", 100],
  ["max_depth", "Max depth (empty: none)", "number", 12],
  ["min_samples_split", "Min samples to split", "number", 2],
  ["min_samples_leaf", "Min samples per leaf", "number", 1],
  ["max_features", "Max features (sqrt, log2, fraction, count; empty: task default)", "text", ""],
  ["n_bins", "Bins per feature (≤ 256; a feature of ≤ 1,024 values gets one a value)", "number", 256],
  ["random_state", "Seed", "number", 0],
];

// Measured forests kept per adapter for the estimate (py_core.jobs.estimate.SAMPLES), in this
// browser's localStorage under ratesKey: the tab's own rates, across reloads.
export const SAMPLES = 8;
export const ratesKey = (info) => `playground.forest-rates:${info.backend}|${info.adapter?.vendor || ""}|${info.adapter?.architecture || ""}|${info.adapter?.description || ""}`;
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
  if (bad) return `${LABELS[name]}: type a number.`;
  if (raw === "") return null;
  const v = Number(raw), whole = /^\d+$/.test(raw), fraction = Number.isFinite(v) && !whole && v > 0;
  switch (name) {
    case "n_estimators": return whole && v >= 1 ? null : "Trees: a whole number, 1 or more.";
    case "max_depth": return whole && v >= 1 ? null : "Max depth: a whole number, 1 or more, or empty for no limit.";
    case "min_samples_split": return (whole && v >= 2) || (fraction && v <= 1) ? null
      : "Min samples to split: a whole number, 2 or more, or a fraction of the rows (above 0, at most 1).";
    case "min_samples_leaf": return (whole && v >= 1) || (fraction && v < 1) ? null
      : "Min samples per leaf: a whole number, 1 or more, or a fraction of the rows (above 0, below 1).";
    case "n_bins": return whole && v >= 2 && v <= 256 ? null : "Bins per feature: a whole number from 2 to 256.";
    case "random_state": return /^-?\d+$/.test(raw) ? null : "Seed: a whole number.";
    case "max_features":
      if (["sqrt", "log2"].includes(raw) || (fraction && v <= 1 && /^(0?\.\d+|1(\.0*)?)$/.test(raw))) return null;
      if (whole && v >= 1 && (features === null || v <= features)) return null;
      return whole && v >= 1 ? `Max features: at most ${features}, the features chosen in the Data tab.`
        : `Max features: sqrt, log2, a fraction (above 0, at most 1) or a count of features${features ? ` from 1 to ${features}` : ""}.`;
    default: return null;
  }
}
const LABELS = { n_estimators: "Trees", max_depth: "Max depth", min_samples_split: "Min samples to split",
                 min_samples_leaf: "Min samples per leaf", max_features: "Max features", n_bins: "Bins per feature",
                 random_state: "Seed" };
