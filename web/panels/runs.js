// The Runs panel: every run stored on the server, filtered by model, data set and device, drawn
// run after run (the main time, and one chart per metric: each on its own axis) so a person sees
// how a change moved the numbers. Data sets by name, parameters shown; each run links to its own
// page (/runs/<id>), and "Server runs" shows its comparisons here.
import { getRun, getRunFacets, getRuns, listDatasets, listTexts } from "../api.js";
import { mainTiming } from "../kinds.js";
import { lineChart } from "../charts.js";
import { initial, save } from "../state.js";
import { el, fmtNumber, fmtSeconds, fmtTiming, table } from "../ui.js";
import { asText, showComparisons } from "./compare.js";

const PAGE = 100;   // summaries a page (the server lists summaries, never whole runs)
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

const mainKey = (kind) => mainTiming(kind)?.key;   // undefined: no main time ("–")
const METRIC = ["mse", "accuracy", "val_loss"];
const METRIC_NAMES = { mse: "mean squared error (lower is better)", accuracy: "accuracy (higher is better)",
                       val_loss: "validation loss (lower is better)" };

const names = new Map();   // data set / text id -> its name
const dataId = (r) => (typeof r.config?.dataset === "string" && r.config.dataset)
  || (typeof r.config?.text === "string" && r.config.text) || "–";
export function dataName(id) {
  if (typeof id !== "string") return asText(id);
  if (id.startsWith("synthetic:")) return `${id.slice(10).split("?")[0]} (synthetic)`;
  return names.get(id) || id;
}
const dataOf = (r) => dataName(dataId(r));
const deviceOf = (r) => (typeof r.device === "string" ? r.device
  : `${asText(r.backend)}${r.adapter?.vendor ? ` · ${asText(r.adapter.vendor)}` : ""}${r.adapter?.is_fallback_adapter === true ? " (software)" : ""}`);

// A listing's summary (server/runs.py) in the shape of a run, for the table and the charts.
function fromSummary(s) {
  const kind = asText(s.kind);
  const metric = typeof s.metric === "string" && num(s.value) !== null ? { [s.metric]: s.value } : {};
  const params = s.params && typeof s.params === "object" && !Array.isArray(s.params) ? s.params : {};
  return { id: asText(s.id), kind, created_at: s.created_at, device: asText(s.device), note: s.note,
           config: { dataset: typeof s.dataset === "string" ? s.dataset : undefined,
                     target: typeof s.target === "string" ? s.target : undefined, params },
           metrics: metric, timings: { [mainKey(kind) || "total"]: num(s.main_time), total: num(s.total_time) } };
}
const metricOf = (r) => METRIC.find((m) => typeof r.metrics?.[m] === "number");

// The parameters a person set, short: "n_estimators 5 · max_depth 8".
export function paramsText(run, most = 4) {
  const p = run.config?.params || {};
  const items = Object.entries(p && typeof p === "object" ? p : {}).filter(([k, v]) => v !== null && v !== undefined && typeof v !== "object" && k !== "sample_chars");
  const text = items.slice(0, most).map(([k, v]) => `${k} ${asText(v)}`).join(" · ");
  return items.length > most ? `${text} · …` : text || "–";
}

export async function loadNames() {
  try {
    const [{ datasets }, { texts }] = await Promise.all([listDatasets(), listTexts()]);
    for (const d of datasets) names.set(d.id, d.name);
    for (const t of texts) names.set(t.id, t.name);
  } catch (e) { /* ids then */ }
}

function summary(run) {
  if (typeof run.note === "string") return run.note;
  const m = run.metrics || {};
  if (run.kind === "selftest") return m.all_ok ? `${m.kernels?.length} kernels ok` : "kernels disagree";
  if (run.kind === "suite") return `${m.runs?.length ?? 0} runs, ${m.errors?.length ?? 0} errors`;
  const key = metricOf(run);
  return key ? `${key} ${fmtNumber(m[key])}` : "";
}

