// Charts. Lines and scatters are uPlot (npm `uplot`, served from node_modules at /vendor/uplot/):
// hover read-outs in the legend, drag to zoom (double-click resets), resized with their box, cheap
// to update live. Horizontal bars, the confusion matrix and the decision surface stay on a plain
// canvas with the same colours. Every chart:
// - takes a container element (a <div>) and fills it: a role="img" box with an aria-label that
//   says what it shows, plus a "Data" <details> table (the text alternative);
// - follows the page's colours (CSS variables, dark mode included) and redraws when its box
//   changes size or the colour scheme changes;
// - returns a handle {update(...same arguments), destroy()}.
import uPlot from "/vendor/uplot/uPlot.esm.js";
import { el, fmtNumber } from "./ui.js";

export const COLORS = ["#2f6fde", "#e07a1f", "#1f8a4c", "#c23b22", "#8a4fd1", "#0f9aa8", "#b8860b", "#d1478a"];
const DARK_COLORS = ["#6ea0ff", "#f39a4a", "#4cc27e", "#ff6f5a", "#b48cff", "#3cc7d4", "#e0b030", "#ff7ab6"];
const HEIGHT = 260;
const TABLE_ROWS = 50;   // rows shown in a chart's data table

const count = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const dark = () => window.matchMedia?.("(prefers-color-scheme: dark)").matches;
export const palette = () => (dark() ? DARK_COLORS : COLORS);

function theme() {
  const css = getComputedStyle(document.documentElement);
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return { ink: v("--ink", "#1d1f23"), muted: v("--muted", "#6b7079"), line: v("--line", "#e2e3e0"),
           panel: v("--panel", "#fff"), colors: palette() };
}

// Live charts, redrawn when the colour scheme changes.
const live = new Set();
window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", () => {
  for (const c of [...live]) (c.box.isConnected ? c.redraw() : live.delete(c));
});

// The common frame: a labelled role="img" box and the data table under it.
// The box's `chart` property is the chart's handle (watchSize; for the console and e2e tests).
function frame(container, label) {
  container.replaceChildren();
  container.classList.add("chart-box");
  const box = el("div", { class: "chart", role: "img", "aria-label": label });
  const data = el("details", { class: "chart-data" }, el("summary", {}, "Data"));
  container.append(box, data);
  return { box, data };
}

function dataTable(details, headers, rows) {
  const shown = rows.slice(0, TABLE_ROWS);
  const fmt = (v) => (typeof v === "number" ? fmtNumber(v, 5) : v ?? "–");
  details.replaceChildren(el("summary", {}, `Data (${rows.length} ${rows.length === 1 ? "row" : "rows"}` +
    `${rows.length > shown.length ? `, first ${shown.length} shown` : ""})`),
  el("div", { class: "scroll" }, el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, shown.map((r) => el("tr", {}, r.map((c) => el("td", {}, fmt(c)))))))));
}

// Redraws the chart when its box changes width; and hangs the handle on the box (`chart`).
function watchSize(handle) {
  handle.box.chart = handle;
  // handle.width: the box's width when it was last drawn (0 while hidden: drawn on a guess).
  const ro = new ResizeObserver(() => {
    const w = handle.box.clientWidth;
    if (w && Math.abs(w - handle.width) >= 1) handle.resize();
  });
  ro.observe(handle.box);
  return ro;
}

// --- uPlot charts --------------------------------------------------------------------------
function axis(t, label, { integer = false } = {}) {
  return { label, stroke: t.muted, labelSize: 18, labelFont: "12px system-ui, sans-serif",
           font: "11px system-ui, sans-serif", size: 44,
           grid: { stroke: t.line, width: 1 }, ticks: { stroke: t.line, width: 1 },
           ...(integer ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000],
                           values: (u, vals) => vals.map((v) => String(Math.round(v))) } : {}) };
}

function makePlot(handle, opts, data) {
  handle.plot?.destroy();
  handle.width = handle.box.clientWidth;
  const width = Math.max(200, handle.width || 400);
  handle.plot = new uPlot({ width, height: handle.height, ...opts }, data, handle.box);
}

