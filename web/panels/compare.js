// Browser against server: polls a run's comparisons (the same job on the server's runners) and
// shows them as a table and a time chart, marking a server result that differs from the browser's
// by more than the tolerance of the issue that made the model. While some are queued or running,
// a Cancel button stops them (DELETE /api/runs/{id}/comparisons: a running job's process is killed),
// and what keeps queued jobs waiting (the server's `problem`: no Dask scheduler, a full disk) is said
// above the table and in each waiting row.
import { cancelComparisons } from "../api.js";
import { mainTiming } from "../kinds.js";
import { bars } from "../charts.js";
import { el, fmtNumber, fmtSeconds, table } from "../ui.js";

const FINAL = new Set(["done", "failed", "unavailable"]);
const PENDING = new Set(["queued", "running"]);
const obj = (v) => (v && typeof v === "object" && !Array.isArray(v) ? v : {});
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
// Any stored value as text (a run stored by an older server may hold an object where a string
// belongs, and `${value}` or join() of such an object throws).
export function asText(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  try { return JSON.stringify(v) ?? "–"; } catch (e) { return "?"; }
}
// What the table and the chart compare: the kind's main timing (GET /api/kinds).
const TOTAL = { key: "total", label: "Total", words: "Seconds in all" };

export function showComparisons(container, run) {
  const card = el("div", { class: "card wide comparisons", id: `comparisons-${asText(run.id).slice(0, 8)}` },
    el("h2", {}, "Browser and server, side by side"), el("p", { class: "muted" }, "Waiting for the server's runs (they fill in here as they finish)…"));
  container.replaceChildren(card);
  let stopped = false;
  const poll = async () => {
    if (stopped || !card.isConnected) return;
    try {
      const res = await fetch(`/api/runs/${run.id}/comparisons`);
      if (res.ok) {
        const data = await res.json();
        render(card, run, data);
        if (data.comparisons.length && data.comparisons.every((c) => FINAL.has(c.status))) return;
        if (data.enabled === false) return;
      }
    } catch (e) { /* the server may be restarting: keep polling */ }
    setTimeout(poll, 2000);
  };
  poll();
  return () => { stopped = true; };
}

function render(card, run, data) {
  const main = mainTiming(run.kind) || TOTAL;
  const key = main.key;
  const metrics = obj(run.metrics);
  const timings = obj(run.timings);
  const metricName = ["mse", "accuracy", "val_loss"].find((m) => num(metrics[m]) !== null);
  const precision = typeof metrics.precision === "string" ? `, ${metrics.precision}` : "";
  const rows = [[`browser (${asText(run.backend)}${precision})`, "done", describeAdapter(run.adapter), fmtSeconds(num(timings[key])),
    fmtSeconds(num(timings.predict)), metricName ? fmtNumber(metrics[metricName], 5) : "–", "–", "", ""]];
  for (const c of data.comparisons) {
    const agree = c.agreement;
    let mark = "";
    if (agree) mark = agree.within ? "agrees" : `differs by ${fmtNumber(agree.difference, 3)}${agree.relative ? " (relative)" : ""}, beyond ${agree.tolerance}`;
    let speed = "–";
    if (c.speedup) speed = c.speedup >= 1 ? `server ${c.speedup.toFixed(2)}× faster` : `browser ${(1 / c.speedup).toFixed(2)}× faster`;
    const mode = typeof c.metrics?.torch_mode === "string" ? ` (${c.metrics.torch_mode})` : "";
    let status = asText(c.status);
    if (c.status === "failed" || c.status === "unavailable") status = `${c.status}: ${asText(c.error)}`;
    else if (c.waiting) status = `${c.status}: ${asText(c.waiting)}`;
    rows.push([c.runner + mode, status,
      c.hardware || c.device || "–", fmtSeconds(c.timings?.[key]), fmtSeconds(c.timings?.predict),
      metricName && typeof c.metrics?.[metricName] === "number" ? fmtNumber(c.metrics[metricName], 5) : "–", speed, mark,
      differs(c)]);
  }
  const tbl = table(["Where", "Status", "Device", main.label, "Predict", metricName || "Metric", "Speed", "Agreement", "Differs from the job"], rows);
  tbl.querySelectorAll("tbody tr").forEach((tr, i) => {
    const c = data.comparisons[i - 1];
    const cell = tr.children[7];
    if (c?.agreement && !c.agreement.within) cell.className = "bad";
    else if (c?.agreement) cell.className = "ok";
  });
  const timed = [[`browser`, num(timings[key])], ...data.comparisons.filter((c) => c.status === "done" && c.timings?.[key])
    .map((c) => [c.runner, c.timings[key]])];
  const chartBox = el("div", { class: "compare-chart" });
  card.replaceChildren(...[el("h2", {}, "Browser and server, side by side"),
    el("p", { class: "muted" }, `Server device: ${data.device}. ${main.words}, lower is better.`),
    data.problem ? el("p", { class: "status error compare-problem", role: "status" }, `The server's jobs wait: ${asText(data.problem)}`) : null,
    cancelButton(card, run, data), el("div", { class: "scroll" }, tbl), chartBox].filter(Boolean));
  bars(chartBox, timed.filter((t) => typeof t[1] === "number"),
    { title: `${main.words}, browser and server runners`, unit: " s" });
}

// While jobs are queued or running: a button that cancels them all (the answer is rendered at
// once; a poll meanwhile keeps it disabled, as card.dataset.cancelling says).
function cancelButton(card, run, data) {
  const pending = data.comparisons.filter((c) => PENDING.has(c.status)).length;
  if (!pending) return null;
  const busy = card.dataset.cancelling === "1";
  const button = el("button", { class: "secondary", id: "compare-cancel", disabled: busy, onclick: async () => {
    card.dataset.cancelling = "1";
    button.disabled = true;
    button.textContent = "Cancelling…";
    try {
      const answer = await cancelComparisons(run.id);
      delete card.dataset.cancelling;
      render(card, run, answer);
    } catch (e) {
      delete card.dataset.cancelling;
      button.disabled = false;
      button.textContent = `Cancelling failed (${e.message}): try again`;
    }
  } }, busy ? "Cancelling…" : `Cancel the server's ${pending} queued or running job${pending > 1 ? "s" : ""}`);
  return el("div", { class: "row" }, button);
}

// What the runner could not do as the job asked: its note, and parameters it had no counterpart for.
function differs(c) {
  const parts = [];
  if (c.note) parts.push(String(c.note));
  if (Array.isArray(c.ignored) && c.ignored.length) parts.push(`ignored: ${c.ignored.join(", ")}`);
  return parts.join("; ");
}

function describeAdapter(adapter) {
  const a = obj(adapter);
  const text = [a.vendor, a.architecture].filter(Boolean).map(asText).join(" ");
  return (text || "–") + (a.is_fallback_adapter === true ? " (software)" : "");
}
