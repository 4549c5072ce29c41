// The job kinds as the server describes them (GET /api/kinds: py_core/jobs/kinds.py), fetched
// once as the page starts (a top-level await: every module that imports this one waits for it).
// The run and comparison tables' main time and the forms' labels, help and ranges are theirs.
// A failed answer is asked again twice (a server busy starting, a dropped connection); then
// `kindsProblem` says what went wrong and the page says so (app.js): the kinds' tabs need it.
let described = [];
export let kindsProblem = null;
for (const wait of [0, 500, 2000]) {
  if (wait) await new Promise((resolve) => setTimeout(resolve, wait));
  try {
    const res = await fetch("/api/kinds");
    if (res.ok) {
      described = (await res.json()).kinds;
      kindsProblem = null;
      break;
    }
    kindsProblem = `the server answered ${res.status} ${res.statusText}`.trim();
    if (res.status < 500 && res.status !== 429) break;  // asking again gets the same answer
  } catch (e) {
    kindsProblem = `no answer (${e.message})`;
  }
}

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
