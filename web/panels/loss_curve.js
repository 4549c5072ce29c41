// A boosted model's loss by iteration (py_core/jobs/boosting_job.py's plots.loss_curve): the
// training and validation losses from before the first tree (iteration 0) to the last kept, the
// best iteration marked, and early stopping said in words. Drawn live as iterations finish (in
// the Gradient boosting tab) and from a stored run (its own page).
import { lineChart } from "../charts.js";
import { fmtNumber } from "../ui.js";

// curve: {train: [...], validation: [...] | null, best_iteration?, early_stopped?}; `final`
// marks the best iteration (a live curve has none yet).
function series(curve) {
  const at = (values) => values.map((v, i) => [i, v]);
  return [{ name: "training loss", points: at(curve.train) },
    ...(curve.validation ? [{ name: "validation loss", points: at(curve.validation) }] : [])];
}

export function lossChart(container, curve, { final = true } = {}) {
  const marks = final && Number.isInteger(curve.best_iteration)
    ? [{ x: curve.best_iteration, label: `best: iteration ${curve.best_iteration}` }] : [];
  const handle = lineChart(container, series(curve), { title: "Loss by iteration", xName: "iteration", yName: "loss",
                                                       integerX: true, marks });
  handle.show = (next) => handle.update(series(next));   // a live curve, longer
  return handle;
}

// The curve so far, from the live messages' points ([[iteration, train, validation or null]]).
export function liveCurve(points) {
  const train = points.map((p) => p[1]);
  return { train, validation: points.some((p) => p[2] !== null && p[2] !== undefined) ? points.map((p) => p[2]) : null };
}

// Early stopping in words, from the curve and the run's parameters (max_iter, n_iter_no_change):
// "Stopped at iteration 34 of 100: the validation loss did not improve for 10 iterations (best:
// iteration 24, 0.412)." or "All 100 iterations ran: ...".
export function stoppingText(curve, params = {}) {
  const done = curve.train.length - 1;
  const watched = curve.validation ? "validation" : "training";
  const best = curve.best_iteration;
  const bestText = Number.isInteger(best)
    ? ` (best: iteration ${best}, ${fmtNumber((curve.validation || curve.train)[best], 4)})` : "";
  if (curve.early_stopped) {
    return `Stopped at iteration ${done} of ${params.max_iter ?? "?"}: the ${watched} loss did not improve for ` +
      `${params.n_iter_no_change ?? 10} iterations${bestText}.`;
  }
  return `All ${done} iterations ran${curve.validation ? `; early stopping watched the validation loss` : ", no early stopping"}${bestText}.`;
}
