// The Runs panel: every run stored on the server, filtered by model, data set and device, drawn
// over time (time and headline metric) so a person sees how a change moved the numbers; a click
// on a run shows its server comparisons.
import { getRuns } from "../api.js";
import { lines } from "../charts.js";
import { el, fmtNumber, fmtSeconds, table } from "../ui.js";
import { showComparisons } from "./compare.js";

const MAIN_TIME = { random_forest: "fit", transformer: "step", selftest: "kernels" };
const METRIC = ["mse", "accuracy", "val_loss"];

const dataOf = (r) => r.config?.dataset || r.config?.text || "–";
const deviceOf = (r) => `${r.backend}${r.adapter?.vendor ? ` · ${r.adapter.vendor}` : ""}${r.adapter?.is_fallback_adapter ? " (software)" : ""}`;
const metricOf = (r) => METRIC.find((m) => typeof r.metrics?.[m] === "number");

function summary(run) {
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
  const timeChart = el("canvas", { class: "chart", id: "runs-time-chart" });
  const metricChart = el("canvas", { class: "chart", id: "runs-metric-chart" });
  const detail = el("div", { id: "runs-detail" });
  root.append(el("div", { class: "card" }, el("h2", {}, "Runs"),
    el("div", { class: "row" }, el("label", {}, "Model ", filters.kind), el("label", {}, "Data ", filters.data),
      el("label", {}, "Device ", filters.device), refresh), list),
  el("div", { class: "cards", style: "margin-top:16px" },
    el("div", { class: "card" }, el("h2", {}, "Time, run after run"), timeChart),
    el("div", { class: "card" }, el("h2", {}, "Result, run after run"), metricChart)), detail);

  let runs = [];
  for (const f of Object.values(filters)) f.addEventListener("change", render);

  function options(select, values) {
    const keep = select.value;
    select.replaceChildren(el("option", { value: "" }, "all"), ...[...new Set(values)].sort().map((v) => el("option", { value: v }, v)));
    if ([...select.options].some((o) => o.value === keep)) select.value = keep;
  }

  async function load() {
    try {
      runs = (await getRuns({ limit: 1000 })).runs;
      options(filters.kind, runs.map((r) => r.kind));
      options(filters.data, runs.map(dataOf));
      options(filters.device, runs.map(deviceOf));
      render();
    } catch (e) {
      list.replaceChildren(el("p", { class: "status error" }, `Could not list runs: ${e.message}`));
    }
  }

  function render() {
    const shown = runs.filter((r) => (!filters.kind.value || r.kind === filters.kind.value)
      && (!filters.data.value || dataOf(r) === filters.data.value)
      && (!filters.device.value || deviceOf(r) === filters.device.value));
    if (!shown.length) { list.replaceChildren(el("p", { class: "muted" }, "No runs yet.")); return; }
    const tbl = table(["When", "Model", "Data", "Device", "Result", "Main time", "Total"], shown.map((r) => [
      new Date(r.created_at).toLocaleString(), r.kind, dataOf(r), deviceOf(r), summary(r),
      fmtSeconds(r.timings?.[MAIN_TIME[r.kind]]), fmtSeconds(r.timings?.total)]));
    tbl.querySelectorAll("tbody tr").forEach((tr, i) => {
      tr.style.cursor = "pointer";
      tr.title = "Show the server's runs of this job";
      tr.addEventListener("click", () => showComparisons(detail, shown[i]));
    });
    list.replaceChildren(tbl);
    // Oldest first, one series per (model, data, device).
    const series = new Map();
    shown.slice().reverse().forEach((r, i) => {
      const key = `${r.kind} · ${dataOf(r)} · ${deviceOf(r)}`;
      if (!series.has(key)) series.set(key, { time: [], metric: [] });
      const t = r.timings?.[MAIN_TIME[r.kind]];
      if (typeof t === "number") series.get(key).time.push([i, t]);
      const m = metricOf(r);
      if (m) series.get(key).metric.push([i, r.metrics[m]]);
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
