// The Runs panel: the runs stored on the server (summaries, a page at a time), filtered by model,
// data set and device on the server, drawn over time (time and headline metric) so a person sees
// how a change moved the numbers; a click on a run shows its server comparisons.
import { getRun, getRunFacets, getRuns } from "../api.js";
import { lines } from "../charts.js";
import { el, fmtNumber, fmtSeconds, table } from "../ui.js";
import { showComparisons } from "./compare.js";

const PAGE = 100;

// Any stored value as text, whatever its type: a run stored by an older server may hold an object
// where a string belongs, and `${value}` of such an object throws.
export function asText(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  try { return JSON.stringify(v) ?? "–"; } catch (e) { return "?"; }
}
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

const dataOf = (r) => asText(r.dataset);
const deviceOf = (r) => asText(r.device);

function summary(run) {
  if (typeof run.note === "string") return run.note;
  const value = num(run.value);
  return typeof run.metric === "string" && value !== null ? `${run.metric} ${fmtNumber(value)}` : "";
}

export function mountRunsPanel(root, playground) {
  const filters = { kind: el("select", { id: "runs-kind" }), data: el("select", { id: "runs-data" }),
                    device: el("select", { id: "runs-device" }) };
  const refresh = el("button", { class: "secondary", onclick: () => load() }, "Refresh");
  const list = el("div", { id: "runs-list", class: "scroll" });
  const more = el("button", { class: "secondary", id: "runs-more", hidden: true, onclick: () => load(true) }, "Load more");
  const timeChart = el("canvas", { class: "chart", id: "runs-time-chart" });
  const metricChart = el("canvas", { class: "chart", id: "runs-metric-chart" });
  const detail = el("div", { id: "runs-detail" });
  root.append(el("div", { class: "card" }, el("h2", {}, "Runs"),
    el("div", { class: "row" }, el("label", {}, "Model ", filters.kind), el("label", {}, "Data ", filters.data),
      el("label", {}, "Device ", filters.device), refresh), list, more),
  el("div", { class: "cards", style: "margin-top:16px" },
    el("div", { class: "card" }, el("h2", {}, "Time, run after run"), timeChart),
    el("div", { class: "card" }, el("h2", {}, "Result, run after run"), metricChart)), detail);

  let runs = [];
  let next = null;
  for (const f of Object.values(filters)) {
    f.addEventListener("change", () => { list.replaceChildren(el("p", { class: "muted" }, "Loading…")); load(); });
  }

  function options(select, values) {
    const keep = select.value;
    const texts = [...new Set((Array.isArray(values) ? values : []).map(asText))].sort();
    select.replaceChildren(el("option", { value: "" }, "all"), ...texts.map((v) => el("option", { value: v }, v)));
    if ([...select.options].some((o) => o.value === keep)) select.value = keep;
  }

  // A page of summaries from the server, filtered there; `append` asks for the next page.
  async function load(append = false) {
    try {
      if (!append) {
        const facets = await getRunFacets();
        options(filters.kind, facets.kinds);
        options(filters.data, facets.datasets);
        options(filters.device, facets.devices);
      }
      const params = { limit: PAGE };
      if (filters.kind.value) params.kind = filters.kind.value;
      if (filters.data.value) params.dataset = filters.data.value;
      if (filters.device.value) params.device = filters.device.value;
      if (append && next) params.cursor = next;
      const page = await getRuns(params);
      runs = append ? runs.concat(page.runs) : page.runs;
      next = page.next;
      more.hidden = !next;
      render();
    } catch (e) {
      list.replaceChildren(el("p", { class: "status error" }, `Could not list runs: ${e.message}`));
    }
  }

  async function open(summaryRow) {
    try {
      showComparisons(detail, await getRun(summaryRow.id));
    } catch (e) {
      detail.replaceChildren(el("p", { class: "status error" }, `Could not load the run: ${e.message}`));
    }
  }

  function render() {
    const shown = runs;
    if (!shown.length) { list.replaceChildren(el("p", { class: "muted" }, "No runs yet.")); return; }
    const when = (r) => { const d = new Date(r.created_at); return Number.isNaN(d.getTime()) ? asText(r.created_at) : d.toLocaleString(); };
    const tbl = table(["When", "Model", "Data", "Device", "Result", "Main time", "Total"], shown.map((r) => [
      when(r), asText(r.kind), dataOf(r), deviceOf(r), summary(r),
      fmtSeconds(num(r.main_time)), fmtSeconds(num(r.total_time))]));
    tbl.querySelectorAll("tbody tr").forEach((tr, i) => {
      tr.style.cursor = "pointer";
      tr.title = "Show the server's runs of this job";
      tr.addEventListener("click", () => open(shown[i]));
    });
    list.replaceChildren(tbl);
    // Oldest first, one series per (model, data, device).
    const series = new Map();
    shown.slice().reverse().forEach((r, i) => {
      const key = `${asText(r.kind)} · ${dataOf(r)} · ${deviceOf(r)}`;
      if (!series.has(key)) series.set(key, { time: [], metric: [] });
      const t = num(r.main_time);
      if (t !== null) series.get(key).time.push([i, t]);
      const v = num(r.value);
      if (typeof r.metric === "string" && v !== null) series.get(key).metric.push([i, v]);
    });
    const pick = (k) => [...series].filter(([, s]) => s[k].length).slice(0, 8).map(([name, s]) => ({ name, points: s[k] }));
    requestAnimationFrame(() => {
      lines(timeChart, pick("time"), { xName: "run", yName: "seconds" });
      lines(metricChart, pick("metric"), { xName: "run", yName: "mse / accuracy / loss" });
    });
  }
  playground.onRun(() => load());
  load();
}
