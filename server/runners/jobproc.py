"""A comparison job's own process, started by a Dask worker (server/runners/task.py).

It reads one request a line on stdin, runs it and writes the answer as one JSON line on its
original stdout; whatever the libraries print goes to stderr. A request is a comparison
({"runner", "job", "data_dir", "device"}: `server.runners.execute`) or an export ({"task":
"onnx", ...}: `server.exports.build_onnx`); neither raises, each answers {"status", ...}. It
lives on between jobs (imports are paid once) until the worker kills it for a limit or a cancel,
or its stdin closes, and ends itself within a second when the worker dies.
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
    device_cache = {}
    for line in sys.stdin:
        out = _answer(json.loads(line), device_cache)
        answers.write(json.dumps(out, allow_nan=False, default=str) + "\n")
        answers.flush()


def _answer(request: dict, device_cache: dict) -> dict:
    if request.get("task") == "onnx":
        from server.exports import build_onnx
        return build_onnx(request)
    from server.runners import execute
    device = request["device"]
    if device == "auto":  # an external worker: its own GPU, or its CPU
        if "auto" not in device_cache:
            from server.settings import resolve_device
            device_cache["auto"] = resolve_device("auto")
        device = device_cache["auto"]
    return execute(request["runner"], request["job"], request["data_dir"], device)


if __name__ == "__main__":
    main()
