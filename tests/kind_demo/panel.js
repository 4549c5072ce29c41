// The column_mean kind's panel (tests/kind_demo): a data set, a numeric column and the trim; Run
// computes the trimmed mean in this tab (the sum on the GPU: the kind's column_sum family) and
// stores the run, which the server compares with SciPy's. The page loads this module because the
// kind's Kind names it (panel="panel.js": served at /kinds/column_mean/panel.js), and calls mount().
// The page's own modules are imported by their absolute URLs, so this panel shares their instances.
import { param } from "/web/kinds.js";
import { el, fmtNumber, fmtSeconds } from "/web/ui.js";

export function mount(root, playground) {
  const trim = param("column_mean", "trim");
  const dataset = el("input", { id: "cm-dataset", value: "iris" });
  const column = el("input", { id: "cm-column", value: "sepal length (cm)" });
  const trimInput = el("input", { id: "cm-trim", type: "number", min: 0, max: 0.49, step: 0.05,
                                  value: String(trim.default ?? 0) });
  const run = el("button", { class: "primary", id: "cm-run", disabled: true }, "Run");
  const out = el("p", { class: "status", id: "cm-result", role: "status" });
  const field = (label, input, help = "") => el("label", { title: help }, `${label} `, input);
  root.append(el("div", { class: "card" }, el("h2", {}, "Trimmed mean"),
    el("div", { class: "row" }, field("Data set", dataset), field("Column", column),
      field(trim.label, trimInput, trim.help), run), out));

  playground.ready.then(() => { run.disabled = false; }, () => {});
  run.addEventListener("click", async () => {
    run.disabled = true;
    out.className = "status";
    out.textContent = "Running…";
    try {
      const stored = await playground.run({ kind: "column_mean", dataset: dataset.value, column: column.value,
                                            params: { trim: Number(trimInput.value) } });
      out.textContent = `Mean ${fmtNumber(stored.metrics.mean, 7)} of ${stored.metrics.n} values ` +
        `(${fmtSeconds(stored.timings.mean)} on ${stored.backend}).`;
      out.dataset.mean = String(stored.metrics.mean);
    } catch (e) {
      out.className = "status error";
      out.textContent = `Failed: ${e.message}`;
    } finally {
      run.disabled = false;
    }
  });
}
