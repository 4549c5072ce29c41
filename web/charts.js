// Canvas charts, no dependencies: scatter (with a y = x line), bars, a matrix heat map (confusion
// matrices), a decision surface under points, and lines (loss curves). Each takes a canvas and
// data, sizes the canvas to its CSS box at the device pixel ratio, and draws axes with ticks.

const COLORS = ["#2f6fde", "#e07a1f", "#1f8a4c", "#c23b22", "#8a4fd1", "#0f9aa8", "#b8860b", "#d1478a"];
const PAD = { l: 52, r: 14, t: 22, b: 34 };

function setup(canvas, title) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 400, h = canvas.clientHeight || 260;
  canvas.width = w * dpr; canvas.height = h * dpr;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = "#1d1f23";
  if (title) { ctx.font = "600 12px system-ui, sans-serif"; ctx.fillText(title, PAD.l, 14); ctx.font = "11px system-ui, sans-serif"; }
  return { ctx, w, h };
}

function extent(values) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) if (Number.isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
  if (lo === Infinity) return [0, 1];
  if (lo === hi) return [lo - 1, hi + 1];
  const pad = (hi - lo) * 0.04;
  return [lo - pad, hi + pad];
}

function ticks(lo, hi, n = 5) {
  const step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
  const err = (hi - lo) / n / step;
  const s = step * (err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1);
  const out = [];
  for (let v = Math.ceil(lo / s) * s; v <= hi + 1e-12; v += s) out.push(Number(v.toPrecision(12)));
  return out;
}

const label = (v) => (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0) ? v.toExponential(1) : String(v));

function axes(ctx, w, h, [x0, x1], [y0, y1], xName, yName) {
  const X = (v) => PAD.l + ((v - x0) / (x1 - x0)) * (w - PAD.l - PAD.r);
  const Y = (v) => h - PAD.b - ((v - y0) / (y1 - y0)) * (h - PAD.t - PAD.b);
  ctx.strokeStyle = "#e2e3e0"; ctx.fillStyle = "#6b7079"; ctx.lineWidth = 1;
  for (const t of ticks(x0, x1)) { ctx.beginPath(); ctx.moveTo(X(t), PAD.t); ctx.lineTo(X(t), h - PAD.b); ctx.stroke(); ctx.fillText(label(t), X(t) - 10, h - PAD.b + 13); }
  for (const t of ticks(y0, y1)) { ctx.beginPath(); ctx.moveTo(PAD.l, Y(t)); ctx.lineTo(w - PAD.r, Y(t)); ctx.stroke(); ctx.fillText(label(t), 4, Y(t) + 3); }
  if (xName) ctx.fillText(xName, w - PAD.r - ctx.measureText(xName).width, h - 4);
  if (yName) { ctx.save(); ctx.translate(11, PAD.t + 60); ctx.rotate(-Math.PI / 2); ctx.fillText(yName, 0, 0); ctx.restore(); }
  return { X, Y };
}

// points: [[x, y], ...]; opts.diagonal draws y = x; opts.zero draws y = 0.
export function scatter(canvas, points, { title, xName, yName, diagonal = false, zero = false, colors } = {}) {
  const { ctx, w, h } = setup(canvas, title);
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  let xr = extent(xs), yr = extent(ys);
  if (diagonal) { const r = extent(xs.concat(ys)); xr = r; yr = r; }
  const { X, Y } = axes(ctx, w, h, xr, yr, xName, yName);
  ctx.strokeStyle = "#999";
  if (diagonal) { ctx.beginPath(); ctx.moveTo(X(xr[0]), Y(xr[0])); ctx.lineTo(X(xr[1]), Y(xr[1])); ctx.stroke(); }
  if (zero) { ctx.beginPath(); ctx.moveTo(X(xr[0]), Y(0)); ctx.lineTo(X(xr[1]), Y(0)); ctx.stroke(); }
  ctx.globalAlpha = points.length > 500 ? 0.5 : 0.8;
  points.forEach((p, i) => {
    ctx.fillStyle = colors ? COLORS[colors[i] % COLORS.length] : COLORS[0];
    ctx.beginPath(); ctx.arc(X(p[0]), Y(p[1]), 2.5, 0, 2 * Math.PI); ctx.fill();
  });
  ctx.globalAlpha = 1;
}