// series: [{name, points: [[x, y], ...]}, ...] sharing nothing: the union of their x values is
// the x axis (gaps where a series has no point). opts: xName, yName, integerX (whole-number x
// ticks: steps, run numbers), points (draw points: true where a series may have one point),
// marks ([{x, label}]: a dashed vertical line at each x, its label beside it and in the
// aria-label: a best iteration).
export function lineChart(container, series, opts = {}) {
  const { xName = "x", yName = "y", title = `${yName} against ${xName}` } = opts;
  const { box, data } = frame(container, title);
  const handle = { box, height: opts.height || HEIGHT, plot: null, series, opts };
  const build = () => {
    const t = theme();
    const xs = [...new Set(handle.series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = handle.series.map((s) => {
      const col = new Array(xs.length).fill(null);
      for (const [x, y] of s.points) col[index.get(x)] = y;
      return col;
    });
    const single = handle.series.some((s) => s.points.length < 3) || opts.points;
    makePlot(handle, {
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false } },
      hooks: { draw: [(u) => drawMarks(u, opts.marks || [], t)] },
      axes: [axis(t, xName, { integer: opts.integerX }), axis(t, yName)],
      series: [{ label: xName, value: (u, v) => (v == null ? "" : fmtNumber(v, 6)) },
        ...handle.series.map((s, i) => ({
          label: s.name, stroke: t.colors[i % t.colors.length], width: 1.6, spanGaps: true,
          points: { show: single, size: 6, fill: t.colors[i % t.colors.length] },
          value: (u, v) => (v == null ? "" : fmtNumber(v, 5)),
        }))],
    }, [xs, ...columns]);
    box.setAttribute("aria-label", `${title}: ` + handle.series.map((s) => {
      const last = s.points[s.points.length - 1];
      return `${s.name}, ${count(s.points.length, "point")}` + (last ? `, last ${fmtNumber(last[1], 4)} at ${xName} ${fmtNumber(last[0], 6)}` : "");
    }).join("; ") + (opts.marks || []).map((m) => `; marked: ${m.label}`).join(""));
    dataTable(data, [xName, ...handle.series.map((s) => s.name)],
      xs.map((x, i) => [x, ...columns.map((c) => c[i])]));
  };
  handle.redraw = build;
  handle.resize = () => {
    handle.width = box.clientWidth;
    handle.plot?.setSize({ width: Math.max(200, handle.width), height: handle.height });
  };
  handle.update = (next) => {
    const sameShape = handle.plot && next.length === handle.series.length
      && next.every((s, i) => s.name === handle.series[i].name);
    handle.series = next;
    if (!sameShape) return build();
    // Live update: one x column (union), cheap setData; the data table is refreshed too.
    const xs = [...new Set(next.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = next.map((s) => {
      const col = new Array(xs.length).fill(null);
      for (const [x, y] of s.points) col[index.get(x)] = y;
      return col;
    });
    handle.plot.setData([xs, ...columns]);
    box.setAttribute("aria-label", `${title}: ` + next.map((s) => {
      const last = s.points[s.points.length - 1];
      return `${s.name}, ${count(s.points.length, "point")}` + (last ? `, last ${fmtNumber(last[1], 4)}` : "");
    }).join("; "));
    if (data.open) dataTable(data, [xName, ...next.map((s) => s.name)], xs.map((x, i) => [x, ...columns.map((c) => c[i])]));
  };
  handle.destroy = () => { handle.ro.disconnect(); handle.plot?.destroy(); live.delete(handle); };
  build();
  handle.ro = watchSize(handle);
  live.add(handle);
  return handle;
}

// The marks of a line chart on its plot area: a dashed line and its label (canvas pixels).
function drawMarks(u, marks, t) {
  const { ctx } = u, { top, height, left, width } = u.bbox, dpr = window.devicePixelRatio || 1;
  ctx.save();
  ctx.strokeStyle = t.ink; ctx.fillStyle = t.ink; ctx.lineWidth = dpr; ctx.setLineDash([4 * dpr, 3 * dpr]);
  ctx.font = `${11 * dpr}px system-ui, sans-serif`;
  for (const m of marks) {
    const x = Math.round(u.valToPos(m.x, "x", true));
    if (x < left || x > left + width) continue;
    ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + height); ctx.stroke();
    const w = ctx.measureText(m.label).width;
    ctx.textAlign = x + 4 * dpr + w > left + width ? "right" : "left";
    ctx.fillText(m.label, x + (ctx.textAlign === "left" ? 4 : -4) * dpr, top + 12 * dpr);
  }
  ctx.restore();
}

// points: [[x, y], ...] drawn as dots; opts.diagonal adds y = x, opts.zero adds y = 0. Hovering
// reads out the point nearest the cursor's x.
export function scatterChart(container, points, opts = {}) {
  const { xName = "x", yName = "y", title = `${yName} against ${xName}` } = opts;
  const { box, data } = frame(container, title);
  const handle = { box, height: opts.height || HEIGHT, plot: null, points };
  const build = () => {
    const t = theme();
    const sorted = handle.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]))
      .sort((a, b) => a[0] - b[0]);
    const xs = sorted.map((p) => p[0]), ys = sorted.map((p) => p[1]);
    const series = [{ label: xName, value: (u, v) => (v == null ? "" : fmtNumber(v, 5)) },
      { label: yName, stroke: t.colors[0], fill: t.colors[0], paths: () => null,
        points: { show: true, size: 5, stroke: t.colors[0], fill: t.colors[0] },
        value: (u, v) => (v == null ? "" : fmtNumber(v, 5)) }];
    const columns = [xs, ys];
    if (opts.diagonal || opts.zero) {
      series.push({ label: opts.diagonal ? "y = x" : "y = 0", stroke: t.muted, width: 1, dash: [4, 4],
                    points: { show: false }, value: () => "" });
      columns.push(xs.map((x) => (opts.diagonal ? x : 0)));
    }
    const scales = { x: { time: false } };
    if (opts.diagonal && xs.length) {
      const lo = Math.min(xs[0], ...ys), hi = Math.max(xs[xs.length - 1], ...ys);
      const pad = (hi - lo) * 0.04 || 1;
      scales.x.range = () => [lo - pad, hi + pad];
      scales.y = { range: () => [lo - pad, hi + pad] };
    }
    makePlot(handle, { legend: { live: true }, cursor: { drag: { x: true, y: true } }, scales,
                       axes: [axis(t, xName), axis(t, yName)], series }, columns);
    box.setAttribute("aria-label", `${title}: ${count(sorted.length, "point")}` +
      (xs.length ? `, ${xName} from ${fmtNumber(xs[0], 4)} to ${fmtNumber(xs[xs.length - 1], 4)}` : ""));
    dataTable(data, [xName, yName], sorted);
  };
  handle.redraw = build;
  handle.resize = () => {
    handle.width = box.clientWidth;
    handle.plot?.setSize({ width: Math.max(200, handle.width), height: handle.height });
  };
  handle.update = (next) => { handle.points = next; build(); };
  handle.destroy = () => { handle.ro.disconnect(); handle.plot?.destroy(); live.delete(handle); };
  build();
  handle.ro = watchSize(handle);
  live.add(handle);
  return handle;
}

