// The job kinds as the server describes them (GET /api/kinds: py_core/jobs/kinds.py), fetched
// once as the page starts (a top-level await: every module that imports this one waits for it).
// The run and comparison tables' main time and the forms' labels, help and ranges are theirs.
let described = [];
try {
  const res = await fetch("/api/kinds");
  if (res.ok) described = (await res.json()).kinds;
} catch (e) { /* no answer: main times fall back to the total, forms to the parameters' names */ }

export const KINDS = Object.fromEntries(described.map((k) => [k.name, k]));

// A kind's main timing {key, label, words}, or null for a kind without one (a suite) or unknown.
export const mainTiming = (kind) => KINDS[kind]?.main_timing || null;

// A parameter of a kind as its table declares it: {name, default, label, help, types}.
export function param(kind, name) {
  return KINDS[kind]?.params.find((p) => p.name === name) || { name, label: name, help: "", types: [] };
}

// A run's parameters as given, the table's defaults for those left out.
export function withDefaults(kind, given = {}) {
  return { ...Object.fromEntries((KINDS[kind]?.params || []).map((p) => [p.name, p.default])), ...given };
}

// The kinds the server reruns (with runners): the run page shows their comparisons.
export const compared = (kind) => Boolean(KINDS[kind]?.runners.length);