// items: [[name, value], ...] drawn as horizontal bars, largest first.
export function bars(canvas, items, { title } = {}) {
  const sorted = [...items].sort((a, b) => b[1] - a[1]).slice(0, 20);
  canvas.style.height = `${Math.max(120, 26 + sorted.length * 20)}px`;
  const { ctx, w } = setup(canvas, title);
  const max = Math.max(...sorted.map((s) => s[1]), 1e-12);
  const left = Math.min(180, Math.max(...sorted.map((s) => ctx.measureText(s[0]).width)) + 12);
  sorted.forEach(([name, v], i) => {
    const y = 24 + i * 20;
    ctx.fillStyle = "#1d1f23"; ctx.fillText(name, 4, y + 11);
    ctx.fillStyle = COLORS[0]; ctx.fillRect(left, y + 2, ((w - left - 60) * v) / max, 13);
    ctx.fillStyle = "#6b7079"; ctx.fillText(v.toFixed(3), left + ((w - left - 60) * v) / max + 4, y + 12);
  });
}

// matrix[i][j]: count of true class i predicted as j.
export function confusion(canvas, matrix, names, { title } = {}) {
  const n = matrix.length;
  const { ctx, w, h } = setup(canvas, title);
  const size = Math.min((w - 90) / n, (h - 50) / n);
  const max = Math.max(...matrix.flat(), 1);
  ctx.textAlign = "center";
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const v = matrix[i][j];
      ctx.fillStyle = `rgba(47, 111, 222, ${0.08 + 0.92 * (v / max)})`;
      ctx.fillRect(80 + j * size, 24 + i * size, size - 1, size - 1);
      if (size > 18) { ctx.fillStyle = v / max > 0.5 ? "#fff" : "#1d1f23"; ctx.fillText(String(v), 80 + j * size + size / 2, 24 + i * size + size / 2 + 4); }
    }
    ctx.fillStyle = "#1d1f23"; ctx.textAlign = "right";
    ctx.fillText(String(names[i]).slice(0, 12), 76, 24 + i * size + size / 2 + 4);
    ctx.textAlign = "center";
  }
  ctx.fillStyle = "#6b7079";
  ctx.fillText("predicted →", 80 + (n * size) / 2, Math.min(h - 4, 24 + n * size + 14));
  ctx.textAlign = "left";
}

// grid: {x: [x0, x1], y: [y0, y1], n: cells per side, values: n*n class ids (row-major, y up)},
// points: [[x, y, class], ...] drawn on top.
export function surface(canvas, grid, points, { title, xName, yName } = {}) {
  const { ctx, w, h } = setup(canvas, title);
  const { X, Y } = axes(ctx, w, h, grid.x, grid.y, xName, yName);
  const n = grid.n;
  const cw = (X(grid.x[1]) - X(grid.x[0])) / n, ch = (Y(grid.y[0]) - Y(grid.y[1])) / n;
  ctx.globalAlpha = 0.25;
  for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) {
    ctx.fillStyle = COLORS[grid.values[r * n + c] % COLORS.length];
    ctx.fillRect(X(grid.x[0]) + c * cw, Y(grid.y[0]) - (r + 1) * ch, cw + 0.5, ch + 0.5);
  }
  ctx.globalAlpha = 0.85;
  for (const [x, y, k] of points) { ctx.fillStyle = COLORS[k % COLORS.length]; ctx.beginPath(); ctx.arc(X(x), Y(y), 2.5, 0, 2 * Math.PI); ctx.fill(); }
  ctx.globalAlpha = 1;
}

// series: [{name, points: [[x, y], ...]}, ...]
export function lines(canvas, series, { title, xName, yName } = {}) {
  const { ctx, w, h } = setup(canvas, title);
  const all = series.flatMap((s) => s.points);
  const { X, Y } = axes(ctx, w, h, extent(all.map((p) => p[0])), extent(all.map((p) => p[1])), xName, yName);
  series.forEach((s, i) => {
    ctx.strokeStyle = COLORS[i % COLORS.length]; ctx.lineWidth = 1.6;
    ctx.beginPath();
    s.points.forEach(([x, y], j) => (j ? ctx.lineTo(X(x), Y(y)) : ctx.moveTo(X(x), Y(y))));
    ctx.stroke();
    ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(s.name, w - PAD.r - 150, PAD.t + 12 + i * 14);
  });
  ctx.lineWidth = 1;
}