// --- canvas charts -------------------------------------------------------------------------
function canvasChart(container, title, draw) {
  const { box, data } = frame(container, title);
  const canvas = el("canvas", { class: "chart-canvas" });
  box.append(canvas);
  const handle = { box, canvas, data };
  handle.redraw = () => {
    const t = theme();
    const dpr = window.devicePixelRatio || 1;
    handle.width = box.clientWidth;
    const w = handle.width || 400;
    const h = draw.height?.() ?? HEIGHT;
    canvas.style.height = `${h}px`;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px system-ui, sans-serif";
    draw(ctx, w, h, t);
  };
  handle.resize = handle.redraw;
  handle.destroy = () => { handle.ro.disconnect(); live.delete(handle); };
  requestAnimationFrame(() => handle.redraw());
  handle.redraw();
  handle.ro = watchSize(handle);
  live.add(handle);
  return handle;
}

// items: [[name, value], ...] drawn as horizontal bars, largest first, values written at the end.
export function bars(container, items, { title = "Bar chart", unit = "" } = {}) {
  const sorted = [...items].sort((a, b) => b[1] - a[1]).slice(0, 20);
  const draw = (ctx, w, h, t) => {
    const max = Math.max(...sorted.map((s) => s[1]), 1e-12);
    const left = Math.min(Math.max(60, w * 0.4), Math.max(0, ...sorted.map((s) => ctx.measureText(s[0]).width)) + 12);
    sorted.forEach(([name, v], i) => {
      const y = 6 + i * 20;
      const len = Math.max(0, ((w - left - 64) * v) / max);
      ctx.fillStyle = t.ink; ctx.fillText(fit(ctx, name, left - 8), 4, y + 11);
      ctx.fillStyle = t.colors[0]; ctx.fillRect(left, y + 2, len, 13);
      ctx.fillStyle = t.muted; ctx.fillText(fmtNumber(v, 3) + unit, left + len + 4, y + 12);
    });
  };
  draw.height = () => Math.max(60, 12 + sorted.length * 20);
  const handle = canvasChart(container, `${title}: ` + sorted.slice(0, 5).map(([n, v]) => `${n} ${fmtNumber(v, 3)}${unit}`).join(", ")
    + (sorted.length > 5 ? `, and ${sorted.length - 5} more` : ""), draw);
  dataTable(handle.data, ["Name", "Value"], sorted);
  return handle;
}

