"""``CompletableFuture``: what ``JobClient`` methods return (PyFlink's CompletableFuture;
``weir.common.CompletableFuture`` is this class)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

__all__ = ["CompletableFuture"]

_UNSET = object()


class CompletableFuture:
    """A result that may not be there yet: ``result()`` waits for it.

    Either complete from the start (``CompletableFuture.completed(value)``) or computed
    by a blocking call the first time ``result()`` is asked, with ``is_done()`` telling
    ``done()`` whether that call would return at once::

        >>> client.get_job_execution_result().result()   # waits for the job to end
    """

    def __init__(
        self, compute: Callable[[], Any], is_done: Callable[[], bool] = lambda: False
    ) -> None:
        self._compute = compute
        self._is_done = is_done
        self._lock = threading.Lock()
        self._value: Any = _UNSET
        self._error: BaseException | None = None
        self._cancelled = False

    @staticmethod
    def completed(value: Any) -> CompletableFuture:
        future = CompletableFuture(lambda: value)
        future._value = value
        return future

    def _has_outcome(self) -> bool:
        return self._value is not _UNSET or self._error is not None

    def cancel(self) -> bool:
        """Give up waiting (the job itself goes on: ``JobClient.cancel()`` stops it).
        True if the future is now cancelled."""
        with self._lock:
            if not self._has_outcome():
                self._cancelled = True
            return self._cancelled

    def cancelled(self) -> bool:
        return self._cancelled

    def done(self) -> bool:
        """True once the result is there, failed or cancelled; never blocks."""
        return self._cancelled or self._has_outcome() or self._is_done()

    def result(self) -> Any:
        """The value, waiting for it if need be; raises what computing it raised."""
        with self._lock:
            if self._cancelled:
                msg = "the future was cancelled before it completed"
                raise CancelledError(msg)
            if not self._has_outcome():
                try:
                    self._value = self._compute()
                except Exception as exc:  # kept for exception() and every later result()
                    self._error = exc
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self) -> BaseException | None:
        """The error the future completed with; None if it completed normally or is not
        done yet (this never waits)."""
        if not self.done() or self._cancelled:
            return None
        try:
            self.result()
        except Exception as exc:
            return exc
        return None

    def __str__(self) -> str:
        state = (
            "cancelled" if self._cancelled else "completed" if self._has_outcome() else "incomplete"
        )
        return f"CompletableFuture[{state}]"
