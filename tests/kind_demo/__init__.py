"""A job kind kept in its own package, to show what adding one takes (issue 32's "Done when"):
its job and Kind (job.py), its comparison runner (runner.py), and one registry line
(`register("column_mean", "tests.kind_demo.job:KIND")`, or PLAYGROUND_KINDS for every process
of a server). Nothing outside this package is edited for it; tests/test_kinds.py runs it through
POST /api/runs, the caps, a comparison and GET /api/kinds.

The kind: the trimmed mean of a data set's numeric column (scipy.stats.trim_mean's meaning),
computed by py_core in the tab and by SciPy on the server.
"""