function fit(ctx, text, width) {
  let s = String(text);
  if (ctx.measureText(s).width <= width) return s;
  while (s.length > 1 && ctx.measureText(`${s}…`).width > width) s = s.slice(0, -1);
  return `${s}…`;
}

// matrix[i][j]: count of true class i predicted as j.
export function confusion(container, matrix, names, { title = "Confusion matrix" } = {}) {
  const n = matrix.length;
  const total = matrix.flat().reduce((a, b) => a + b, 0);
  const right = matrix.reduce((a, row, i) => a + row[i], 0);
  const draw = (ctx, w, h, t) => {
    const left = 84, top = 8;
    const size = Math.min((w - left - 8) / n, (h - top - 30) / n);
    const max = Math.max(...matrix.flat(), 1);
    const [r, g, b] = hexRgb(t.colors[0]);
    ctx.textAlign = "center";
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = matrix[i][j];
        ctx.fillStyle = `rgba(${r}, ${g}, ${b}, ${0.08 + 0.92 * (v / max)})`;
        ctx.fillRect(left + j * size, top + i * size, size - 1, size - 1);
        if (size > 18) {
          ctx.fillStyle = v / max > 0.5 ? "#fff" : t.ink;
          ctx.fillText(String(v), left + j * size + size / 2, top + i * size + size / 2 + 4);
        }
      }
      ctx.fillStyle = t.ink; ctx.textAlign = "right";
      ctx.fillText(String(names[i]).slice(0, 12), left - 4, top + i * size + size / 2 + 4);
      ctx.textAlign = "center";
    }
    ctx.fillStyle = t.muted;
    ctx.fillText("predicted class →", left + (n * size) / 2, Math.min(h - 6, top + n * size + 16));
    ctx.textAlign = "left";
  };
  const handle = canvasChart(container, `${title}: ${n} classes, ${right} of ${total} test rows on the diagonal (predicted right)`, draw);
  dataTable(handle.data, ["true \\ predicted", ...names.map(String)], matrix.map((row, i) => [String(names[i]), ...row]));
  return handle;
}

