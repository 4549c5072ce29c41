"""Benchmark runs: the page in headless Chromium through a suite of jobs, the server's comparison
runs beside them, and a report a person can read (JSON, Markdown, PNG). `python -m bench --help`."""
