"""Long waits the server can bound: a queue that refuses at once when full, and work that stops
when its client leaves.

    queue = BoundedQueue(running=2, waiting=8, what="ONNX exports", one="this run's export")
    async with queue.slot(key):            # 503 at once past 2 at work + 8 waiting, or
        ...                                # 3 for one key; one holder per key at a time

    await unless_disconnected(request, work)   # work(cancel: threading.Event), a coroutine

A request that waits on slow work holds its connection all the while: without a bound, 40 of them
behind one slow export held 40 connections and every later export for as long as the first took.
A client refused with 503 (and Retry-After) can come back; one that disconnects cancels its work,
and `cancel` tells a thread doing it (a job's process is then killed, server/runners/task.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.requests import ClientDisconnect, Request

from server.errors import ClientError

RETRY_AFTER_S = 10
# Holders and waiters of one key: 40 asking for one run's export would fill the line, and every
# other run's export be refused behind them; three (two browser tabs and a script) wait their turn.
PER_KEY = 3


class BoundedQueue:
    def __init__(self, running: int, waiting: int, what: str, one: str):
        self.running, self.waiting, self.what, self.one = running, waiting, what, one
        self._workers = asyncio.Semaphore(running)
        self._keys: dict[str, list] = {}  # key -> [its lock, holders and waiters]
        self.inside = 0  # at work or waiting

    @asynccontextmanager
    async def slot(self, key: str):
        entry = self._keys.get(key)
        if self.inside >= self.running + self.waiting:
            raise ClientError(503, f"too many {self.what} at work or waiting ({self.running} at "
                              f"a time, {self.waiting} waiting); try again in a moment",
                              headers={"Retry-After": str(RETRY_AFTER_S)})
        if entry is not None and entry[1] >= PER_KEY:
            raise ClientError(503, f"{self.one} is at work already and {entry[1] - 1} more asks "
                              "wait for it; try again in a moment",
                              headers={"Retry-After": str(RETRY_AFTER_S)})
        self.inside += 1
        entry = self._keys.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0], self._workers:
                yield
        finally:
            self.inside -= 1
            entry[1] -= 1
            if not entry[1]:
                del self._keys[key]


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (its request body, if any, is read and dropped)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Callable[[threading.Event], Awaitable]):
    """`await work(cancel)`; when the client disconnects first, `cancel` is set, the work is
    cancelled and waited for, and ClientDisconnect raised (nobody reads the answer)."""
    cancel = threading.Event()
    task = asyncio.ensure_future(work(cancel))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:  # also when this request is cancelled itself (the server shutting down)
        gone.cancel()
        if not task.done():
            cancel.set()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise ClientDisconnect()
    return task.result()
