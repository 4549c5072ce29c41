"""A job kind kept in its own package, to show what adding one takes (issue 32's "Done when"):
its job and Kind (job.py), its kernel family (column_sum/: WGSL, description, reference), its
panel (panel.js), its comparison runner (runner.py), and one registry line
(`register("column_mean", "tests.kind_demo.job:KIND")`, or PLAYGROUND_KINDS for every process
of a server). Nothing outside this package is edited for it: the server hands the package to the
tab's worker and the panel to the page (server/kinds.py), which builds its tabs from the registry.
tests/test_kinds.py runs it through POST /api/runs, the caps, a comparison, GET /api/kinds and its
kernel on lavapipe; e2e/test_kind_demo.py opens its panel in Chromium and runs it on WebGPU.

The kind: the trimmed mean of a data set's numeric column (scipy.stats.trim_mean's meaning),
computed by py_core in the tab (the kept values summed on the GPU) and by SciPy on the server.
"""
