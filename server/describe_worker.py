"""`python -m server.describe_worker PATH NAME DELIMITER MEMORY_MB`: an uploaded CSV's summary,
computed in a short-lived process of its own (server/datasets.py starts it).

Parsing builds the whole typed table (py_core.data), a few times the file's size for a file of
distinct strings; in the server's own process that memory would stay (Python keeps freed
arenas) and a file within the upload cap could still take gigabytes. Here it is capped with
RLIMIT_AS at MEMORY_MB and returned to the system when the process ends, so the server's memory
stays bounded whatever the file. Prints one JSON line: {"summary": ...}, {"error": DataError's
dict} or {"memory": MEMORY_MB}; exit status 0 in all three cases.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    path, name, delimiter, memory_mb = argv[0], argv[1], argv[2] or None, int(argv[3])
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        from py_core.data import DataError, parse_csv
        try:
            summary = parse_csv(Path(path).read_bytes(), name=name, delimiter=delimiter).describe()
        except DataError as err:
            out = {"error": err.to_dict()}
        else:
            out = {"summary": summary}
        text = json.dumps(out, ensure_ascii=False, allow_nan=False)
    except MemoryError:
        text = json.dumps({"memory": memory_mb})
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
