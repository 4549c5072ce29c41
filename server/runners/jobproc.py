"""A comparison job's own process, started by a Dask worker (server/runners/task.py).

It reads one request a line on stdin ({"runner", "job", "data_dir", "device"}), runs it with
`server.runners.execute` and writes the answer as one JSON line on its original stdout; whatever
the libraries print goes to stderr. It lives on between jobs (imports are paid once) until the
worker kills it for a limit or a cancel, and ends itself within a second when the worker dies.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the worker died (SIGKILL, out of memory): no orphan keeps computing


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker owns this process's lifetime
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    threading.Thread(target=_watch, args=(os.getppid(),), daemon=True).start()
    from server.runners import execute
    device_cache = {}
    for line in sys.stdin:
        request = json.loads(line)
        device = request["device"]
        if device == "auto":  # an external worker: its own GPU, or its CPU
            if "auto" not in device_cache:
                from server.settings import resolve_device
                device_cache["auto"] = resolve_device("auto")
            device = device_cache["auto"]
        out = execute(request["runner"], request["job"], request["data_dir"], device)
        answers.write(json.dumps(out, allow_nan=False, default=str) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
