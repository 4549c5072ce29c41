// Small DOM helpers. User-supplied strings (column names, file names, sampled text) only ever
// become text nodes, never HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export const $ = (sel, root = document) => root.querySelector(sel);

export function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "–";
  if (s < 1e-3) return `${(s * 1e6).toFixed(0)} µs`;
  if (s < 1) return `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)} ms`;
  return `${s.toFixed(2)} s`;
}

// A run's timings hold seconds, and beside them counts (the forest's "waits": how many times the
// host waited on the GPU) and rates ("tokens_per_s"): each shown in its own unit.
const COUNTS = new Set(["waits", "pipelines_started"]);
export function fmtTiming(key, v) {
  if (COUNTS.has(key)) return fmtNumber(v, 6);
  if (key.endsWith("_per_s")) return `${fmtNumber(v, 4)} a second`;
  return fmtSeconds(v);
}

// A time ahead, as a person says it: "under a second", "about 40 s", "about 3 min", "about 1.5 h".
export function fmtDuration(s) {
  if (s < 1) return "under a second";
  if (s < 90) return `about ${Math.round(s)} s`;
  if (s < 5400) return `about ${Math.round(s / 60)} min`;
  return `about ${(s / 3600).toFixed(1)} h`;
}

// A job's time left (its progress's eta_s) after its stage, " · about 46 s left", or "": whole
// seconds, as the estimate before Train says them (a guess to two decimals read as a measurement).
export function leftText(eta) {
  return eta === undefined || eta === null ? "" : ` · ${fmtDuration(eta)} left`;
}

export function fmtNumber(x, digits = 4) {
  if (x === null || x === undefined) return "–";
  if (typeof x !== "number") return String(x);
  if (x !== 0 && (Math.abs(x) < 1e-3 || Math.abs(x) >= 1e6)) return x.toExponential(2);
  return Number(x.toPrecision(digits)).toString();
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${Number(n.toPrecision(3))} ${units[i]}`;
}

export function table(headers, rows, attrs = {}) {
  return el("table", attrs,
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
}

// A progress bar people and screen readers can read: role=progressbar with aria-valuenow.
export function progressBar(label, attrs = {}) {
  return el("div", { class: "bar wide", role: "progressbar", "aria-label": label, "aria-valuemin": "0",
                     "aria-valuemax": "100", "aria-valuenow": "0", ...attrs }, el("div", { class: "fill" }));
}

export function setProgress(bar, fraction, text) {
  const pct = Math.max(0, Math.min(100, Math.round((fraction ?? 0) * 100)));
  bar.firstChild.style.width = `${pct}%`;
  bar.setAttribute("aria-valuenow", String(pct));
  if (text) bar.setAttribute("aria-valuetext", text);
  else bar.removeAttribute("aria-valuetext");
}

// A keyboard-operable file picker: a real button that opens the (hidden) file input.
export function filePicker(input, text, attrs = {}) {
  input.hidden = true;
  input.tabIndex = -1;
  const button = el("button", { type: "button", class: "secondary", ...attrs, onclick: () => input.click() }, text);
  return el("span", { class: "picker-wrap" }, button, input);
}

// "How to use it elsewhere": a <details> with a code box; `text` may come later (a Promise of the
// server's snippet, GET /api/runs/{id}/snippet), its failure shown in its place.
export function snippetBox(id, summary, text) {
  const pre = el("pre", { class: "snippet" }, typeof text === "string" ? text : "Loading…");
  if (typeof text !== "string") text.then((t) => { pre.textContent = t; }, (e) => { pre.textContent = e.message; });
  return el("details", { class: "snippet-box", id }, el("summary", {}, summary), pre);
}

// A box that scrolls must take the focus, or a keyboard user cannot scroll it (WCAG 2.1.1):
// every scrolling box under `root`, now and later, gets tabindex=0.
const SCROLLERS = ".scroll, pre.preview, pre.sample, pre.snippet, .features";
export function scrollersTakeFocus(root) {
  const take = (node) => {
    if (node.matches(SCROLLERS) && !node.hasAttribute("tabindex")) node.tabIndex = 0;
    for (const n of node.querySelectorAll(SCROLLERS)) if (!n.hasAttribute("tabindex")) n.tabIndex = 0;
  };
  take(root);
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1) take(n);
  }).observe(root, { childList: true, subtree: true });
}
