"""AsyncFunctionRunner: the event loop an async wait operator runs its requests on.

One asyncio event loop on one daemon thread per operator (so one per task in the usual
chain), not a thread per request: each request is a task on that loop awaiting the
user's ``async_invoke`` coroutine, its timeout a timer handle of the same loop, and a
retry's back-off a ``call_later``.

Threading contract. The task thread calls ``start``, ``retry_later``, ``take``,
``wait`` and ``close``; the first two only queue work onto the loop
(``call_soon_threadsafe``). The loop thread runs the coroutines, arms and cancels
timers, and writes only the loop fields of a ``RecordEntry``. Outcomes go the other way
through an inbox (a deque) as ``Completion`` tuples: the loop appends, sets ``ready``
(for a task thread waiting in ``wait``) and, once per batch of outcomes, calls
``notify`` (the operator hands a drain action to the task's mailbox). ``take`` clears
both signals before it empties the inbox, so an outcome appended meanwhile is either
taken now or signalled again: none is left unnoticed. Nothing here touches operator
state or emits.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from weir.taskmanager.operators.async_queue import RecordEntry

logger = logging.getLogger(__name__)

TIMED_OUT = -1
"""The ``attempt`` of a completion that says the request's timeout fired."""

Completion = tuple[RecordEntry, int, Any, BaseException | None]
"""``(entry, attempt, result, error)``: attempt ``attempt`` returned ``result`` or raised
``error``; with ``attempt == TIMED_OUT``, the entry's timeout fired (its attempt, or its
back-off, was cancelled)."""

# close() waits this long for the loop to cancel its requests and stop; a coroutine that
# blocks the loop (sync I/O in async_invoke) is left to its daemon thread after it.
_CLOSE_WAIT_S = 2.0
# Cancelled requests get this long to run their cleanup (finally blocks, async with).
_CANCEL_GRACE_S = 1.0


class AsyncFunctionRunner:
    """Runs ``invoke(value)`` for the entries it is given on its own event loop, timing
    each request out ``timeout_s`` after its first attempt started (never when
    ``timeout_s <= 0``). Its thread starts with it and ends with ``close``. See the
    module docstring for who calls what."""

    def __init__(
        self,
        invoke: Callable[[Any], Coroutine[Any, Any, Any]],
        timeout_s: float,
        notify: Callable[[], None],
        name: str,
    ) -> None:
        self._invoke = invoke
        self._timeout_s = timeout_s
        self._notify = notify
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=f"{name} (async I/O)", daemon=True)
        self._inbox: collections.deque[Completion] = collections.deque()
        self._ready = threading.Event()
        self._notified = False
        self._closed = False
        self._thread.start()

    # --- the task thread --------------------------------------------------------------------

    def start(self, entries: list[RecordEntry]) -> None:
        """Begin the first attempt of each entry (its ``attempts`` is 1)."""
        self._loop.call_soon_threadsafe(self._start_all, entries)

    def retry_later(self, entry: RecordEntry, attempt: int, delay_s: float) -> None:
        """Begin attempt ``attempt`` of ``entry`` after ``delay_s``; its timeout still
        counts from its first attempt."""
        self._loop.call_soon_threadsafe(self._retry_later, entry, attempt, delay_s)

    def wait(self, timeout_s: float) -> bool:
        """Block until an outcome arrived since the last ``take``, or ``timeout_s``."""
        return self._ready.wait(timeout_s)

    def take(self) -> list[Completion]:
        """The outcomes that arrived, in arrival order."""
        self._ready.clear()
        self._notified = False
        inbox = self._inbox
        taken = []
        while inbox:
            taken.append(inbox.popleft())
        return taken

    def close(self) -> None:
        """Cancel every request and stop the loop (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if not self._thread.is_alive():
            return
        try:
            self._loop.call_soon_threadsafe(self._loop.stop)
        except RuntimeError:  # the loop closed meanwhile
            return
        self._thread.join(_CLOSE_WAIT_S)
        if self._thread.is_alive():
            logger.warning(
                "%s: the event loop did not stop within %.0f s; an async_invoke blocks it "
                "(it must await its I/O, not block)",
                self._thread.name,
                _CLOSE_WAIT_S,
            )

    # --- the event loop thread ----------------------------------------------------------------

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=_CANCEL_GRACE_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def _start_all(self, entries: list[RecordEntry]) -> None:
        loop = self._loop
        timeout_s = self._timeout_s
        for entry in entries:
            if timeout_s > 0:
                deadline = entry.deadline = loop.time() + timeout_s
                entry.timeout_handle = loop.call_at(deadline, self._timed_out, entry)
            entry.request = loop.create_task(self._attempt(entry, 1))

    def _start_attempt(self, entry: RecordEntry, attempt: int) -> None:
        entry.retry_handle = None
        entry.request = self._loop.create_task(self._attempt(entry, attempt))

    def _retry_later(self, entry: RecordEntry, attempt: int, delay_s: float) -> None:
        loop = self._loop
        if entry.deadline is not None:
            # Re-armed at the first attempt's deadline: it covers the back-off too.
            entry.timeout_handle = loop.call_at(entry.deadline, self._timed_out, entry)
        entry.retry_handle = loop.call_later(delay_s, self._start_attempt, entry, attempt)

    async def _attempt(self, entry: RecordEntry, attempt: int) -> None:
        try:
            result = await self._invoke(entry.value)
        except Exception as error:  # the operator decides: retry, or fail the job
            self._finished(entry, attempt, None, error)
        else:
            self._finished(entry, attempt, result, None)

    def _finished(
        self, entry: RecordEntry, attempt: int, result: Any, error: BaseException | None
    ) -> None:
        entry.request = None
        handle = entry.timeout_handle
        if handle is not None:
            handle.cancel()
            entry.timeout_handle = None
        self._post((entry, attempt, result, error))

    def _timed_out(self, entry: RecordEntry) -> None:
        entry.timeout_handle = None
        if entry.request is not None:
            entry.request.cancel()
            entry.request = None
        if entry.retry_handle is not None:
            entry.retry_handle.cancel()
            entry.retry_handle = None
        self._post((entry, TIMED_OUT, None, None))

    def _post(self, completion: Completion) -> None:
        self._inbox.append(completion)
        if not self._ready.is_set():
            self._ready.set()
        if not self._notified:
            self._notified = True
            try:
                self._notify()
            except Exception:  # the task has ended; its outcomes are not wanted any more
                logger.debug("%s: outcome dropped: the task has ended", self._thread.name)