// grid: {x: [x0, x1], y: [y0, y1], n: cells per side, values: n*n class ids or predicted values
// (row-major, y up)}, points: [[x, y, class id or target value], ...] drawn on top. opts.classes:
// the class ids' names (the legend); else opts.scale [lo, hi]: a regression's colour scale, the
// cells and the points coloured by value on it. The legend is text under the canvas. The
// handle's update(grid, points) redraws it on the same axes (a live forest, batch after batch).
const TINT = 0.45;   // a surface cell's colour over the panel: the test rows' dots stand out on it
export function surface(container, grid, points, { title = "Decision surface", xName = "x", yName = "y", classes = null, scale = null } = {}) {
  const state = { grid, points };
  const pad = { l: 58, r: 10, t: 8, b: 36 };   // the left: the y title, then the y ticks
  const colour = (t, v) => (classes ? hexRgb(t.colors[v % t.colors.length]) : ramp(scale, v));
  const draw = (ctx, w, h, t) => {
    const { grid, points } = state;
    const [x0, x1] = grid.x, [y0, y1] = grid.y;
    const X = (v) => pad.l + ((v - x0) / (x1 - x0)) * (w - pad.l - pad.r);
    const Y = (v) => h - pad.b - ((v - y0) / (y1 - y0)) * (h - pad.t - pad.b);
    // The cells as one n x n image, each pixel its colour mixed with the panel (opaque): scaled
    // up without smoothing it has no seams, where translucent rectangles overlapping by half a
    // pixel drew a darker grid.
    const n = grid.n;
    const cells = new OffscreenCanvas(n, n);
    const cctx = cells.getContext("2d");
    const image = cctx.createImageData(n, n);
    const bg = hexRgb(t.panel);
    for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) {
      const rgb = colour(t, grid.values[r * n + c]), at = ((n - 1 - r) * n + c) * 4;   // row 0 at the bottom
      for (let k = 0; k < 3; k++) image.data[at + k] = Math.round(bg[k] + (rgb[k] - bg[k]) * TINT);
      image.data[at + 3] = 255;
    }
    cctx.putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(cells, X(x0), Y(y1), X(x1) - X(x0), Y(y0) - Y(y1));
    ctx.lineWidth = 0.6; ctx.strokeStyle = t.panel;
    for (const [x, y, k] of points) {
      ctx.fillStyle = `rgb(${colour(t, k).join(",")})`;
      ctx.beginPath(); ctx.arc(X(x), Y(y), 2.8, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
    }
    ctx.fillStyle = t.muted; ctx.strokeStyle = t.line; ctx.lineWidth = 1;
    ctx.strokeRect(X(x0), Y(y1), X(x1) - X(x0), Y(y0) - Y(y1));
    ctx.textAlign = "center";
    for (const v of niceTicks(x0, x1)) ctx.fillText(fmtNumber(v, 3), X(v), h - pad.b + 14);
    ctx.textAlign = "right";
    for (const v of niceTicks(y0, y1)) ctx.fillText(fmtNumber(v, 3), pad.l - 5, Y(v) + 3);
    ctx.textAlign = "left";
    ctx.fillStyle = t.ink;
    ctx.fillText(xName, X((x0 + x1) / 2) - ctx.measureText(xName).width / 2, h - 6);
    ctx.save(); ctx.translate(10, pad.t + (h - pad.t - pad.b) / 2 + ctx.measureText(yName).width / 2);
    ctx.rotate(-Math.PI / 2); ctx.fillText(yName, 0, 0); ctx.restore();
    legend(t);
  };
  const label = () => {
    const v = state.grid.values;
    const shown = classes ? `predicted classes: ${[...new Set(v)].sort((a, b) => a - b).map((k) => classes[k]).join(", ")}`
      : `predictions from ${fmtNumber(Math.min(...v), 4)} to ${fmtNumber(Math.max(...v), 4)}`;
    return `${title} over ${xName} and ${yName}: ${shown}; ${state.points.length} test rows drawn on top`;
  };
  // The legend: each class's swatch and name, or the colour scale with its values at both ends
  // and the middle.
  const key = el("div", { class: "surface-legend", "aria-label": "Legend" });
  function legend(t) {
    if (classes) {
      key.replaceChildren(el("span", { class: "muted" }, "class (cells: predicted, dots: true)"), ...classes.map((name, k) => el("span", { class: "legend-item" },
        el("span", { class: "swatch", style: `background: ${t.colors[k % t.colors.length]}` }), String(name))));
    } else {
      const [lo, hi] = scale;
      const stops = [0, 0.25, 0.5, 0.75, 1].map((f) => `rgb(${ramp(scale, lo + f * (hi - lo)).join(",")}) ${f * 100}%`);
      key.replaceChildren(el("span", { class: "muted" }, "value (cells: predicted, dots: actual)"),
        el("span", { class: "legend-scale" }, el("span", {}, fmtNumber(lo, 4)),
          el("span", { class: "legend-bar", style: `background: linear-gradient(to right, ${stops.join(", ")})` }),
          el("span", {}, fmtNumber(hi, 4))));
    }
  }
  const handle = canvasChart(container, label(), draw);
  handle.box.after(key);
  const rows = () => dataTable(handle.data, [xName, yName, classes ? "true class" : "actual value"],
    state.points.map(([x, y, k]) => [x, y, classes ? classes[k] : k]));
  rows();
  handle.update = (nextGrid, nextPoints) => {
    Object.assign(state, { grid: nextGrid, points: nextPoints });
    handle.box.setAttribute("aria-label", label());
    rows();
    handle.redraw();
  };
  return handle;
}

// A value's colour on a regression surface's scale [lo, hi]: viridis (perceptually even, readable
// in grey and by most colour-blind readers), five stops linearly between.
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function ramp([lo, hi], v) {
  const f = Math.min(1, Math.max(0, hi > lo ? (v - lo) / (hi - lo) : 0.5)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(f)), u = f - i;
  return VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * u));
}

function niceTicks(lo, hi, n = 5) {
  const step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
  const err = (hi - lo) / n / step;
  const s = step * (err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1);
  const out = [];
  for (let v = Math.ceil(lo / s) * s; v <= hi + 1e-12; v += s) out.push(Number(v.toPrecision(12)));
  return out;
}

function hexRgb(hex) {
  const short = /^#?([0-9a-f])([0-9a-f])([0-9a-f])$/i.exec(hex);   // "#fff": the page's --panel
  if (short) return [1, 2, 3].map((i) => parseInt(short[i] + short[i], 16));
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  return m ? [1, 2, 3].map((i) => parseInt(m[i], 16)) : [47, 111, 222];
}