export function mountRunsPanel(root, playground) {
  const filters = { kind: el("select", { id: "runs-kind" }), data: el("select", { id: "runs-data" }),
                    device: el("select", { id: "runs-device" }) };
  const refresh = el("button", { class: "secondary", onclick: () => load() }, "Refresh");
  const list = el("div", { id: "runs-list", class: "scroll" });
  const more = el("button", { class: "secondary", id: "runs-more", type: "button", hidden: true, onclick: () => load(true) }, "Load more");
  const timeChart = el("div", { id: "runs-time-chart" });
  const metricCharts = el("div", { id: "runs-metric-chart" });
  const detail = el("div", { id: "runs-detail" });
  // Two runs picked in the list, side by side.
  const pair = el("div", { id: "runs-pair", class: "card", hidden: true });
  let picked = [];
  root.append(el("div", { class: "card" }, el("h2", {}, "Runs"),
    el("div", { class: "row" }, el("label", {}, "Model ", filters.kind), el("label", {}, "Data ", filters.data),
      el("label", {}, "Device ", filters.device), refresh), list, more),
  el("div", { class: "cards", style: "margin-top:16px" },
    el("div", { class: "card" }, el("h2", {}, "Time, run after run"), timeChart),
    el("div", { class: "card" }, el("h2", {}, "Result, run after run"), metricCharts)), pair, detail);

  let runs = [];
  let charts = [];
  let restored = false;
  let next = null;
  for (const [k, f] of Object.entries(filters)) {
    f.addEventListener("change", () => { save({ [`runs.${k}`]: f.value || null }); load(); });
  }

  function options(select, values, label = (v) => v) {
    const keep = select.value || (!restored ? initial(`runs.${Object.keys(filters).find((k) => filters[k] === select)}`) : "");
    const texts = [...new Set((Array.isArray(values) ? values : []).map(asText))].sort();
    select.replaceChildren(el("option", { value: "" }, "all"), ...texts.map((v) => el("option", { value: v }, label(v))));
    if ([...select.options].some((o) => o.value === keep)) select.value = keep;
  }

  // A page of summaries, filtered by the server; `append` asks for the next page.
  async function load(append = false) {
    try {
      if (!append) {
        await loadNames();
        const facets = await getRunFacets();
        options(filters.kind, facets.kinds);
        options(filters.data, facets.datasets, dataName);
        options(filters.device, facets.devices);
        restored = true;
      }
      const params = { limit: PAGE };
      if (filters.kind.value) params.kind = filters.kind.value;
      if (filters.data.value) params.dataset = filters.data.value;
      if (filters.device.value) params.device = filters.device.value;
      if (append && next) params.cursor = next;
      const page = await getRuns(params);
      const got = page.runs.map(fromSummary);
      runs = append ? runs.concat(got) : got;
      next = page.next;
      more.hidden = !next;
      render();
    } catch (e) {
      list.replaceChildren(el("p", { class: "status error" }, `Could not list runs: ${e.message}`));
    }
  }

  // The comparisons need the whole run: fetched by its id when asked for.
  async function compare(r) {
    try {
      showComparisons(detail, await getRun(r.id));
    } catch (e) {
      detail.replaceChildren(el("p", { class: "status error" }, `Could not load the run: ${e.message}`));
    }
  }

  function render() {
    const shown = runs.filter((r) => (!filters.kind.value || r.kind === filters.kind.value)
      && (!filters.data.value || dataId(r) === filters.data.value)
      && (!filters.device.value || deviceOf(r) === filters.device.value));
    for (const c of charts.splice(0)) c.destroy();
    if (!shown.length) {
      list.replaceChildren(el("p", { class: "muted" }, "No runs yet."));
      timeChart.replaceChildren(); metricCharts.replaceChildren();
      return;
    }
    const when = (r) => { const d = new Date(r.created_at); return Number.isNaN(d.getTime()) ? asText(r.created_at) : d.toLocaleString(); };
    const number = new Map(shown.slice().reverse().map((r, i) => [r.id, i + 1]));   // oldest is run 1
    const head = ["Compare", "#", "When", "Model", "Data", "Target", "Parameters", "Device", "Result", "Main time", "Total", ""];
    const tbl = el("table", {},
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h || el("span", { class: "sr-only" }, "Actions"))))),
      el("tbody", {}, shown.map((r) => el("tr", { dataset: { id: r.id } },
        el("td", {}, el("input", { type: "checkbox", class: "runs-pick", "aria-label": `Compare run ${number.get(r.id)}`,
                                   checked: picked.some((p) => p.id === r.id), onclick: (ev) => ev.stopPropagation(),
                                   onchange: (ev) => pick(r, number.get(r.id), ev.target.checked) })),
        el("td", {}, String(number.get(r.id))),
        el("td", {}, el("a", { href: `/runs/${r.id}`, title: "This run's own page" }, when(r))),
        el("td", {}, r.kind), el("td", {}, dataOf(r)), el("td", {}, r.config?.target ?? "–"), el("td", { title: JSON.stringify(r.config?.params || {}) }, paramsText(r)),
        el("td", {}, deviceOf(r)), el("td", {}, summary(r)),
        el("td", {}, fmtSeconds(r.timings?.[mainKey(r.kind)])), el("td", {}, fmtSeconds(r.timings?.total)),
        el("td", {}, el("button", { class: "secondary small", type: "button",
          onclick: (ev) => { ev.stopPropagation(); compare(r); } }, "Server runs"))))));
    tbl.querySelectorAll("tbody tr").forEach((tr, i) => {
      tr.style.cursor = "pointer";
      tr.addEventListener("click", (ev) => { if (ev.target.closest("a")) return; compare(shown[i]); });
    });
    list.replaceChildren(tbl);
    // Oldest first, one series per (model, data, device); x is the run's number (whole numbers).
    const series = new Map();
    for (const r of shown.slice().reverse()) {
      const key = `${r.kind} · ${dataOf(r)} · ${deviceOf(r)}`;
      if (!series.has(key)) series.set(key, { time: [], metrics: {} });
      const s = series.get(key);
      const t = r.timings?.[mainKey(r.kind)];
      if (typeof t === "number") s.time.push([number.get(r.id), t]);
      const m = metricOf(r);
      if (m) (s.metrics[m] ||= []).push([number.get(r.id), r.metrics[m]]);
    }
    const top = [...series].slice(0, 8);
    const timeSeries = top.filter(([, s]) => s.time.length).map(([name, s]) => ({ name, points: s.time }));
    if (timeSeries.length) {
      charts.push(lineChart(timeChart, timeSeries, { title: "Main time (seconds), run after run", xName: "run", yName: "seconds", integerX: true, points: true }));
    } else timeChart.replaceChildren(el("p", { class: "muted" }, "No timed runs."));
    metricCharts.replaceChildren();
    for (const metric of METRIC) {
      const lines = top.filter(([, s]) => s.metrics[metric]?.length).map(([name, s]) => ({ name, points: s.metrics[metric] }));
      if (!lines.length) continue;
      const box = el("div", { class: "runs-metric", dataset: { metric } });
      metricCharts.append(el("h3", {}, METRIC_NAMES[metric]), box);
      charts.push(lineChart(box, lines, { title: `${metric}, run after run`, xName: "run", yName: metric, integerX: true, points: true }));
    }
    if (!metricCharts.children.length) metricCharts.append(el("p", { class: "muted" }, "No runs with a metric."));
  }
  // Two runs at most: a third pick lets the first go. With two, their parameters, metrics and
  // timings in two columns, the rows that differ marked.
  async function pick(run, n, on) {
    picked = picked.filter((p) => p.id !== run.id);
    if (on) picked.push({ id: run.id, n });
    if (picked.length > 2) picked = picked.slice(-2);
    list.querySelectorAll("input.runs-pick").forEach((box) => { box.checked = picked.some((p) => p.id === box.closest("tr").dataset.id); });
    if (picked.length < 2) {
      pair.hidden = picked.length === 0;
      pair.replaceChildren(el("h2", {}, "Two runs side by side"), el("p", { class: "muted" }, "Pick one more run to compare."));
      return;
    }
    const want = picked.map((p) => p.id).join();
    try {
      const [a, b] = await Promise.all(picked.map((p) => getRun(p.id)));
      if (picked.map((p) => p.id).join() !== want) return;   // picked again meanwhile
      showPair(a, b, picked.map((p) => p.n));
    } catch (e) {
      pair.replaceChildren(el("p", { class: "status error" }, `Could not load the runs: ${e.message}`));
    }
  }

  function showPair(a, b, [na, nb]) {
    const value = (v) => (v === null || v === undefined ? "–" : typeof v === "number" ? fmtNumber(v, 5)
      : typeof v === "object" ? JSON.stringify(v) : String(v));
    const section = (title, get, fmt = (k, v) => value(v)) => {
      const keys = [...new Set([...Object.keys(get(a) || {}), ...Object.keys(get(b) || {})])]
        .filter((k) => [get(a)?.[k], get(b)?.[k]].some((v) => v !== undefined && (typeof v !== "object" || v === null)));
      return keys.map((k) => {
        const [x, y] = [get(a)?.[k], get(b)?.[k]].map((v) => (v === undefined ? "–" : fmt(k, v)));
        return { cells: [`${title}: ${k}`, x, y, x === y ? "" : "differs"], differs: x !== y };
      });
    };
    const about = (r) => ({ model: r.kind, data: dataName(dataId(r)), target: r.config?.target, device: deviceOf(r) });
    const rows = [...section("run", about), ...section("parameter", (r) => r.config?.params),
      ...section("metric", (r) => r.metrics), ...section("time", (r) => r.timings, (k, v) => (typeof v === "number" ? fmtTiming(k, v) : value(v)))];
    const tbl = table(["", `Run ${na}`, `Run ${nb}`, "Differs"], rows.map((r) => r.cells), { id: "runs-pair-table" });
    tbl.querySelectorAll("tbody tr").forEach((tr, i) => { if (rows[i].differs) tr.classList.add("differs"); });
    const n = rows.filter((r) => r.differs).length;
    pair.hidden = false;
    pair.replaceChildren(el("h2", {}, `Run ${na} and run ${nb} side by side`),
      el("p", { class: "muted" }, `${n} of ${rows.length} rows differ (marked).`), tbl);
  }

  playground.onRun(() => load());
  load();
}
