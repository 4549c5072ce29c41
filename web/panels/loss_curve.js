// A boosted model's loss by iteration (py_core/jobs/boosting_job.py's plots.loss_curve): the
// training and validation losses from before the first tree (iteration 0) to the last kept, the
// best iteration marked, and early stopping said in words. Drawn live as iterations finish (in
// the Gradient boosting tab) and from a stored run (its own page).
import { lineChart } from "../charts.js";
import { fmtNumber } from "../ui.js";

// The loss in words (curve.loss, scikit-learn's name; a run stored before it was named has none).
// scikit-learn's squared_error loss is half the squared error: a training loss of 3 is an mse of 6.
const LOSS_WORDS = { squared_error: "half squared error", absolute_error: "absolute error", log_loss: "log loss" };
const lossName = (curve) => (curve.loss === "squared_error" ? "half squared error (mse / 2)"
  : LOSS_WORDS[curve.loss] || "loss");

// curve: {loss?, train: [...], validation: [...] | null, best_iteration?, early_stopped?}; `final`
// marks the best iteration (a live curve has none yet).
function series(curve) {
  const at = (values) => values.map((v, i) => [i, v]);
  return [{ name: "training loss", points: at(curve.train) },
    ...(curve.validation ? [{ name: "validation loss", points: at(curve.validation) }] : [])];
}

export function lossChart(container, curve, { final = true } = {}) {
  const marks = final && Number.isInteger(curve.best_iteration)
    ? [{ x: curve.best_iteration, label: `best: iteration ${curve.best_iteration}` }] : [];
  const title = `Loss by iteration${curve.loss ? `: ${lossName(curve)}` : ""}`;
  const handle = lineChart(container, series(curve), { title, xName: "iteration", yName: lossName(curve),
                                                       integerX: true, marks });
  handle.show = (next) => handle.update(series(next));   // a live curve, longer
  return handle;
}

// The curve so far, from the live messages' points ([[iteration, train, validation or null]]), of
// the `loss` named.
export function liveCurve(points, loss) {
  const train = points.map((p) => p[1]);
  return { loss, train, validation: points.some((p) => p[2] !== null && p[2] !== undefined) ? points.map((p) => p[2]) : null };
}

// Early stopping in words, from the curve and the run's parameters (max_iter, n_iter_no_change):
// "Stopped at iteration 34 of 100: the validation loss did not improve for 10 iterations (best:
// iteration 24, log loss 0.412)." or "All 100 iterations ran: ...".
export function stoppingText(curve, params = {}) {
  const done = curve.train.length - 1;
  const watched = curve.validation ? "validation" : "training";
  const best = curve.best_iteration;
  const bestText = Number.isInteger(best)
    ? ` (best: iteration ${best}, ${curve.loss ? `${LOSS_WORDS[curve.loss] || curve.loss} ` : ""}` +
      `${fmtNumber((curve.validation || curve.train)[best], 4)})` : "";
  if (curve.early_stopped) {
    return `Stopped at iteration ${done} of ${params.max_iter ?? "?"}: the ${watched} loss did not improve for ` +
      `${params.n_iter_no_change ?? 10} iterations${bestText}.`;
  }
  return `All ${done} iterations ran${curve.validation ? `; early stopping watched the validation loss` : ", no early stopping"}${bestText}.`;
}
