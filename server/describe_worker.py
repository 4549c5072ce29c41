"""`python -m server.describe_worker PATH NAME DELIMITER MEMORY_MB`: an uploaded CSV's summary,
computed in a short-lived process of its own (server/datasets.py starts it).

The summary is streamed (py_core.data.summarize_csv): a chunk of rows at a time, each column
keeping running statistics and its distinct values, so its memory is about the largest column's
distinct values, not the file. It runs apart all the same: its memory is capped with RLIMIT_AS
at MEMORY_MB (a file of millions of distinct values still takes hundreds of MB) and returned to
the system when the process ends (Python keeps freed arenas), so the server's own memory stays
where it was whatever the file. Prints one JSON line: {"summary": ..., "peak_mb": this process's
peak resident memory}, {"error": DataError's dict} or {"memory": MEMORY_MB}; exit status 0 in all
three cases.

The summary is bounded per cell (`bounded`): a preview cell or a column's most frequent value
past CELL_CHARS characters is cut there and ends in "…". A field may hold a million characters,
and 20 preview rows of them made an 84 MB summary of a 76 MB file, stored and sent whole.
"""

from __future__ import annotations

import json
import resource
import sys

CELL_CHARS = 256  # as many as a stored run's data set or column name (server/schema.py NAME)


def bounded(summary: dict) -> dict:
    """The summary with its long text cut to CELL_CHARS characters a cell (in place)."""
    def cut(v):
        return v[:CELL_CHARS] + "…" if isinstance(v, str) and len(v) > CELL_CHARS else v

    summary["preview"] = [[cut(v) for v in row] for row in summary["preview"]]
    for column in summary["columns"]:
        stats = column.get("stats") or {}
        if "top" in stats:
            stats["top"] = cut(stats["top"])
    return summary


def main(argv: list[str]) -> int:
    path, name, delimiter, memory_mb = argv[0], argv[1], argv[2] or None, int(argv[3])
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        from py_core.data import DataError, summarize_csv
        try:
            summary = summarize_csv(path, name=name, delimiter=delimiter)
        except DataError as err:
            out = {"error": err.to_dict()}
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
            out = {"summary": bounded(summary), "peak_mb": round(peak, 1)}
        text = json.dumps(out, ensure_ascii=False, allow_nan=False)
    except MemoryError:
        text = json.dumps({"memory": memory_mb})
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
