// Gradient boosting's form: which of its parameters it shows (labels, help and ranges are the
// table's: py_core/boosting/params.py through GET /api/kinds), the presets, and the losses each
// task takes.

// In the order a person tunes them; the table's tol and categorical_features keep their defaults.
export const NAMES = ["loss", "learning_rate", "max_iter", "max_leaf_nodes", "max_depth", "min_samples_leaf",
  "l2_regularization", "max_features", "max_bins", "early_stopping", "validation_fraction", "n_iter_no_change",
  "random_state"];

// Where the form starts when it is not the table's default: a fixed seed (a run is repeatable
// and comparable with the server's), where scikit-learn draws a fresh one.
export const START = { random_state: 0 };

// Sized for a software adapter or the CPU path: a model that trains in seconds there.
export const SMALL = { max_iter: 20 };

// What every preset sets as scikit-learn does, so that a preset is the whole form (the seed
// aside): a loss, bins or validation fraction typed before stayed under "scikit-learn defaults".
const DEFAULTS = { loss: null, max_depth: null, min_samples_leaf: 20, l2_regularization: 0, max_features: 1,
                   max_bins: 255, validation_fraction: 0.1, n_iter_no_change: 10 };

// Presets are data; scikit-learn's defaults first (the main road).
export const PRESETS = {
  sklearn: { label: "scikit-learn defaults (100 iterations, rate 0.1)",
             params: { ...DEFAULTS, learning_rate: 0.1, max_iter: 100, max_leaf_nodes: 31, early_stopping: "auto" } },
  quick: { label: "Quick look (20 iterations, rate 0.3, 15 leaves)",
           params: { ...DEFAULTS, learning_rate: 0.3, max_iter: 20, max_leaf_nodes: 15, early_stopping: "auto" } },
  slow: { label: "Slow, early stopping (500 iterations, rate 0.05)",
          params: { ...DEFAULTS, learning_rate: 0.05, max_iter: 500, max_leaf_nodes: 31, early_stopping: true } },
};

// The losses a task takes (scikit-learn's estimators': the regressor's, the classifier's).
export const LOSSES = { regression: ["squared_error", "absolute_error"], classification: ["log_loss"] };
